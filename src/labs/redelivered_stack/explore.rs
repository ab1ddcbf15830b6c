//! Lab f3's explore plan on the stack: one message is published, lab 13's receiver runs in the
//! background and consumer A takes the message, the crash armed in the consumer or the
//! receiver. A crashed consumer's connection dies with it, and the broker requeues what it had
//! not acked: the redelivery. Recovery: while no ack is recorded, a fresh receiver and a
//! fresh consumer, which takes the message again (flagged `redelivered`) and calls again.
//! Keyed, the receiver's ledger absorbs that call; unkeyed, a call that had run before the
//! crash runs again.

use std::path::Path;

use anyhow::Result;

use super::readback::{self, State};
use super::roles::{self, Consume};
use super::schema::CONSUMER;
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Counts, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::{StepRecord, Steps};
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;
use crate::fail;
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::store;
use crate::store::pg::{self, Session};

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

/// A receiver stops by itself after this long, whatever happens to explore.
const RECEIVER_LIFETIME_MS: u64 = 120_000;

/// Where unkeyed runs the call twice: the receiver committed the effect and the consumer did
/// not ack (it crashed after the reply, or the receiver crashed before replying): the broker
/// requeues the message, the next consumer calls again. Everywhere else, and everywhere
/// keyed, one effect.
pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "unkeyed",
    at: &[
        At::every("stack-redeliver-consumer.after-call"),
        At::every("receiver.after-effect-commit"),
    ],
    invariants: &[Invariant::NoDuplicateEffect],
    anomalies: &[Anomaly::Duplicate],
    says: "duplicate effect (the call ran, no ack: the broker redelivers and the next consumer calls again)",
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
        at: &[
            At::every("stack-redeliver-consumer.after-call"),
            At::every("receiver.after-effect-commit"),
        ],
        invariants: &[Invariant::NoDuplicateEffect],
        anomalies: &[Anomaly::Duplicate],
        says: "duplicate effect (the call ran, no ack: the broker redelivers and the next consumer calls again)",
        hidden: "",
    },
    Prediction {
        variant: "unkeyed/rabbitmq/classic",
        at: &[
            At::every("stack-redeliver-consumer.after-call"),
            At::every("receiver.after-effect-commit"),
            At::every("stack-redeliver-consumer.after-ack"),
        ],
        invariants: &[Invariant::NoDuplicateEffect],
        anomalies: &[Anomaly::Duplicate],
        says: "duplicate effect (the call ran and no ack survived the broker: it redelivers and the next consumer calls again)",
        hidden: "",
    },
    Prediction {
        variant: "unkeyed/rabbitmq/quorum",
        at: &[
            At::every("stack-redeliver-consumer.after-call"),
            At::every("receiver.after-effect-commit"),
        ],
        invariants: &[Invariant::NoDuplicateEffect],
        anomalies: &[Anomaly::Duplicate],
        says: "duplicate effect (the call ran, no ack: the broker redelivers and the next consumer calls again)",
        hidden: "",
    },
];

static WORDS: Words = Words {
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
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the variant predicts a break here\n\
         no-lost: the published message has an effect at the receiver; no-dup: at most one effect per message;\n\
         no-stuck: the message is acked after recovery and none is ready; ack=>dur: every commit a process reported is in the stores;\n\
         deliveries: takes recorded (2: the broker redelivered once, flagged redelivered); bad anomalies: lost-write, unseen, duplicate, G1a; a replayed call (duplicate-delivery) is allowed",
    pass: "PASS: keyed holds everywhere (one effect per message); unkeyed duplicates exactly at the predicted points",
    svg_pass: "PASS: keyed holds everywhere; unkeyed duplicates exactly where predicted",
};

fn consume(
    consumer: &'static str,
    variant: &'static str,
    wait_ms: u64,
    steps: &Steps<'_>,
) -> Consume {
    // The call's bound stays inside the step timeout, so a hung receiver gives a lost
    // reply, not a killed consumer; so does the wait for a redelivery.
    let half_ms = (steps.timeout().as_millis() / 2).clamp(1, 5_000) as u64;
    Consume {
        consumer,
        variant,
        heartbeat_s: super::lab::HEARTBEAT_S,
        wait_ms: wait_ms.min(half_ms),
        timeout_ms: half_ms,
        pause_at: None,
    }
}

/// A fresh receiver, one consumer, the receiver stopped.
fn deliver(
    variant: &'static str,
    consumer: Consume,
    in_scenario: bool,
    steps: &mut Steps<'_>,
) -> Result<()> {
    let receiver = steps.start(
        "",
        roles::receiver(variant, Some(RECEIVER_LIFETIME_MS)).into_vec(),
    )?;
    if receiver.is_some() {
        steps.run("", roles::consumer(&consumer).into_vec())?;
        // A receiver that crashed under it leaves the consumer without a reply.
        if in_scenario && steps.crashed_role() == Some(roles::RECEIVER) {
            steps.expect_last(fail::EXIT_UNAVAILABLE);
        }
    }
    steps.stop(receiver)
}

/// The stores after a case: the readback, the consumers' rows and each effect's key.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub state: State,
    /// (message, consumer) of each delivery and each reply recorded, and the acked replies.
    pub deliveries: Vec<(String, String)>,
    pub replies: Vec<(String, String)>,
    pub effects: Vec<(i64, Option<String>)>,
}

impl Observed {
    fn read(work: &Path) -> Result<Observed> {
        let receiver = work.join(crate::labs::http_dispatch::schema::RECEIVER_DB);
        let mut o = Observed {
            state: readback::read_in(work, roles::DB, roles::QUEUE, &receiver)?,
            ..Observed::default()
        };
        let mut db = pg::open_in(work, roles::DB, &CONSUMER, Session::ReadOnly, false)?;
        if !db.empty {
            for (table, into) in [
                ("deliveries", &mut o.deliveries),
                ("replies", &mut o.replies),
            ] {
                let sql =
                    format!("SELECT message, consumer FROM {table} ORDER BY message, consumer");
                let rows = db.run(&sql, &[]).map_err(|e| db.explain(e))?.rows;
                into.extend(rows.into_iter().map(|r| {
                    let text = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
                    (text(0), text(1))
                }));
            }
        }
        if let Some(db) = store::open_existing(&receiver, &RECEIVER, false)? {
            o.effects = store::rows(
                &db,
                "SELECT effect_id, key FROM effects ORDER BY effect_id",
                &receiver,
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
        }
        Ok(o)
    }

    /// Effects of the message: its key's, and the unkeyed ones (one message per case).
    fn effects(&self) -> usize {
        let (id, _) = super::lab::MESSAGE;
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref().is_none_or(|k| k == id))
            .count()
    }

    /// Still owed: no consumer recorded an ack that reached the broker, or the message is
    /// ready in the queue again (a broker killed right after an ack may come back without
    /// it: the ack was answered, not yet written).
    fn owed(&self) -> bool {
        self.state.consumer.acked == 0 || self.state.queue.messages > 0
    }
}

impl ExplorePlan for Exploration {
    fn design_word(&self) -> &'static str {
        "variant"
    }

    fn designs(&self) -> &'static [&'static str] {
        roles::VARIANTS
    }

    fn predictions(&self) -> &'static [Prediction] {
        PREDICTIONS
    }

    fn server_predictions(&self) -> &'static [Prediction] {
        SERVER_PREDICTIONS
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::ON_SERVERS.databases
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let (id, body) = super::lab::MESSAGE;
        steps.run("", roles::enqueue(id, body).into_vec())?;
        let first = consume("A", design, 0, steps);
        deliver(design, first, true, steps)
    }

    /// While no ack is recorded: a fresh receiver and a consumer that waits (bounded) for the
    /// broker to requeue the crashed one's delivery, then takes it again.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let o = Observed::read(steps.work())?;
        let owed = o.owed();
        steps.set_memo(o);
        if !owed {
            return Ok(false);
        }
        let name = if round == 1 { "B" } else { "C" };
        let next = consume(name, design, super::lab::WAIT_MS, steps);
        deliver(design, next, false, steps)?;
        Ok(true)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<Observed>() {
            Some(o) => o.clone(),
            None => Observed::read(steps.work())?,
        };
        Ok(judge(&o, steps.records()))
    }
}

/// The invariants on the stores after recovery, the reported commits against the stores, and
/// the history of the message in Jepsen's words.
pub fn judge(o: &Observed, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: &[Anomaly::DuplicateDelivery],
        ..Judgement::default()
    };
    let (id, _) = super::lab::MESSAGE;
    let n = o.effects() as i64;
    let duplicated = (n - 1).max(0) + (o.effects.len() as i64 - n);
    j.no_lost_effect = n > 0;
    if n == 0 {
        j.problems.push(format!(
            "lost effect: message {id} published, no effect at the receiver"
        ));
    }
    j.no_duplicate_effect = duplicated == 0;
    if duplicated > 0 {
        j.problems.push(format!(
            "duplicate effect: message {id} ran {n} times at the receiver"
        ));
    }
    j.nothing_stuck = !o.owed() && o.state.queue.messages == 0;
    if !j.nothing_stuck {
        j.problems
            .push("stuck after recovery: the message is not acked".to_string());
    }
    j.acknowledged_durable = true;
    for (db, what) in steps.iter().flat_map(|s| s.commits()) {
        let words: Vec<&str> = what.split_whitespace().collect();
        let pair = (words.get(3).copied(), words.get(5).copied());
        let has = |rows: &[(String, String)]| {
            rows.iter()
                .any(|(m, c)| (Some(m.as_str()), Some(c.as_str())) == pair)
        };
        let visible = match db {
            "consumer" if what.starts_with("delivery of message ") => has(&o.deliveries),
            "consumer" if what.starts_with("reply of message ") => has(&o.replies),
            "receiver" => words
                .get(1)
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
    let (c, mut counts) = (&o.state.consumer, Counts::default());
    counts.add("messages", o.state.queue.messages);
    counts.add("deliveries", c.deliveries);
    counts.add("redelivered", c.redelivered);
    counts.add("replies", c.replies);
    counts.add("replayed", c.replayed);
    counts.add("effects", o.state.receiver.effects);
    counts.add("acked", c.acked);
    counts.add("duplicated_effects", duplicated);
    j.counts = counts;
    j.history = vec![history(o, steps)];
    j
}

/// The message: `ok` once its enqueue ended 0 (the broker confirmed it), else `info`; its
/// deliveries are the calls the receivers took (applied or replayed), its effects the rows.
fn history(o: &Observed, steps: &[StepRecord]) -> Op {
    let (id, _) = super::lab::MESSAGE;
    let confirmed = steps
        .iter()
        .filter(|s| s.role == roles::ENQUEUE)
        .any(|s| s.events.iter().any(|e| matches!(e, Event::End { code: 0 })));
    let deliveries = steps
        .iter()
        .flat_map(|s| &s.events)
        .filter(|e| match e {
            Event::Applied { item } | Event::Duplicate { item } => item == id || item == "-",
            _ => false,
        })
        .count() as u32;
    Op {
        item: id.to_string(),
        outcome: if confirmed {
            Outcome::Ok
        } else {
            Outcome::Info
        },
        deliveries,
        effects: o.effects() as u32,
    }
}
