//! Lab 14's run in Jepsen's words: each message the sender committed is an operation,
//! acknowledged (`ok`) by its commit; each claim of it by a consumer is a delivery; each
//! commit that credited the ledger for it is an effect. The Inbox absorbs a duplicate
//! delivery, so `duplicate-delivery` is allowed; a second credit would be a `duplicate`.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;

pub fn history(_scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
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
    for event in events_of(steps, "consumer") {
        let Event::Commit { db, what } = event else {
            continue;
        };
        let Some(op) = named(what, "message").and_then(|m| ops.iter_mut().find(|op| op.item == m))
        else {
            continue;
        };
        if db == "queue" && what.starts_with("claim ") {
            op.deliveries += 1;
        }
        if db == "receiver" && what.contains("ledger") {
            op.effects += 1;
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
    }
}
