//! Lab f3's scenarios in Jepsen's words, on both stacks. The message is an operation, `ok`
//! once its enqueue is acknowledged: its commit on SQLite, the broker's confirm of the
//! persistent publish on the servers (the enqueue ended 0). Each call the receiver took for
//! it (applied or replayed) is a delivery; each effect it committed an effect. Unkeyed calls
//! carry no key (`-`): with one message per scenario they are that message's.
//!
//! A replayed call is a `duplicate-delivery`, which the key absorbs (allowed). A second
//! effect is a `duplicate`: the unkeyed scenarios show it on purpose and expect it.

use super::roles::{Enqueue, RECEIVER};
use super::stack::Stack;
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;
use crate::role::Role;

pub fn on_sqlite(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    Some(history(Stack::Sqlite, scenario, steps))
}

pub fn on_servers(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    Some(history(Stack::Servers, scenario, steps))
}

fn op(item: String, outcome: Outcome) -> Op {
    Op {
        item,
        outcome,
        deliveries: 0,
        effects: 0,
    }
}

fn history(stack: Stack, scenario: &str, steps: &[Seen<'_>]) -> History {
    let enqueued = events_of(steps, Enqueue::NAME);
    let mut ops: Vec<Op> = match stack {
        Stack::Sqlite => enqueued
            .filter_map(|event| match event {
                Event::Commit { db, what } if db == "queue" => named(what, "message"),
                _ => None,
            })
            .map(|id| op(id, Outcome::Ok))
            .collect(),
        Stack::Servers => {
            let confirmed = enqueued
                .into_iter()
                .any(|e| matches!(e, Event::End { code: 0 }));
            let outcome = if confirmed {
                Outcome::Ok
            } else {
                Outcome::Info
            };
            vec![op(super::lab::MESSAGE.0.to_string(), outcome)]
        }
    };
    let single = ops.len() == 1;
    for event in events_of(steps, RECEIVER) {
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
    History::redelivery_allowed(ops, &expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::redelivered::lab::{ON_SERVERS, ON_SQLITE};

    #[test]
    fn a_replay_is_allowed_and_the_unkeyed_double_effect_is_expected_only_there() {
        let on_sqlite = [Event::Commit {
            db: "queue".into(),
            what: "enqueue of message M1".into(),
        }];
        let on_servers = [Event::End { code: 0 }];
        let keyed = [
            Event::Applied { item: "M1".into() },
            Event::Duplicate { item: "M1".into() },
        ];
        let unkeyed = [
            Event::Applied { item: "-".into() },
            Event::Applied { item: "-".into() },
        ];
        for (lab, enqueue) in [(&ON_SQLITE, &on_sqlite[..]), (&ON_SERVERS, &on_servers[..])] {
            let run = |scenario: &str, receiver: &[Event]| {
                let steps = [
                    Seen::of(Enqueue::NAME, enqueue),
                    Seen::of(RECEIVER, receiver),
                ];
                judge(lab, scenario, &steps).unwrap()
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
}
