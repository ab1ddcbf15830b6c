//! Lab f3's scenarios in Jepsen's words. The message is an operation, `ok` once its enqueue
//! committed. Each call the receiver took for it (applied or replayed) is a delivery; each
//! effect it committed an effect. Unkeyed calls carry no key (`-`): with one message per
//! scenario they are that message's.
//!
//! A replayed call is a `duplicate-delivery`, which the key absorbs (allowed). A second
//! effect is a `duplicate`: the unkeyed scenarios show it on purpose and expect it.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;

pub fn history(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let mut ops: Vec<Op> = Vec::new();
    for event in events_of(steps, super::roles::ENQUEUE) {
        if let Event::Commit { db, what } = event {
            if let Some(id) = named(what, "message").filter(|_| db == "queue") {
                ops.push(Op {
                    item: id,
                    outcome: Outcome::Ok,
                    deliveries: 0,
                    effects: 0,
                });
            }
        }
    }
    let single = ops.len() == 1;
    for event in events_of(steps, super::roles::RECEIVER) {
        let (item, effect) = match event {
            Event::Applied { item } => (item, true),
            Event::Duplicate { item } => (item, false),
            _ => continue,
        };
        let found = ops
            .iter()
            .position(|op| op.item == *item)
            .or_else(|| (item == "-" && single).then_some(0));
        if let Some(at) = found {
            ops[at].deliveries += 1;
            ops[at].effects += u32::from(effect);
        }
    }
    let expected = match super::lab::expects_duplicate(scenario) {
        true => vec![Anomaly::Duplicate],
        false => Vec::new(),
    };
    Some(History::redelivery_allowed(ops, &expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::redelivered::lab::ON_SQLITE;

    #[test]
    fn a_replay_is_allowed_and_the_unkeyed_double_effect_is_expected_only_there() {
        let enqueue = [Event::Commit {
            db: "queue".into(),
            what: "enqueue of message M1".into(),
        }];
        let keyed = [
            Event::Applied { item: "M1".into() },
            Event::Duplicate { item: "M1".into() },
        ];
        let unkeyed = [
            Event::Applied { item: "-".into() },
            Event::Applied { item: "-".into() },
        ];
        let run = |scenario: &str, receiver: &[Event]| {
            let steps = [
                Seen::of("redeliver-enqueue", &enqueue),
                Seen::of("receiver", receiver),
            ];
            judge(&ON_SQLITE, scenario, &steps).unwrap()
        };
        let f = run("keyed-pause-after-call", &keyed);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        let f = run("unkeyed-pause-after-call", &unkeyed);
        assert!(
            f.ok && f.expected_anomalies == [Anomaly::Duplicate],
            "{f:?}"
        );
        // The double effect where the key must absorb it fails; so does a missing one.
        assert!(!run("keyed-pause-before-call", &unkeyed).ok);
        assert!(!run("unkeyed-pause-before-call", &keyed).ok);
    }
}
