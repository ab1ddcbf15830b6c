//! Lab 14's run in Jepsen's words: each message the sender committed is an operation,
//! acknowledged (`ok`) by its commit; each queue delivery of it that a consumer claimed and
//! did not reject is a delivery (a delivery claimed again after a crash is still one, and
//! a rejected one carries another payload under the same id); each commit that credited the
//! ledger for it is an effect. The Inbox absorbs a duplicate delivery, so
//! `duplicate-delivery` is allowed; a second credit would be a `duplicate`.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;

pub fn history(_scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let mut ops: Vec<Op> = Vec::new();
    // The delivery ids claimed per message (a claim without an id counts on its own).
    let mut claimed: Vec<(String, Option<String>)> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
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
        if db == "queue" && what.starts_with("claim ") {
            let id = named(what, "delivery");
            let entry = (op.item.clone(), id);
            if entry.1.is_none() || !claimed.contains(&entry) {
                claimed.push(entry);
                op.deliveries += 1;
            }
        }
        if db == "receiver" && what.contains("ledger") {
            op.effects += 1;
        }
    }
    for item in rejected {
        if let Some(op) = ops.iter_mut().find(|op| op.item == item) {
            op.deliveries = op.deliveries.saturating_sub(1);
        }
    }
    Some(History {
        ops,
        allowed: vec![Anomaly::DuplicateDelivery],
        expected: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::outbox_inbox::lab::LAB;

    fn commit(db: &str, what: &str) -> Event {
        Event::Commit {
            db: db.into(),
            what: what.into(),
        }
    }

    #[test]
    fn a_redelivery_absorbed_is_allowed_and_a_second_credit_is_a_duplicate() {
        let sent = [commit("sender", "contract R1 message M1 amount 25")];
        let first = [
            commit("queue", "claim of delivery 1 message M1 by c1"),
            commit("receiver", "inbox and ledger for message M1 (+25 to R1)"),
        ];
        let again = [commit("queue", "claim of delivery 2 message M1 by c1")];
        let run = |consumers: &[&[Event]]| {
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
            judge(&LAB, "s", &steps).unwrap()
        };
        let f = run(&[&first, &again]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        // The same delivery credited twice: a duplicate effect, which no scenario expects.
        let f = run(&[&first, &first]);
        assert!(!f.ok);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Duplicate);
        // Sent and never consumed: unseen.
        let f = run(&[]);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Unseen);
        // One delivery claimed again after a crash, then a conflicting payload rejected:
        // still one delivery, nothing duplicated.
        let reclaim = [
            commit("queue", "claim of delivery 1 message M1 by c1"),
            commit("receiver", "inbox and ledger for message M1 (+25 to R1)"),
        ];
        let rejected = [
            commit("queue", "claim of delivery 1 message M1 by c1"),
            commit("queue", "claim of delivery 3 message M1 by c1"),
            Event::Rejected {
                item: "M1".into(),
                reason: "payload conflict".into(),
            },
        ];
        let f = run(&[&reclaim, &rejected]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "none");
    }
}
