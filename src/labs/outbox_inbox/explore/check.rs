//! Lab 14's judgement of one explore case, on either stack: the invariants on the stores
//! after recovery, the commits the processes reported (their `commit` events) checked
//! against the stores, and the history of messages in Jepsen's terms.

use std::collections::BTreeMap;

use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;
use crate::out::plural;

use super::super::stack::Stack;
use super::super::state::State;
use super::visible::{ids, visible};

/// What the designs tolerate: a message may reach the consumer more than once (a
/// publisher's resend, a redelivery after a crash before the ack, an upstream's copy); the
/// Inbox must absorb it.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// The counts of a case on each stack, in the order of the table's columns.
fn counted(stack: Stack) -> &'static [&'static str] {
    match stack {
        Stack::Sqlite => &[
            "deliveries",
            "claims",
            "effects_applied",
            "duplicates_suppressed",
            "lost_effects",
            "duplicated_effects",
            "lost_messages",
            "acknowledged_commits",
        ],
        Stack::Servers => &[
            "deliveries",
            "handled",
            "effects_applied",
            "lost_effects",
            "duplicated_effects",
            "acknowledged_commits",
        ],
    }
}

/// The history: one operation per message of the Outbox, in its order (the order the
/// business was told `ok`). `ok` when a sender's `commit` event names the message, else
/// `info`; its deliveries are what the transport delivered of it, its effects the credits of
/// its contract. A credited contract the sender never committed is a `fail` operation with
/// effects (G1a).
pub fn history(o: &State, steps: &[StepRecord]) -> Vec<Op> {
    let acked = |m: &str| {
        steps
            .iter()
            .flat_map(|s| s.commits())
            .any(|(db, what)| db == "sender" && what.split_whitespace().any(|w| w == m))
    };
    let times = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    let delivered = o.deliveries();
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
            deliveries: times(delivered.get(r.message.as_str()).copied().unwrap_or(0)),
            effects: times(o.credits(&r.contract)),
        })
        .collect();
    for (contract, _, n) in &o.ledger {
        if !o.contracts.iter().any(|(c, _)| c == contract) {
            ops.push(Op {
                item: contract.clone(),
                outcome: Outcome::Fail,
                deliveries: 0,
                effects: times(*n),
            });
        }
    }
    ops
}

/// Judge the stores after recovery against every process's events.
pub fn judge(stack: Stack, o: &State, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: ALLOWED,
        ..Judgement::default()
    };
    let mut counts: BTreeMap<&'static str, i64> = BTreeMap::new();
    let add = |counts: &mut BTreeMap<&'static str, i64>, k, n| *counts.entry(k).or_default() += n;
    let committed: BTreeMap<&str, i64> =
        o.contracts.iter().map(|(c, a)| (c.as_str(), *a)).collect();
    let ledger: BTreeMap<&str, (i64, i64)> = o
        .ledger
        .iter()
        .map(|(c, b, k)| (c.as_str(), (*b, *k)))
        .collect();

    for (contract, amount) in &committed {
        if ledger.get(contract).is_none_or(|(_, credits)| *credits < 1) {
            add(&mut counts, "lost_effects", 1);
            j.problems.push(format!(
                "lost effect: contract {contract} committed with amount {amount}, no credit in the ledger"
            ));
        }
        // Only the SQL queue keeps what reached it.
        if stack == Stack::Sqlite {
            let message = o
                .outbox
                .iter()
                .find(|r| r.contract == *contract)
                .map(|r| r.message.as_str());
            if !message.is_some_and(|m| o.deliveries.iter().any(|d| d.message == m)) {
                add(&mut counts, "lost_messages", 1);
                j.problems.push(format!(
                    "lost message: message {} of contract {contract} never reached the queue",
                    message.unwrap_or("?")
                ));
            }
        }
    }
    for (contract, (balance, credits)) in &ledger {
        add(&mut counts, "effects_applied", *credits);
        let (extra, problem) = match committed.get(contract) {
            None => (*credits, format!(
                "effect without cause: contract {contract} credited {} ({balance}) but never committed",
                plural(*credits, "time", "times")
            )),
            Some(amount) if *credits > 1 => (credits - 1, format!(
                "duplicate effect: contract {contract} credited {credits} times, balance {balance} for an amount of {amount}"
            )),
            Some(amount) if *credits == 1 && balance != amount => (1, format!(
                "wrong effect: contract {contract} balance {balance}, amount {amount}"
            )),
            Some(_) => continue,
        };
        add(&mut counts, "duplicated_effects", extra);
        j.problems.push(problem);
    }
    let count = |counts: &BTreeMap<&str, i64>, k: &str| counts.get(k).copied().unwrap_or(0);
    j.no_lost_effect = count(&counts, "lost_effects") == 0;
    j.no_duplicate_effect = count(&counts, "duplicated_effects") == 0;
    if j.no_lost_effect && j.no_duplicate_effect {
        // Once each, nothing else: the ledger is the sum over committed contracts.
        let committed_total: i64 = committed.values().sum();
        assert_eq!(
            o.ledger_total(),
            committed_total,
            "ledger once per committed contract"
        );
    }

    let (outbox_pending, queue_pending) = (o.outbox_pending(), o.queue_pending(stack));
    j.nothing_stuck = outbox_pending == 0 && queue_pending == 0;
    if !j.nothing_stuck {
        let (one, many) = match stack {
            Stack::Sqlite => ("delivery", "deliveries"),
            Stack::Servers => ("message in the queue", "messages in the queue"),
        };
        j.problems.push(format!(
            "stuck after recovery: {} and {} still pending",
            plural(outbox_pending, "Outbox row", "Outbox rows"),
            plural(queue_pending, one, many)
        ));
    }

    add(
        &mut counts,
        "deliveries",
        (o.deliveries.len() + o.receipts.len()) as i64,
    );
    add(
        &mut counts,
        "handled",
        o.receipts.iter().map(|r| r.handled).sum(),
    );
    j.acknowledged_durable = true;
    for step in steps {
        for event in &step.events {
            if matches!(event, Event::Duplicate { .. }) {
                add(&mut counts, "duplicates_suppressed", 1);
            }
        }
        for (db, what) in step.commits() {
            add(&mut counts, "acknowledged_commits", 1);
            let rest = format!("{db} {what}");
            if rest.starts_with("queue claim of ") {
                let w: Vec<&str> = rest.split_whitespace().collect();
                if let Ok(ids) = ids(&w) {
                    add(&mut counts, "claims", ids.count() as i64);
                }
            }
            if let Err(why) = visible(o, &rest) {
                j.acknowledged_durable = false;
                j.problems.push(format!(
                    "acknowledged, not durable: {} committed '{rest}': {why}",
                    step.name
                ));
            }
        }
    }
    j.counts = Counts(
        counted(stack)
            .iter()
            .map(|k| (*k, count(&counts, k)))
            .collect(),
    );
    j.history = history(o, steps);
    j
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::state::{Inboxed, Outboxed, Queued, Receipt};
    use super::*;

    pub(crate) fn observed() -> State {
        State {
            contracts: vec![("C1".into(), 25)],
            outbox: vec![Outboxed {
                message: "M1".into(),
                contract: "C1".into(),
                status: "sent".into(),
            }],
            deliveries: vec![Queued {
                id: 1,
                message: "M1".into(),
                status: "acked".into(),
                claimed_by: Some("c1".into()),
            }],
            inbox: vec![Inboxed {
                message: "M1".into(),
                contract: "C1".into(),
                amount: 25,
            }],
            ledger: vec![("C1".into(), 25, 1)],
            ..State::default()
        }
    }

    #[test]
    fn lost_and_duplicate_effects_are_told_apart() {
        let mut o = observed();
        let j = judge(Stack::Sqlite, &o, &[]);
        assert!(j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        o.ledger = vec![("C1".into(), 50, 2)];
        let j = judge(Stack::Sqlite, &o, &[]);
        assert!(j.no_lost_effect && !j.no_duplicate_effect);
        assert_eq!(j.counts.get("duplicated_effects"), 1);
        o.ledger.clear();
        let j = judge(Stack::Sqlite, &o, &[]);
        assert!(!j.no_lost_effect && j.no_duplicate_effect);
        assert_eq!(j.counts.get("lost_effects"), 1);
    }

    #[test]
    fn on_the_servers_a_receipt_counts_its_deliveries_and_a_ready_message_is_stuck() {
        let mut o = State {
            deliveries: Vec::new(),
            receipts: vec![Receipt {
                message: "M1".into(),
                outcome: "applied".into(),
                redelivered: true,
                handled: 2,
            }],
            ..observed()
        };
        let j = judge(Stack::Servers, &o, &[]);
        assert!(
            j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck,
            "{j:?}"
        );
        assert_eq!(
            (j.counts.get("deliveries"), j.counts.get("handled")),
            (1, 2)
        );
        assert_eq!(j.history[0].deliveries, 2);
        o.ready = 1;
        let j = judge(Stack::Servers, &o, &[]);
        assert!(!j.nothing_stuck);
        assert!(
            j.problems[0].contains("1 message in the queue still pending"),
            "{j:?}"
        );
    }

    #[test]
    fn the_history_names_a_lost_write_an_absorbed_redelivery_and_an_effect_without_cause() {
        use crate::engine::jepsen::check;
        let mut o = observed();
        o.contracts.push(("C2".into(), 40));
        o.outbox.push(Outboxed {
            message: "M2".into(),
            contract: "C2".into(),
            status: "sent".into(),
        });
        for (id, m) in [(2, "M1"), (3, "M2")] {
            o.deliveries.push(Queued {
                id,
                message: m.into(),
                status: "acked".into(),
                claimed_by: None,
            });
        }
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
