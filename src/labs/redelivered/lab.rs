//! Lab f3 (redelivered) as data: one story over two stacks. The driver runs this; the audit
//! re-checks evidence against it.
//!
//! Each scenario, on fresh stores: one message is enqueued; lab 13's receiver runs in the
//! background; consumer A takes the message and the pause nemesis stops it at a point inside
//! its work (before or after its call); the queue hands the message to consumer B, which
//! calls and acks; then A is continued, makes or has made its call, and its ack does
//! nothing. Keyed, the receiver replays the second call: one effect. Unkeyed, it runs it:
//! two effects, the `duplicate` the scenario expects.
//!
//! What differs per stack is how the message passes to B. On SQLite A's short lease expires
//! and B waits it out (A's ack is refused: `LEASE-LOST`). On the servers A's heartbeats stop,
//! the broker closes its connection and requeues the message, and B takes it flagged
//! `redelivered` (A's ack does nothing: `CHANNEL-LOST`).

use super::history::MESSAGE;
use super::points;
use super::roles::{self, Consumer, Enqueue, Variant, Verify, VARIANTS};
use super::schema::{CONSUMER, QUEUE};
use super::stack::Stack;
use super::stages;
use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::stack::StackDef;
use crate::engine::{crash_mode, Databases, Lab, LabStack};
use crate::fail::EXIT_OK;
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::role::{entry, Role, Stage};

pub static LAB: Lab = Lab {
    id: "f3",
    slug: "redelivered",
    title:
        "Lease expired while working: the redelivered message's side effect runs twice unless keyed",
    roles: &[entry::<Enqueue>(), entry::<Consumer>(), entry::<Verify>()],
    stacks: &[&ON_SQLITE, &ON_SERVERS],
};

const ROLES: &[&str] = &[Enqueue::NAME, Consumer::NAME, Verify::NAME];

pub static ON_SQLITE: LabStack = LabStack {
    lab: &LAB,
    title:
        "Lease expired while working: the redelivered message's side effect runs twice unless keyed",
    points: points::of(Stack::Sqlite),
    databases: Stack::Sqlite.databases(),
    scenarios: || scenarios(Stack::Sqlite),
    stages: stages::of(Stack::Sqlite),
    store: crate::engine::state::SQLITE,
    roles: ROLES,
    load: None,
    explore: Some(&super::explore::ON_SQLITE),
    history: super::history::on_sqlite,
    schemas: &[&QUEUE, &RECEIVER],
    readback: replayed,
    replay: super::replay::ON_SQLITE,
    stack: None,
    crash_modes: crash_mode::ON_FILES_NO_CUT,
};

/// The servers: one PostgreSQL database for the consumers' own record, one durable queue.
/// Lab 13's receiver keeps its ledger in its SQLite file in the work directory, as on SQLite.
pub static STACK: StackDef = StackDef {
    name: "postgres-rabbitmq",
    databases: &["consumer"],
    queues: &["messages"],
    pg_settings: &[],
};

pub static ON_SERVERS: LabStack = LabStack {
    lab: &LAB,
    title: "Channel closed while working: the redelivered message's side effect runs twice unless keyed",
    points: points::of(Stack::Servers),
    databases: Stack::Servers.databases(),
    scenarios: || scenarios(Stack::Servers),
    stages: stages::of(Stack::Servers),
    store: &super::store::STORE,
    roles: ROLES,
    load: None,
    explore: Some(&super::explore::ON_SERVERS),
    history: super::history::on_servers,
    schemas: &[&CONSUMER, &RECEIVER],
    // The queue's part of a readback (its ready messages) is the broker's and is not
    // replayed; the store's digests are checked instead.
    readback: |_, _| None,
    replay: super::replay::ON_SERVERS,
    stack: Some(&STACK),
    crash_modes: crash_mode::ON_SERVERS,
};

/// The line of A's ack that did nothing.
fn lost(stack: Stack) -> &'static str {
    match stack {
        Stack::Sqlite => "LEASE-LOST message M1",
        Stack::Servers => "CHANNEL-LOST message M1",
    }
}

fn verify(stack: Stack, scenario: &str, step: &str) -> Step {
    let stage = Stage::named(stages::of(stack), &format!("{scenario}.{step}"));
    Step::of(
        step,
        &Verify::of(stack, Some(stage.name)).argv(),
        EXIT_OK,
        Expect::Readback(stage),
    )
}

/// One scenario: A paused at `at`, B takes the message, A continued.
fn paused(stack: Stack, variant: &str, at: Point, when: &str) -> Scenario {
    let name = format!("{variant}-pause-{when}-call");
    let (id, body) = MESSAGE;
    let [a, b, c] = stack.waits();
    let consumer = |who, wait_ms, pause_at| {
        Consumer::of(stack, who, Variant::named(variant), wait_ms, pause_at).argv()
    };
    let steps = vec![
        Step::of(
            "enqueue",
            &Enqueue::of(stack, id, body).argv(),
            EXIT_OK,
            Expect::Exit,
        ),
        Step::of(
            "receiver",
            &roles::receiver(Variant::named(variant), None).argv(),
            EXIT_OK,
            Expect::Output("STOPPED receiver"),
        )
        .in_background(Background {
            ready: Ready::Listening,
            stop_after: None,
            stop: Stop::Term,
        }),
        Step::of(
            "consumer-a",
            &consumer("A", a, Some(at)),
            EXIT_OK,
            Expect::Output(lost(stack)),
        )
        .in_background(Background {
            ready: Ready::Paused,
            stop_after: Some("during-pause"),
            stop: Stop::Continue,
        }),
        Step::of(
            "consumer-b",
            &consumer("B", b, None),
            EXIT_OK,
            Expect::Output("ACKED message M1 by B"),
        ),
        verify(stack, &name, "during-pause"),
        // A was continued after `during-pause`; a third consumer finds nothing owed.
        Step::of(
            "consumer-c",
            &consumer("C", c, None),
            EXIT_OK,
            Expect::Output("EMPTY nothing to consume"),
        ),
        verify(stack, &name, "final"),
    ];
    Scenario::named(&name, steps)
}

/// Both variants, A paused before and after its call.
pub fn scenarios(stack: Stack) -> Vec<Scenario> {
    let mut all = Vec::new();
    for variant in VARIANTS {
        all.push(paused(stack, variant, points::taken(stack), "before"));
        all.push(paused(stack, variant, points::CONSUMER_AFTER_CALL, "after"));
    }
    all
}

/// The readback of `redeliver-verify` on the replayed files (engine::LabStack::readback).
fn replayed(phase: &str, dbs: &Databases<'_>) -> Option<Result<serde_json::Value, String>> {
    (phase == Verify::NAME).then(|| {
        super::state::state_of(dbs.get("queue").copied(), dbs.get("receiver").copied())
            .map(|s| serde_json::to_value(s).expect("a readback serializes"))
            .map_err(|e| format!("reading the replayed files: {e:#}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::jepsen::Anomaly;
    use crate::engine::observed::{judge, Seen};
    use crate::events::Event;

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
                    Seen::of(roles::RECEIVER, receiver),
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
