//! Lab f1's scenarios in Jepsen's words. Each Outbox row a writer committed is an operation,
//! `ok` once its commit was reported; each row the relay published is a delivery and an
//! effect. Operations are in commit order: a writer the pause nemesis stopped inside its
//! transaction commits only when continued, after the steps that ran while it was stopped,
//! so its row comes after every other writer's. `last-id`'s row 7, committed last and never
//! published, is `unseen`: its scenario expects exactly that.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{named, History, Seen};
use crate::events::Event;
use crate::labs::relay_gap::roles::{Relay, Write};
use crate::role::Role;

pub fn history(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let mut first: Vec<Op> = Vec::new();
    let mut late: Vec<Op> = Vec::new();
    for seen in steps.iter().filter(|s| s.phase == Write::NAME) {
        let paused = seen
            .events
            .iter()
            .any(|e| matches!(e, Event::Paused { .. }));
        for event in seen.events {
            if let Event::Commit { db, what } = event {
                if let Some(id) = named(what, "message").filter(|_| db == "outbox") {
                    let op = Op {
                        item: id,
                        outcome: Outcome::Ok,
                        deliveries: 0,
                        effects: 0,
                    };
                    match paused {
                        true => late.push(op),
                        false => first.push(op),
                    }
                }
            }
        }
    }
    let mut ops = first;
    ops.extend(late);
    for seen in steps.iter().filter(|s| s.phase == Relay::NAME) {
        for event in seen.events {
            let (item, effect) = match event {
                Event::Applied { item } => (item, true),
                Event::Duplicate { item } => (item, false),
                _ => continue,
            };
            if let Some(op) = ops.iter_mut().find(|op| op.item == *item) {
                op.deliveries += 1;
                op.effects += u32::from(effect);
            }
        }
    }
    let expected: &[Anomaly] = match super::lab::expects_unseen(scenario) {
        true => &[Anomaly::Unseen],
        false => &[],
    };
    Some(History::redelivery_allowed(ops, expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::relay_gap::lab::ON_SERVERS;

    fn commit(id: &str, by: &str) -> Event {
        Event::commit("outbox", &format!("write of message {id} by {by}"))
    }

    #[test]
    fn the_late_row_never_published_is_unseen_and_expected_only_of_last_id() {
        let a = [
            Event::Paused {
                point: "gap-write.after-insert".into(),
                hit: 1,
            },
            commit("7", "A"),
        ];
        let b = [commit("8", "B")];
        let only_8 = [Event::Applied { item: "8".into() }];
        let then_7 = [Event::Applied { item: "7".into() }];
        let run = |scenario: &str, second: &[Event]| {
            let steps = [
                Seen::of(Write::NAME, &a),
                Seen::of(Write::NAME, &b),
                Seen::of(Relay::NAME, &only_8),
                Seen::of(Relay::NAME, second),
            ];
            judge(&ON_SERVERS, scenario, &steps).unwrap()
        };
        let f = run("last-id", &[]);
        assert!(f.ok, "{f:?}");
        assert_eq!(f.bad_anomalies.len(), 1);
        assert_eq!(
            (f.bad_anomalies[0].anomaly, f.bad_anomalies[0].item.as_str()),
            (Anomaly::Unseen, "7")
        );
        assert!(run("pending-status", &then_7).ok);
        // The loss where the design must not lose fails the scenario; so does no loss
        // where the scenario shows one.
        assert!(!run("pending-status", &[]).ok);
        assert!(!run("last-id", &then_7).ok);
    }
}
