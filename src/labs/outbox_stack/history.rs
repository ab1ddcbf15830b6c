//! Lab 14 on the stack in Jepsen's words and in the audit's replay.
//!
//! Each message the sender committed is an operation, acknowledged (`ok`) by its commit; each
//! receiver commit the consumer made for it (an effect, or the receipt of a duplicate) is a
//! delivery; each commit that credited the ledger is an effect. A redelivery (a crash between
//! the commit and the ack) is a `duplicate-delivery` the Inbox absorbs, which is allowed; a
//! second credit would be a `duplicate`.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::engine::replay::claims_api::{LabReplay, RoleClaims};
use crate::events::Event;

use super::roles;

pub fn history(_scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let mut ops: Vec<Op> = Vec::new();
    for event in events_of(steps, roles::SENDER) {
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
    for event in events_of(steps, roles::CONSUMER) {
        let Event::Commit { db, what } = event else {
            continue;
        };
        if db != "receiver" {
            continue;
        }
        let Some(op) = named(what, "message").and_then(|m| ops.iter_mut().find(|op| op.item == m))
        else {
            continue;
        };
        if what.contains("ledger") {
            op.deliveries += 1;
            op.effects += 1;
        } else if what.starts_with("receipt of duplicate") {
            op.deliveries += 1;
        }
    }
    Some(History {
        ops,
        allowed: vec![Anomaly::DuplicateDelivery],
        expected: Vec::new(),
    })
}

/// The readback on replayed databases: None, since the queue's part (its ready messages) is
/// the broker's and is not replayed; the server store checks the databases' digests instead.
pub fn readback(
    _phase: &str,
    _dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    None
}

/// What the audit's replay needs to know of these roles: the lines they print besides `SQL`,
/// `COMMITTED` and the crash lines (`AMQP` is the broker's trace).
pub const REPLAY: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[
        "SENT",
        "PUBLISHED",
        "CONSUMED",
        "DUPLICATE",
        "REJECTED",
        "RACE",
        "ENQUEUED",
        "DECLARED",
        "AMQP",
    ],
    claims,
};

/// The roles' printed counts are checked against the readbacks by the scenario's stages; the
/// replay has no queue to check the publisher's count against.
fn claims(_c: &mut RoleClaims<'_>) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::outbox_stack::lab::LAB;

    fn commit(db: &str, what: &str) -> Event {
        Event::Commit {
            db: db.into(),
            what: what.into(),
        }
    }

    #[test]
    fn a_redelivery_absorbed_is_allowed_and_a_second_credit_is_a_duplicate() {
        let sent = [commit("sender", "contract R1 message M1 amount 25")];
        let first = [commit(
            "receiver",
            "inbox and ledger for message M1 (+25 to R1)",
        )];
        let again = [commit(
            "receiver",
            "receipt of duplicate delivery 1 message M1",
        )];
        let run = |consumers: &[&[Event]]| {
            let mut steps = vec![Seen {
                step: "send",
                phase: roles::SENDER,
                events: &sent,
                readback: None,
            }];
            steps.extend(consumers.iter().map(|events| Seen {
                step: "consume",
                phase: roles::CONSUMER,
                events,
                readback: None,
            }));
            judge(&LAB, "s", &steps).unwrap()
        };
        let f = run(&[&first, &again]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        let f = run(&[&first, &first]);
        assert!(!f.ok);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Duplicate);
        let f = run(&[]);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::Unseen);
    }
}
