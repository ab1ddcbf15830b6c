//! Lab f2's run in Jepsen's words: each message the producer committed is an operation,
//! acknowledged (`ok`) by that commit; each time the consumer or the replay handed it to the
//! receiver (credited, refused, or absorbed as already credited) is a delivery; each credit
//! committed for it is an effect. Retries and a replay deliver a message several times:
//! `duplicate-delivery` is allowed (the receiver's key absorbs a second credit); a second
//! credit would be a `duplicate`. A message never credited by the end while nothing after it
//! was is `unseen`: what retry-forever's stall shows for the poison and every message behind
//! it, within the consumer's bound.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{named, History, Seen};
use crate::events::Event;

use super::model::Variant;
use super::roles::{Consume, Produce, Replay};
use crate::role::Role;

/// The message ids a producer's commit names: `messages M1 M2 M3`.
pub fn produced(what: &str) -> Vec<String> {
    match what.strip_prefix("messages ") {
        Some(rest) => rest.split_whitespace().map(str::to_string).collect(),
        None => Vec::new(),
    }
}

/// The operations of a run from its processes' events, in the producer's order.
pub fn ops<'a>(events: impl Iterator<Item = (&'a str, &'a Event)>) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    let events: Vec<(&str, &Event)> = events.collect();
    for (role, event) in &events {
        if let (Produce::NAME, Event::Commit { db, what }) = (*role, *event) {
            for m in produced(what).into_iter().filter(|_| db == "queue") {
                if !ops.iter().any(|op| op.item == m) {
                    ops.push(Op {
                        item: m,
                        outcome: Outcome::Ok,
                        deliveries: 0,
                        effects: 0,
                    });
                }
            }
        }
    }
    for (role, event) in &events {
        if *role != Consume::NAME && *role != Replay::NAME {
            continue;
        }
        let (item, effect) = match event {
            Event::Applied { item } | Event::Duplicate { item } | Event::Rejected { item, .. } => {
                (Some(item.clone()), false)
            }
            Event::Commit { db, what } if db == "receiver" => (named(what, "message"), true),
            _ => continue,
        };
        let Some(op) = item.and_then(|m| ops.iter_mut().find(|op| op.item == m)) else {
            continue;
        };
        match effect {
            true => op.effects += 1,
            false => op.deliveries += 1,
        }
    }
    ops
}

pub fn history(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let ops = ops(steps
        .iter()
        .flat_map(|s| s.events.iter().map(move |e| (s.phase, e))));
    // The stall of retry-forever is its scenario's point: the messages it never reached
    // within its bound are unseen, on purpose.
    let expected = match Variant::from_name(scenario) {
        Some(Variant::RetryForever) => vec![Anomaly::Unseen],
        _ => Vec::new(),
    };
    Some(History::redelivery_allowed(ops, &expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::jepsen::check;

    fn rejected(m: &str) -> Event {
        Event::Rejected {
            item: m.into(),
            reason: "CHECK constraint failed: amount_limit".into(),
        }
    }

    fn applied(m: &str) -> [Event; 2] {
        [
            Event::commit("receiver", &format!("credit of message {m} amount 5")),
            Event::Applied { item: m.into() },
        ]
    }

    #[test]
    fn a_stall_leaves_the_poison_and_everything_behind_it_unseen() {
        let produce = [Event::commit("queue", "messages M1 M2 M3")];
        let mut consume = applied("M1").to_vec();
        consume.extend([rejected("M2"), rejected("M2")]);
        let run: Vec<(&str, &Event)> = produce
            .iter()
            .map(|e| (Produce::NAME, e))
            .chain(consume.iter().map(|e| (Consume::NAME, e)))
            .collect();
        let h = ops(run.into_iter());
        assert_eq!(h.len(), 3);
        assert_eq!((h[1].deliveries, h[1].effects), (2, 0));
        let f = check(&h, &[Anomaly::DuplicateDelivery]);
        let bad: Vec<(Anomaly, &str)> = f
            .bad_anomalies
            .iter()
            .map(|f| (f.anomaly, f.item.as_str()))
            .collect();
        assert_eq!(
            bad,
            [(Anomaly::Unseen, "M2"), (Anomaly::Unseen, "M3")],
            "{f:?}"
        );
    }

    #[test]
    fn a_parked_message_replayed_once_after_the_rest_is_clean() {
        let produce = [Event::commit("queue", "messages M1 M2 M3")];
        let mut consume = applied("M1").to_vec();
        consume.extend([rejected("M2"), rejected("M2"), rejected("M2")]);
        consume.extend(applied("M3"));
        let mut replay = applied("M2").to_vec();
        // A replay that ran again after a crash: absorbed by the receiver's key.
        replay.push(Event::Duplicate { item: "M2".into() });
        let run: Vec<(&str, &Event)> = produce
            .iter()
            .map(|e| (Produce::NAME, e))
            .chain(consume.iter().map(|e| (Consume::NAME, e)))
            .chain(replay.iter().map(|e| (Replay::NAME, e)))
            .collect();
        let h = ops(run.into_iter());
        assert_eq!((h[1].deliveries, h[1].effects), (5, 1));
        let f = check(&h, &[Anomaly::DuplicateDelivery]);
        assert!(f.valid(), "{f:?}");
        // Not replayed: M2 is a lost write, M3 (acknowledged after it) was applied.
        let h = ops(produce
            .iter()
            .map(|e| (Produce::NAME, e))
            .chain(consume.iter().map(|e| (Consume::NAME, e))));
        let f = check(&h, &[Anomaly::DuplicateDelivery]);
        assert_eq!(f.bad_anomalies[0].anomaly, Anomaly::LostWrite);
        assert_eq!(produced("messages M1 M2"), ["M1", "M2"]);
        assert!(produced("ack of message M1").is_empty());
    }
}
