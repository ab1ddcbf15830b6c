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
use crate::labs::http_dispatch::history::delivered;
use crate::role::Role;

/// The one message of every scenario and explore case: its id and body.
pub const MESSAGE: (&str, &str) = ("M1", r#"{"amount":25,"to":"R1"}"#);

/// The scenarios that show the second effect on purpose.
pub fn expects_duplicate(scenario: &str) -> bool {
    scenario.starts_with("unkeyed-")
}

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
            vec![op(MESSAGE.0.to_string(), outcome)]
        }
    };
    for event in events_of(steps, RECEIVER) {
        let (item, effect) = match event {
            Event::Applied { item } => (item, true),
            Event::Duplicate { item } => (item, false),
            _ => continue,
        };
        delivered(&mut ops, item, effect);
    }
    let expected = match expects_duplicate(scenario) {
        true => vec![Anomaly::Duplicate],
        false => Vec::new(),
    };
    History::redelivery_allowed(ops, &expected)
}
