//! Lab 14's run in Jepsen's words: each message the sender committed is an operation,
//! acknowledged (`ok`) by its commit; each commit that credited the ledger for it is an
//! effect; its deliveries are what its stack's transport handed a consumer. The Inbox
//! absorbs a duplicate delivery, so `duplicate-delivery` is allowed; a second credit would
//! be a `duplicate`.
//!
//! - On SQLite a delivery is a queue row a consumer claimed and did not reject (claimed
//!   again after a crash it is still one; a rejected one carries another payload under the
//!   same id).
//! - On the servers it is a receiver commit for the message: its effect, or the receipt of
//!   a duplicate (a redelivery after a crash before the ack is one more).

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;

use super::stack::Stack;

pub fn on_sqlite(_scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    Some(history(steps, Stack::Sqlite))
}

pub fn on_servers(_scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    Some(history(steps, Stack::Servers))
}

fn history(steps: &[Seen<'_>], stack: Stack) -> History {
    let mut ops: Vec<Op> = Vec::new();
    for event in events_of(steps, "sender") {
        let Event::Commit { db, what } = event else {
            continue;
        };
        let Some(message) = named(what, "message").filter(|_| db == "sender") else {
            continue;
        };
        if !ops.iter().any(|op| op.item == message) {
            ops.push(Op {
                item: message,
                outcome: Outcome::Ok,
                deliveries: 0,
                effects: 0,
            });
        }
    }
    // The delivery ids claimed per message (a claim without an id counts on its own).
    let mut claimed: Vec<(String, Option<String>)> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
    for event in events_of(steps, "consumer") {
        if let Event::Rejected { item, .. } = event {
            rejected.push(item.clone());
        }
        let Event::Commit { db, what } = event else {
            continue;
        };
        let Some(op) = named(what, "message").and_then(|m| ops.iter_mut().find(|op| op.item == m))
        else {
            continue;
        };
        let effect = db == "receiver" && what.contains("ledger");
        op.effects += u32::from(effect);
        match stack {
            Stack::Sqlite if db == "queue" && what.starts_with("claim ") => {
                let entry = (op.item.clone(), named(what, "delivery"));
                if entry.1.is_none() || !claimed.contains(&entry) {
                    claimed.push(entry);
                    op.deliveries += 1;
                }
            }
            Stack::Servers if effect || what.starts_with("receipt of duplicate") => {
                op.deliveries += 1;
            }
            _ => {}
        }
    }
    if stack == Stack::Sqlite {
        for item in rejected {
            if let Some(op) = ops.iter_mut().find(|op| op.item == item) {
                op.deliveries = op.deliveries.saturating_sub(1);
            }
        }
    }
    History {
        ops,
        allowed: vec![Anomaly::DuplicateDelivery],
        expected: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::engine::registry::find_on;

    fn commit(db: &str, what: &str) -> Event {
        Event::Commit {
            db: db.into(),
            what: what.into(),
        }
    }

    /// The findings of a run whose consumers' processes had these events, on `stack`.
    fn run(stack: &str, consumers: &[&[Event]]) -> crate::engine::observed::ScenarioFindings {
        let sent = [commit("sender", "contract R1 message M1 amount 25")];
        let mut steps = vec![Seen {
            step: "send",
            phase: "sender",
            events: &sent,
            readback: None,
        }];
        steps.extend(consumers.iter().map(|events| Seen {
            step: "consume",
            phase: "consumer",
            events,
            readback: None,
        }));
        judge(find_on("14", Some(stack)).unwrap(), "s", &steps).unwrap()
    }

    #[test]
    fn a_redelivery_absorbed_is_allowed_and_a_second_credit_is_a_duplicate() {
        let first = [
            commit("queue", "claim of delivery 1 message M1 by c1"),
            commit("receiver", "inbox and ledger for message M1 (+25 to R1)"),
        ];
        let again = [commit("queue", "claim of delivery 2 message M1 by c1")];
        let f = run("sqlite", &[&first, &again]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        // The same delivery credited twice: a duplicate effect, which no scenario expects.
        let f = run("sqlite", &[&first, &first]);
        assert!(!f.ok);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Duplicate);
        // Sent and never consumed: unseen.
        let f = run("sqlite", &[]);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Unseen);
        // One delivery claimed again after a crash, then a conflicting payload rejected:
        // still one delivery, nothing duplicated.
        let rejected = [
            commit("queue", "claim of delivery 1 message M1 by c1"),
            commit("queue", "claim of delivery 3 message M1 by c1"),
            Event::Rejected {
                item: "M1".into(),
                reason: "payload conflict".into(),
            },
        ];
        let f = run("sqlite", &[&first, &rejected]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "none");
    }

    #[test]
    fn on_the_servers_a_receipt_of_a_duplicate_is_a_delivery_absorbed() {
        let first = [commit(
            "receiver",
            "inbox and ledger for message M1 (+25 to R1)",
        )];
        let again = [commit(
            "receiver",
            "receipt of duplicate delivery 1 message M1",
        )];
        let servers = "postgres-rabbitmq";
        let f = run(servers, &[&first, &again]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        let f = run(servers, &[&first, &first]);
        assert!(!f.ok);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Duplicate);
        let f = run(servers, &[]);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Unseen);
    }
}
