//! Lab f3's explore plan: one message is queued, lab 13's receiver runs in the background and
//! one consumer takes the message, the crash armed in the consumer or the receiver. Recovery:
//! while the message is not acked, a fresh receiver and a fresh consumer, which waits out the
//! crashed consumer's lease (the redelivery) and calls again. Keyed, the receiver's ledger
//! absorbs that call; unkeyed, a call that had run before the crash runs again.

use std::collections::BTreeSet;

use anyhow::Result;

use super::roles::{self, Consume};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Counts, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::{StepRecord, Steps};
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;
use crate::fail;
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::store;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

/// The crashed consumer's lease, which recovery waits out: short, so a case is quick.
pub const LEASE_MS: u64 = 100;
/// A receiver stops by itself after this long, whatever happens to explore.
const RECEIVER_LIFETIME_MS: u64 = 120_000;

/// Where unkeyed runs the call twice: the receiver committed the effect and the consumer did
/// not ack (it crashed after the reply, or the receiver crashed before replying): the lease
/// expires, the message is delivered again, the call runs again. Everywhere else, and
/// everywhere keyed, one effect.
pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "unkeyed",
    at: &[
        At::every("redeliver-consumer.after-call"),
        At::every("receiver.after-effect-commit"),
    ],
    invariants: &[Invariant::NoDuplicateEffect],
    anomalies: &[Anomaly::Duplicate],
    says: "duplicate effect (the call ran, no ack: the redelivered message calls again)",
    hidden: "",
}];

static WORDS: Words = Words {
    columns: &[
        ("messages", "messages"),
        ("deliveries", "deliveries"),
        ("replies", "replies"),
        ("replayed", "replayed"),
        ("effects", "effects"),
        ("acked", "acked"),
        ("duplicated_effects", "duplicated"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the variant predicts a break here\n\
         no-lost: the queued message has an effect at the receiver; no-dup: at most one effect per message;\n\
         no-stuck: the message is acked after recovery; ack=>dur: every commit a process reported is in the files;\n\
         deliveries: leases handed out (2: redelivered once); bad anomalies: lost-write, unseen, duplicate, G1a; a replayed call (duplicate-delivery) is allowed",
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
    // reply, not a killed consumer.
    let timeout_ms = (steps.timeout().as_millis() / 2).clamp(1, 5_000) as u64;
    Consume {
        consumer,
        variant,
        lease_ms: LEASE_MS,
        wait_ms,
        timeout_ms,
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

/// The files after a case: each message (id, acked by) and each effect's key.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub messages: Vec<(String, Option<String>)>,
    pub effects: Vec<(i64, Option<String>)>,
    pub state: super::readback::State,
}

impl Observed {
    fn read(work: &std::path::Path) -> Result<Observed> {
        let queue = work.join(roles::QUEUE_DB);
        let receiver = work.join(crate::labs::http_dispatch::schema::RECEIVER_DB);
        let mut o = Observed {
            state: super::readback::read_traced(&queue, &receiver, false)?,
            ..Observed::default()
        };
        if let Some(db) = store::open_existing(&queue, &super::schema::QUEUE, false)? {
            o.messages = store::rows(
                &db,
                "SELECT id, acked_by FROM messages ORDER BY id",
                &queue,
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
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

    /// Effects of message `id`: its key's; an unkeyed effect (no key) belongs to the one
    /// message a case queues.
    fn effects_of(&self, id: &str) -> usize {
        let single = self.messages.len() == 1;
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref() == Some(id) || (k.is_none() && single))
            .count()
    }

    fn owed(&self) -> bool {
        self.messages.iter().any(|(_, acked)| acked.is_none())
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

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::ON_SQLITE.databases
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let (id, body) = super::lab::MESSAGE;
        steps.run("", roles::enqueue(id, body).into_vec())?;
        let first = consume("A", design, 0, steps);
        deliver(design, first, true, steps)
    }

    /// While the message is not acked: a fresh receiver and a consumer that waits out the
    /// crashed one's lease, then takes the message again.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let o = Observed::read(steps.work())?;
        let owed = o.owed();
        steps.set_memo(o);
        if !owed {
            return Ok(false);
        }
        let name = if round == 1 { "B" } else { "C" };
        let wait_ms = LEASE_MS * 20;
        let next = consume(name, design, wait_ms, steps);
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

/// The invariants on the files after recovery, the reported commits against the files, and
/// the history of messages in Jepsen's words.
pub fn judge(o: &Observed, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: &[Anomaly::DuplicateDelivery],
        ..Judgement::default()
    };
    let mut counts = Counts::default();
    let (mut lost, mut duplicated) = (0, 0);
    for (id, _) in &o.messages {
        let n = o.effects_of(id) as i64;
        if n == 0 {
            lost += 1;
            j.problems.push(format!(
                "lost effect: message {id} queued, no effect at the receiver"
            ));
        }
        if n > 1 {
            duplicated += n - 1;
            j.problems.push(format!(
                "duplicate effect: message {id} ran {n} times at the receiver"
            ));
        }
    }
    let ids: BTreeSet<&str> = o.messages.iter().map(|(id, _)| id.as_str()).collect();
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
    j.nothing_stuck = !o.owed();
    if !j.nothing_stuck {
        j.problems
            .push("stuck after recovery: a message is not acked".to_string());
    }
    j.acknowledged_durable = true;
    for (db, what) in steps.iter().flat_map(|s| s.commits()) {
        let visible = match db {
            "queue" if what.starts_with("ack of message ") => {
                let words: Vec<&str> = what.split_whitespace().collect();
                let (id, by) = (words.get(3).copied(), words.get(5).copied());
                o.messages
                    .iter()
                    .any(|(m, a)| Some(m.as_str()) == id && a.as_deref() == by)
            }
            "queue" if what.starts_with("enqueue of message ") => {
                ids.contains(what.rsplit(' ').next().unwrap_or(""))
            }
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
                .push(format!("reported commit not in the files: {db} {what}"));
        }
    }
    let s = &o.state;
    counts.add("messages", s.queue.messages);
    counts.add("deliveries", s.queue.deliveries);
    counts.add("replies", s.queue.replies);
    counts.add("replayed", s.queue.replayed);
    counts.add("effects", s.receiver.effects);
    counts.add("acked", s.queue.acked);
    counts.add("duplicated_effects", duplicated);
    j.counts = counts;
    j.history = history(o, steps);
    j
}

/// One operation per message: `ok` once its enqueue commit was reported, else `info`; its
/// deliveries are the calls the receivers took (applied or replayed), its effects the rows.
fn history(o: &Observed, steps: &[StepRecord]) -> Vec<Op> {
    let single = o.messages.len() == 1;
    o.messages
        .iter()
        .map(|(id, _)| {
            let enqueued = steps
                .iter()
                .flat_map(|s| s.commits())
                .any(|(db, what)| db == "queue" && what == format!("enqueue of message {id}"));
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
                outcome: if enqueued { Outcome::Ok } else { Outcome::Info },
                deliveries,
                effects: o.effects_of(id) as u32,
            }
        })
        .collect()
}
