//! Lab 13's scenarios in Jepsen's words. Each intent is an operation on its idempotency key:
//! `ok` once a dispatcher committed its receipt (the acknowledgement made durable), `fail`
//! when the receiver refused its body (409), `info` otherwise (a crash, an unknown outcome
//! held for reconciliation). Each request the receiver took for the key (applied, replayed,
//! refused) is a delivery; each effect it committed is an effect. An unkeyed receiver cannot
//! name the key of an effect: its effects belong to the scenario's one intent.
//!
//! A replayed request is a `duplicate-delivery`, which the key absorbs (allowed). A second
//! effect is a `duplicate`: the unkeyed design and a key forgotten before the retry
//! (key-expired) show it on purpose, so those scenarios expect it.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, named, History, Seen};
use crate::events::Event;
use crate::labs::http_dispatch::roles::{Dispatcher, Intent, Receiver};
use crate::role::Role;

/// The scenarios that show a second effect on purpose.
const EXPECT_DUPLICATE: &[&str] = &[
    "unkeyed-dispatcher-crash",
    "unkeyed-receiver-crash",
    "key-expired",
];

/// The receiver took a request for `item`: a delivery of its operation, and its effect when
/// `effect`. An unkeyed request (`-`) belongs to the one operation when there is only one.
pub fn delivered(ops: &mut [Op], item: &str, effect: bool) {
    let single = ops.len() == 1;
    let found = ops
        .iter()
        .position(|op| op.item == item)
        .or_else(|| (item == "-" && single).then_some(0));
    if let Some(at) = found {
        ops[at].deliveries += 1;
        ops[at].effects += u32::from(effect);
    }
}

pub fn history(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let mut ops: Vec<Op> = Vec::new();
    for event in events_of(steps, Intent::NAME) {
        if let Event::Commit { db, what } = event {
            if let Some(key) = named(what, "key").filter(|_| db == "intents") {
                ops.push(Op {
                    item: key,
                    outcome: Outcome::Info,
                    deliveries: 0,
                    effects: 0,
                });
            }
        }
    }
    let mut refused: Vec<String> = Vec::new();
    for event in events_of(steps, Dispatcher::NAME) {
        let (key, outcome) = match event {
            Event::Commit { db, what } if db == "receipts" => (named(what, "key"), Outcome::Ok),
            Event::Response { item, status } if *status == 409 => {
                (Some(item.clone()), Outcome::Fail)
            }
            _ => continue,
        };
        let Some(op) = key.and_then(|k| ops.iter_mut().find(|op| op.item == k)) else {
            continue;
        };
        if op.outcome != Outcome::Ok {
            op.outcome = outcome;
        }
    }
    for event in events_of(steps, Receiver::NAME) {
        let (item, effect) = match event {
            Event::Applied { item } => (item, true),
            Event::Duplicate { item } => (item, false),
            Event::Rejected { item, .. } => {
                refused.push(item.clone());
                (item, false)
            }
            _ => continue,
        };
        delivered(&mut ops, item, effect);
    }
    // A body the receiver refused (409) ran nothing: the key's effect is another request's
    // (key-conflict's earlier request with the other body), not this operation's.
    for op in ops.iter_mut() {
        if op.outcome == Outcome::Fail && refused.contains(&op.item) {
            op.effects = 0;
        }
    }
    let expected: &[Anomaly] = match EXPECT_DUPLICATE.contains(&scenario) {
        true => &[Anomaly::Duplicate],
        false => &[],
    };
    Some(History::redelivery_allowed(ops, expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::http_dispatch::lab::ON_SQLITE;

    #[test]
    fn a_replay_is_allowed_and_the_unkeyed_double_effect_is_expected_where_shown() {
        let intent = [Event::commit("intents", "intent 1 key K1")];
        let receipt = [Event::commit("receipts", "receipt key K1")];
        let keyed = [
            Event::Applied { item: "K1".into() },
            Event::Duplicate { item: "K1".into() },
        ];
        let unkeyed = [
            Event::Applied { item: "-".into() },
            Event::Applied { item: "-".into() },
        ];
        let run = |scenario: &str, receiver: &[Event]| {
            let steps = [
                Seen::of(Intent::NAME, &intent),
                Seen::of(Receiver::NAME, receiver),
                Seen::of(Dispatcher::NAME, &receipt),
            ];
            judge(&ON_SQLITE, scenario, &steps).unwrap()
        };
        let f = run("keyed-dispatcher-crash", &keyed);
        assert!(f.ok && f.bad_anomalies.is_empty(), "{f:?}");
        assert_eq!(f.summary, "duplicate-delivery x1 (allowed)");
        let f = run("unkeyed-dispatcher-crash", &unkeyed);
        assert!(f.ok, "the scenario shows its duplicate on purpose: {f:?}");
        assert_eq!(f.expected_anomalies, [Anomaly::Duplicate]);
        // The same double effect where the design must prevent it fails the scenario.
        let f = run("keyed-dispatcher-crash", &unkeyed);
        assert!(!f.ok);
        // And a scenario that expects a duplicate fails when none shows.
        let f = run("unkeyed-dispatcher-crash", &keyed);
        assert!(!f.ok);
    }
}
