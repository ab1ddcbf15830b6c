//! Lab f3's explore plan, one over both stacks: one message is enqueued, lab 13's receiver
//! runs in the background and consumer A takes the message, the crash armed in the consumer
//! or the receiver. Recovery: while the message is owed, a fresh receiver and a fresh
//! consumer, which takes the message again (the redelivery: on SQLite once the crashed
//! consumer's lease expires; on the servers once the broker requeued what the dead
//! connection held, flagged `redelivered`) and calls again. Keyed, the receiver's ledger
//! absorbs that call; unkeyed, a call that had run before the crash runs again.

mod observed;

use std::collections::BTreeSet;

use anyhow::Result;

use super::roles::{self, Consumer, Enqueue, Variant, VARIANTS};
use super::stack::Stack;
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Counts, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::{StepRecord, Steps};
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;
use crate::fail;
use crate::role::Role;
use observed::{checked, key, Observed};

pub struct Exploration {
    stack: Stack,
}

pub static ON_SQLITE: Exploration = Exploration {
    stack: Stack::Sqlite,
};
pub static ON_SERVERS: Exploration = Exploration {
    stack: Stack::Servers,
};

/// The crashed consumer's lease on SQLite, which recovery waits out: short, so a case is
/// quick.
pub const LEASE_MS: u64 = 100;
/// A receiver stops by itself after this long, whatever happens to explore.
const RECEIVER_LIFETIME_MS: u64 = 120_000;

const DUPLICATE: &str =
    "duplicate effect (the call ran, no ack: the redelivered message calls again)";

/// Where unkeyed runs the call twice, on both stacks: the receiver committed the effect and
/// the consumer did not ack (it crashed after the reply, or the receiver crashed before
/// replying): the message comes again, the next consumer calls again. Everywhere else, and
/// everywhere keyed, one effect.
pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "unkeyed",
    at: &[
        At::every("redeliver-consumer.after-call"),
        At::every("receiver.after-effect-commit"),
    ],
    invariants: &[Invariant::NoDuplicateEffect],
    anomalies: &[Anomaly::Duplicate],
    says: DUPLICATE,
    hidden: "",
}];

/// Under server kills (`<variant>/<server>[/<queue type>]`; a variant without an entry for
/// a server holds). PostgreSQL holds the consumer's records only, so its kill changes nothing
/// of the story: unkeyed duplicates where it does under process crashes. A RabbitMQ kill
/// right after A's ack undoes the ack on a classic queue (answered, and proved by a round
/// trip on the channel, yet not written: measured): the message comes back flagged
/// redelivered and the next consumer calls again, so unkeyed also duplicates at `after-ack`
/// there. A quorum queue's ack is in its Raft log before it is answered.
pub static SERVER_PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "unkeyed/postgres",
        ..PREDICTIONS[0]
    },
    Prediction {
        variant: "unkeyed/rabbitmq/classic",
        at: &[
            At::every("redeliver-consumer.after-call"),
            At::every("receiver.after-effect-commit"),
            At::every("redeliver-consumer.after-ack"),
        ],
        says: "duplicate effect (the call ran and no ack survived the broker: it redelivers and the next consumer calls again)",
        ..PREDICTIONS[0]
    },
    Prediction {
        variant: "unkeyed/rabbitmq/quorum",
        ..PREDICTIONS[0]
    },
];

const PASS: &str =
    "PASS: keyed holds everywhere (one effect per message); unkeyed duplicates exactly at the predicted points";
const SVG_PASS: &str = "PASS: keyed holds everywhere; unkeyed duplicates exactly where predicted";

/// The table's legend, in each stack's words: how the message came, what else stuck means,
/// where commits are, what a delivery is.
macro_rules! legend {
    ($came:literal, $stuck:literal, $stores:literal, $deliveries:literal) => {
        concat!(
            "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the variant predicts a break here\n",
            "no-lost: the ", $came, " message has an effect at the receiver; no-dup: at most one effect per message;\n",
            "no-stuck: the message is acked after recovery", $stuck, "; ack=>dur: every commit a process reported is in the ", $stores, ";\n",
            "deliveries: ", $deliveries, "; bad anomalies: lost-write, unseen, duplicate, G1a; a replayed call (duplicate-delivery) is allowed"
        )
    };
}

static ON_FILES_WORDS: Words = Words {
    columns: &[
        ("messages", "messages"),
        ("deliveries", "deliveries"),
        ("replies", "replies"),
        ("replayed", "replayed"),
        ("effects", "effects"),
        ("acked", "acked"),
        ("duplicated_effects", "duplicated"),
    ],
    legend: legend!(
        "queued",
        "",
        "files",
        "leases handed out (2: redelivered once)"
    ),
    pass: PASS,
    svg_pass: SVG_PASS,
};

static ON_SERVERS_WORDS: Words = Words {
    columns: &[
        ("messages", "ready"),
        ("deliveries", "deliveries"),
        ("redelivered", "redelivered"),
        ("replies", "replies"),
        ("replayed", "replayed"),
        ("effects", "effects"),
        ("acked", "acked"),
        ("duplicated_effects", "duplicated"),
    ],
    legend: legend!(
        "published",
        " and none is ready",
        "stores",
        "takes recorded (2: the broker redelivered once, flagged redelivered)"
    ),
    pass: PASS,
    svg_pass: SVG_PASS,
};

impl Exploration {
    /// Consumer `name`, waiting up to `wait_ms`. The call's bound stays inside the step
    /// timeout, so a hung receiver gives a lost reply, not a killed consumer; so does a wait
    /// for the broker's redelivery.
    fn consumer(&self, name: &str, design: &str, wait_ms: u64, steps: &Steps<'_>) -> Consumer {
        let half_ms = (steps.timeout().as_millis() / 2).clamp(1, 5_000) as u64;
        let mut c = Consumer::of(self.stack, name, Variant::named(design), wait_ms, None);
        c.timeout_ms = half_ms;
        match self.stack {
            Stack::Sqlite => c.lease_ms = Some(LEASE_MS),
            Stack::Servers => c.wait_ms = wait_ms.min(half_ms),
        }
        c
    }

    /// A fresh receiver, one consumer, the receiver stopped.
    fn deliver(
        &self,
        design: &str,
        consumer: Consumer,
        in_scenario: bool,
        steps: &mut Steps<'_>,
    ) -> Result<()> {
        let receiver = roles::receiver(Variant::named(design), Some(RECEIVER_LIFETIME_MS));
        let receiver = steps.start("", receiver.argv().into_vec())?;
        if receiver.is_some() {
            steps.run("", consumer.argv().into_vec())?;
            // A receiver that crashed under it leaves the consumer without a reply.
            if in_scenario && steps.crashed_role() == Some(roles::RECEIVER) {
                steps.expect_last(fail::EXIT_UNAVAILABLE);
            }
        }
        steps.stop(receiver)
    }
}

impl ExplorePlan for Exploration {
    fn designs(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn predictions(&self) -> &'static [Prediction] {
        PREDICTIONS
    }

    fn server_predictions(&self) -> &'static [Prediction] {
        match self.stack {
            Stack::Sqlite => &[],
            Stack::Servers => SERVER_PREDICTIONS,
        }
    }

    fn words(&self) -> &'static Words {
        match self.stack {
            Stack::Sqlite => &ON_FILES_WORDS,
            Stack::Servers => &ON_SERVERS_WORDS,
        }
    }

    fn databases(&self) -> &'static [&'static str] {
        self.stack.databases()
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let (id, body) = super::history::MESSAGE;
        steps.run("", Enqueue::of(self.stack, id, body).argv().into_vec())?;
        let first = self.consumer("A", design, 0, steps);
        self.deliver(design, first, true, steps)
    }

    /// While the message is owed: a fresh receiver and a consumer that waits (bounded) for
    /// the message to come again, then takes it.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let o = Observed::read(self.stack, steps.work())?;
        let owed = o.owed;
        steps.set_memo(o);
        if !owed {
            return Ok(false);
        }
        let name = if round == 1 { "B" } else { "C" };
        let wait_ms = match self.stack {
            Stack::Sqlite => LEASE_MS * 20,
            Stack::Servers => Stack::Servers.waits()[1],
        };
        let next = self.consumer(name, design, wait_ms, steps);
        self.deliver(design, next, false, steps)?;
        Ok(true)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<Observed>() {
            Some(o) => o.clone(),
            None => Observed::read(self.stack, steps.work())?,
        };
        Ok(judge(self.stack, &o, steps.records()))
    }
}

/// The invariants on the stores after recovery, the reported commits against the stores, and
/// the history of the message in Jepsen's words.
fn judge(stack: Stack, o: &Observed, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: &[Anomaly::DuplicateDelivery],
        ..Judgement::default()
    };
    let (mut lost, mut duplicated) = (0, 0);
    for id in &o.messages {
        let n = o.effects_of(id) as i64;
        if n == 0 {
            lost += 1;
            j.problems.push(format!(
                "lost effect: message {id} enqueued, no effect at the receiver"
            ));
        }
        if n > 1 {
            duplicated += n - 1;
            j.problems.push(format!(
                "duplicate effect: message {id} ran {n} times at the receiver"
            ));
        }
    }
    let ids: BTreeSet<&str> = o.messages.iter().map(String::as_str).collect();
    for (effect, key) in &o.effects {
        if key.as_deref().is_some_and(|k| !ids.contains(k)) {
            duplicated += 1;
            j.problems.push(format!(
                "effect without cause: effect {effect} matches no message"
            ));
        }
    }
    j.no_lost_effect = lost == 0;
    j.no_duplicate_effect = duplicated == 0;
    j.nothing_stuck = !o.owed;
    if !j.nothing_stuck {
        j.problems
            .push("stuck after recovery: the message is not acked".to_string());
    }
    j.acknowledged_durable = true;
    let (own, kinds) = checked(stack);
    for (db, what) in steps.iter().flat_map(|s| s.commits()) {
        let kind = what.split_whitespace().next().unwrap_or("");
        let visible = match db {
            _ if db == own && kinds.contains(&kind) => o.held.contains(&key(what)),
            "receiver" => what
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse::<i64>().ok())
                .is_some_and(|n| o.effects.iter().any(|(e, _)| *e == n)),
            _ => true,
        };
        if !visible {
            j.acknowledged_durable = false;
            j.problems
                .push(format!("reported commit not in the stores: {db} {what}"));
        }
    }
    let mut counts = Counts::default();
    for (name, n) in &o.counts {
        counts.add(name, *n);
    }
    counts.add("duplicated_effects", duplicated);
    j.counts = counts;
    j.history = history(stack, o, steps);
    j
}

/// One operation per message: `ok` once its enqueue was acknowledged (its commit reported on
/// SQLite; the enqueue ended 0, the broker's confirm, on the servers), else `info`; its
/// deliveries are the calls the receivers took (applied or replayed), its effects the rows.
fn history(stack: Stack, o: &Observed, steps: &[StepRecord]) -> Vec<Op> {
    let single = o.messages.len() == 1;
    o.messages
        .iter()
        .map(|id| {
            let acknowledged = match stack {
                Stack::Sqlite => steps
                    .iter()
                    .flat_map(|s| s.commits())
                    .any(|(db, what)| db == "queue" && what == format!("enqueue of message {id}")),
                Stack::Servers => steps
                    .iter()
                    .filter(|s| s.role == Enqueue::NAME)
                    .any(|s| s.events.iter().any(|e| matches!(e, Event::End { code: 0 }))),
            };
            let deliveries = steps
                .iter()
                .flat_map(|s| &s.events)
                .filter(|e| match e {
                    Event::Applied { item } | Event::Duplicate { item } => {
                        item == id || (item == "-" && single)
                    }
                    _ => false,
                })
                .count() as u32;
            Op {
                item: id.clone(),
                outcome: if acknowledged {
                    Outcome::Ok
                } else {
                    Outcome::Info
                },
                deliveries,
                effects: o.effects_of(id) as u32,
            }
        })
        .collect()
}
