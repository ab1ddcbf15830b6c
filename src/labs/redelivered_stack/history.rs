//! Lab f3 on the stack in Jepsen's words and in the audit's replay. The message is an
//! operation, `ok` once the enqueue ended 0 (the broker confirmed the persistent publish).
//! Each call the receiver took for it (applied or replayed) is a delivery; each effect it
//! committed an effect. Unkeyed calls carry no key (`-`): with one message per scenario they
//! are that message's.
//!
//! A replayed call is a `duplicate-delivery`, which the key absorbs (allowed). A second
//! effect is a `duplicate`: the unkeyed scenarios show it on purpose and expect it.

use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::{events_of, History, Seen};
use crate::engine::replay::claims_api::{LabReplay, RoleClaims};
use crate::events::Event;

use super::roles;

pub fn history(scenario: &str, steps: &[Seen<'_>]) -> Option<History> {
    let (id, _) = super::lab::MESSAGE;
    let confirmed = events_of(steps, roles::ENQUEUE).any(|e| matches!(e, Event::End { code: 0 }));
    let mut op = Op {
        item: id.to_string(),
        outcome: if confirmed {
            Outcome::Ok
        } else {
            Outcome::Info
        },
        deliveries: 0,
        effects: 0,
    };
    for event in events_of(steps, roles::RECEIVER) {
        let (item, effect) = match event {
            Event::Applied { item } => (item, true),
            Event::Duplicate { item } => (item, false),
            _ => continue,
        };
        if item == id || item == "-" {
            op.deliveries += 1;
            op.effects += u32::from(effect);
        }
    }
    let expected = match super::lab::expects_duplicate(scenario) {
        true => vec![Anomaly::Duplicate],
        false => Vec::new(),
    };
    Some(History::redelivery_allowed(vec![op], &expected))
}

/// The readback on replayed databases: None, since its queue part (the ready messages) is
/// the broker's and is not replayed; the store's digests are checked instead.
pub fn readback(
    _phase: &str,
    _dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    None
}

/// What the audit's replay needs to know of these roles: the lines they print besides `SQL`,
/// `COMMITTED` and the crash lines (`AMQP` is the broker's trace).
pub const REPLAY: LabReplay = LabReplay {
    // Lab 13's receiver serves requests on several workers.
    threaded: &[roles::RECEIVER],
    raw_replies: &[],
    lines: &[
        // Lab 13's receiver.
        "READY",
        "REQUEST",
        "ACCEPT",
        "STOPPED",
        "EXPIRED",
        "RECEIVER",
        // This lab's roles.
        "ENQUEUED",
        "CONNECTED",
        "EMPTY",
        "WAITING",
        "RESPONSE",
        "ACKED",
        "CHANNEL-LOST",
        "DECLARED",
        "AMQP",
    ],
    claims,
};

/// Lab 13's receiver's REQUEST lines against its replayed effects, as lab 13 checks them; the
/// consumer's lines are checked against the readbacks by the scenario's stages.
fn claims(c: &mut RoleClaims<'_>) {
    if c.proc.step.phase == roles::RECEIVER {
        crate::labs::http_dispatch::replay::claims(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::observed::judge;
    use crate::labs::redelivered_stack::lab::ON_SERVERS;

    #[test]
    fn a_replay_is_allowed_and_the_unkeyed_double_effect_is_expected_only_there() {
        let enqueue = [Event::End { code: 0 }];
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
                Seen::of(roles::ENQUEUE, &enqueue),
                Seen::of(roles::RECEIVER, receiver),
            ];
            judge(&ON_SERVERS, scenario, &steps).unwrap()
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
