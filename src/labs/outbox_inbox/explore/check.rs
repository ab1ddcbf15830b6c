//! Lab 14's end-to-end judgement of one explore case: the invariants on the files after
//! recovery, the commits the processes reported (their `commit` events) checked against the
//! files, and the history of messages in Jepsen's terms.

use std::collections::BTreeMap;

use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;

use super::state::Observed;
use super::visible::{ids, visible};

/// What the designs tolerate: the queue may deliver a message more than once (a publisher
/// resends after a crash, an upstream redelivers); the Inbox must absorb it.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// The counts of a case, in the order of the table's columns.
pub const COUNTS: &[&str] = &[
    "deliveries",
    "claims",
    "effects_applied",
    "duplicates_suppressed",
    "lost_effects",
    "duplicated_effects",
    "lost_messages",
    "acknowledged_commits",
];

/// The history: one operation per message of the Outbox, in its order (the order the
/// business was told `ok`). `ok` when a sender's `commit` event names the message, else
/// `info`; its deliveries are its rows in the queue, its effects the credits of its contract.
/// A credited contract the sender never committed is a `fail` operation with effects (G1a).
pub fn history(o: &Observed, steps: &[StepRecord]) -> Vec<Op> {
    let acked = |m: &str| {
        steps
            .iter()
            .flat_map(|s| s.commits())
            .any(|(db, what)| db == "sender" && what.split_whitespace().any(|w| w == m))
    };
    let credits = |c: &str| {
        o.ledger
            .iter()
            .find(|(k, _, _)| k == c)
            .map_or(0, |(_, _, n)| *n)
    };
    let mut ops: Vec<Op> = o
        .outbox
        .iter()
        .map(|r| Op {
            item: r.message.clone(),
            outcome: if acked(&r.message) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: o
                .deliveries
                .iter()
                .filter(|d| d.message == r.message)
                .count() as u32,
            effects: u32::try_from(credits(&r.contract)).unwrap_or(u32::MAX),
        })
        .collect();
    for (contract, _, n) in &o.ledger {
        if !o.contracts.iter().any(|(c, _)| c == contract) {
            ops.push(Op {
                item: contract.clone(),
                outcome: Outcome::Fail,
                deliveries: 0,
                effects: u32::try_from(*n).unwrap_or(u32::MAX),
            });
        }
    }
    ops
}

/// Judge the files after recovery against every process's events.
pub fn judge(observed: &Observed, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: ALLOWED,
        ..Judgement::default()
    };
    let mut counts: BTreeMap<&'static str, i64> = BTreeMap::new();
    let committed: BTreeMap<&str, i64> = observed
        .contracts
        .iter()
        .map(|(c, a)| (c.as_str(), *a))
        .collect();
    let ledger: BTreeMap<&str, (i64, i64)> = observed
        .ledger
        .iter()
        .map(|(c, b, k)| (c.as_str(), (*b, *k)))
        .collect();

    for (contract, amount) in &committed {
        match ledger.get(contract) {
            Some((_, credits)) if *credits >= 1 => {}
            _ => {
                *counts.entry("lost_effects").or_default() += 1;
                j.problems.push(format!(
                    "lost effect: contract {contract} committed with amount {amount}, no credit in the ledger"
                ));
            }
        }
        let message = observed
            .outbox
            .iter()
            .find(|r| r.contract == *contract)
            .map(|r| r.message.as_str());
        let delivered = message.is_some_and(|m| observed.deliveries.iter().any(|d| d.message == m));
        if !delivered {
            *counts.entry("lost_messages").or_default() += 1;
            j.problems.push(format!(
                "lost message: message {} of contract {contract} never reached the queue",
                message.unwrap_or("?")
            ));
        }
    }
    for (contract, (balance, credits)) in &ledger {
        *counts.entry("effects_applied").or_default() += credits;
        match committed.get(contract) {
            None => {
                *counts.entry("duplicated_effects").or_default() += credits;
                j.problems.push(format!(
                    "effect without cause: contract {contract} credited {} ({balance}) but never committed",
                    crate::out::plural(*credits, "time", "times")
                ));
            }
            Some(amount) => {
                if *credits > 1 {
                    *counts.entry("duplicated_effects").or_default() += credits - 1;
                    j.problems.push(format!(
                        "duplicate effect: contract {contract} credited {credits} times, balance {balance} for an amount of {amount}"
                    ));
                } else if *credits == 1 && balance != amount {
                    *counts.entry("duplicated_effects").or_default() += 1;
                    j.problems.push(format!(
                        "wrong effect: contract {contract} balance {balance}, amount {amount}"
                    ));
                }
            }
        }
    }
    let count = |counts: &BTreeMap<&str, i64>, k: &str| counts.get(k).copied().unwrap_or(0);
    j.no_lost_effect = count(&counts, "lost_effects") == 0;
    j.no_duplicate_effect = count(&counts, "duplicated_effects") == 0;
    if j.no_lost_effect && j.no_duplicate_effect {
        // Once each, nothing else: the ledger is the sum over committed contracts.
        let ledger_total: i64 = ledger.values().map(|(b, _)| b).sum();
        let committed_total: i64 = committed.values().sum();
        assert_eq!(
            ledger_total, committed_total,
            "ledger once per committed contract"
        );
    }

    let (outbox_pending, queue_pending) = (observed.outbox_pending(), observed.queue_pending());
    j.nothing_stuck = outbox_pending == 0 && queue_pending == 0;
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck after recovery: {} and {} still pending",
            crate::out::plural(outbox_pending, "Outbox row", "Outbox rows"),
            crate::out::plural(queue_pending, "delivery", "deliveries")
        ));
    }

    counts.insert("deliveries", observed.deliveries.len() as i64);
    j.acknowledged_durable = true;
    for step in steps {
        for event in &step.events {
            if matches!(event, Event::Duplicate { .. }) {
                *counts.entry("duplicates_suppressed").or_default() += 1;
            }
        }
        for (db, what) in step.commits() {
            *counts.entry("acknowledged_commits").or_default() += 1;
            let rest = format!("{db} {what}");
            if rest.starts_with("queue claim of ") {
                let w: Vec<&str> = rest.split_whitespace().collect();
                if let Ok(ids) = ids(&w) {
                    *counts.entry("claims").or_default() += ids.count() as i64;
                }
            }
            if let Err(why) = visible(observed, &rest) {
                j.acknowledged_durable = false;
                j.problems.push(format!(
                    "acknowledged, not durable: {} committed '{rest}': {why}",
                    step.name
                ));
            }
        }
    }
    j.counts = Counts(COUNTS.iter().map(|k| (*k, count(&counts, k))).collect());
    j.history = history(observed, steps);
    j
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::state::{Delivery, InboxRow, OutboxRow};
    use super::*;

    pub(crate) fn observed() -> Observed {
        Observed {
            contracts: vec![("C1".into(), 25)],
            outbox: vec![OutboxRow {
                message: "M1".into(),
                contract: "C1".into(),
                status: "sent".into(),
            }],
            deliveries: vec![Delivery {
                id: 1,
                message: "M1".into(),
                status: "acked".into(),
                claimed_by: Some("c1".into()),
            }],
            inbox: vec![InboxRow {
                message: "M1".into(),
                contract: "C1".into(),
                amount: 25,
            }],
            ledger: vec![("C1".into(), 25, 1)],
        }
    }

    #[test]
    fn lost_and_duplicate_effects_are_told_apart() {
        let mut o = observed();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        o.ledger = vec![("C1".into(), 50, 2)];
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && !j.no_duplicate_effect);
        assert_eq!(j.counts.get("duplicated_effects"), 1);
        o.ledger.clear();
        let j = judge(&o, &[]);
        assert!(!j.no_lost_effect && j.no_duplicate_effect);
        assert_eq!(j.counts.get("lost_effects"), 1);
    }

    #[test]
    fn the_history_names_a_lost_write_an_absorbed_redelivery_and_an_effect_without_cause() {
        use crate::engine::jepsen::check;
        let mut o = observed();
        o.contracts.push(("C2".into(), 40));
        o.outbox.push(OutboxRow {
            message: "M2".into(),
            contract: "C2".into(),
            status: "sent".into(),
        });
        o.deliveries.push(Delivery {
            id: 2,
            message: "M1".into(),
            status: "acked".into(),
            claimed_by: None,
        });
        o.deliveries.push(Delivery {
            id: 3,
            message: "M2".into(),
            status: "acked".into(),
            claimed_by: None,
        });
        // M1 lost, M2 (acknowledged after it) applied, C9 credited but never committed.
        o.ledger = vec![("C2".into(), 40, 1), ("C9".into(), 5, 1)];
        let sender = StepRecord {
            name: "01-sender".into(),
            role: "sender".into(),
            armed: false,
            in_scenario: true,
            ended: crate::engine::process::Ended {
                exit: 0,
                signal: None,
                wall_ms: 1.0,
                max_rss_kb: 0,
                timed_out: false,
            },
            events: ["M1", "M2"]
                .iter()
                .map(|m| Event::Commit {
                    db: "sender".into(),
                    what: format!("contract C message {m} amount 1"),
                })
                .collect(),
            events_error: None,
        };
        let h = history(&o, std::slice::from_ref(&sender));
        assert_eq!(h.len(), 3);
        assert_eq!(
            (h[0].outcome, h[0].deliveries, h[0].effects),
            (Outcome::Ok, 2, 0)
        );
        assert_eq!(h[2].outcome, Outcome::Fail);
        let f = check(&h, ALLOWED);
        let bad: Vec<(Anomaly, &str)> = f
            .bad_anomalies
            .iter()
            .map(|f| (f.anomaly, f.item.as_str()))
            .collect();
        assert_eq!(bad, [(Anomaly::LostWrite, "M1"), (Anomaly::G1a, "C9")]);
        assert!(f
            .anomalies
            .iter()
            .any(|f| f.anomaly == Anomaly::DuplicateDelivery && f.item == "M1"));
        // Without the sender's word, the operations' outcomes are unknown.
        assert!(history(&o, &[])
            .iter()
            .take(2)
            .all(|op| op.outcome == Outcome::Info));
    }
}
