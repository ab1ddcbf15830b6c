//! The judgement of one explore case of lab 14 on the stack: the invariants on the stores after
//! recovery, the commits the processes reported checked against the stores, and the history
//! of messages in Jepsen's terms.

use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::{Anomaly, Op, Outcome};

use super::state::Observed;

/// A message may reach the consumer more than once (a publisher's resend, a redelivery after
/// a crash before the ack, an upstream's copy); the Inbox must absorb it.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

fn named<'a>(what: &'a str, word: &str) -> Option<&'a str> {
    let mut words = what.split_whitespace();
    while let Some(w) = words.next() {
        if w == word {
            return words.next();
        }
    }
    None
}

/// Whether the stores show what one reported commit made durable.
fn visible(o: &Observed, db: &str, what: &str) -> bool {
    let message = named(what, "message").unwrap_or("");
    match db {
        "sender" if what.starts_with("contract ") => {
            let contract = named(what, "contract").unwrap_or("");
            o.contracts.iter().any(|(c, _)| c == contract)
        }
        "sender" => o.outbox.iter().any(|r| r.0 == message && r.2 == "sent"),
        "receiver" if what.starts_with("inbox") => o.inbox.iter().any(|m| m == message),
        "receiver" => o.receipts.iter().any(|r| r.0 == message),
        _ => true,
    }
}

pub fn judge(o: &Observed, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: ALLOWED,
        ..Judgement::default()
    };
    let mut counts = Counts::default();
    let ledger = |c: &str| o.ledger.iter().find(|l| l.0 == c).map(|l| (l.1, l.2));
    for (contract, amount) in &o.contracts {
        match ledger(contract) {
            Some((balance, 1)) if balance == *amount => {}
            Some((_, credits)) if credits >= 1 => {
                counts.add("duplicated_effects", credits - 1);
                j.problems.push(format!(
                    "duplicate effect: contract {contract} credited {credits} times"
                ));
            }
            _ => {
                counts.add("lost_effects", 1);
                j.problems.push(format!(
                    "lost effect: contract {contract} committed with amount {amount}, no credit in the ledger"
                ));
            }
        }
    }
    for (contract, _, credits) in &o.ledger {
        if !o.contracts.iter().any(|(c, _)| c == contract) {
            counts.add("duplicated_effects", *credits);
            j.problems.push(format!(
                "effect of contract {contract}, which the sender never committed"
            ));
        }
    }
    j.no_lost_effect = counts.get("lost_effects") == 0;
    j.no_duplicate_effect = counts.get("duplicated_effects") == 0;
    j.nothing_stuck = o.outbox_pending() == 0 && o.ready == 0;
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck: {} Outbox rows pending, {} messages ready in the queue",
            o.outbox_pending(),
            o.ready
        ));
    }
    let mut reported = 0;
    j.acknowledged_durable = true;
    for (db, what) in steps.iter().flat_map(|s| s.commits()) {
        reported += 1;
        if !visible(o, db, what) {
            j.acknowledged_durable = false;
            j.problems.push(format!(
                "acknowledged commit not in the stores: {db} {what}"
            ));
        }
    }
    counts.add("acknowledged_commits", reported);
    counts.add("deliveries", o.receipts.len() as i64);
    counts.add("handled", o.receipts.iter().map(|r| r.2).sum());
    counts.add("effects_applied", o.ledger.iter().map(|l| l.2).sum::<i64>());
    j.counts = counts;
    j.history = history(o, steps);
    j
}

/// One operation per Outbox message: `ok` when a sender's commit named it, else `info`; its
/// deliveries are how often the consumer handled it (rejected copies aside), its effects the
/// credits of its contract.
fn history(o: &Observed, steps: &[StepRecord]) -> Vec<Op> {
    let acked = |m: &str| {
        steps
            .iter()
            .flat_map(|s| s.commits())
            .any(|(db, what)| db == "sender" && named(what, "message") == Some(m))
    };
    o.outbox
        .iter()
        .map(|(message, contract, _)| Op {
            item: message.clone(),
            outcome: if acked(message) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: o
                .receipts
                .iter()
                .filter(|r| &r.0 == message && r.1 != "rejected")
                .map(|r| u32::try_from(r.2).unwrap_or(u32::MAX))
                .sum(),
            effects: o
                .ledger
                .iter()
                .find(|l| &l.0 == contract)
                .map_or(0, |l| u32::try_from(l.2).unwrap_or(u32::MAX)),
        })
        .collect()
}
