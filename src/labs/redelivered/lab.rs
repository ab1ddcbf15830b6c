//! Lab f3 (redelivered) as data: its files, its points, its scenarios and the counts each
//! readback must show. The driver runs this; the audit re-checks evidence against it.
//!
//! Each scenario, in its own work directory: one message is queued; lab 13's receiver runs in
//! the background; consumer A claims the message with a short lease and the pause nemesis
//! stops it at a point inside its work (before or after its call); consumer B waits out the
//! lease, claims the message, calls and acks; then A is continued, makes or has made its call,
//! and its ack is refused. Keyed, the receiver replays the second call: one effect. Unkeyed,
//! it runs it: two effects, the `duplicate` the scenario expects.

use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::{crash_mode, Lab, LabStack};
use crate::fail::EXIT_OK;
use crate::labs::redelivered::points::{self, POINTS};
use crate::labs::redelivered::roles::{self, Consume};
pub use crate::labs::redelivered::stages::{stage, STAGES};

pub static LAB: Lab = Lab {
    id: "f3",
    slug: "redelivered",
    title:
        "Lease expired while working: the redelivered message's side effect runs twice unless keyed",
    roles: &[],
    stacks: &[&ON_SQLITE, &crate::labs::redelivered_stack::lab::ON_SERVERS],
};

pub static ON_SQLITE: LabStack = LabStack {
    lab: &LAB,
    title:
        "Lease expired while working: the redelivered message's side effect runs twice unless keyed",
    points: POINTS,
    databases: &["queue.db", "receiver.db"],
    scenarios,
    stages: STAGES,
    store: crate::engine::state::SQLITE,
    roles: &[roles::ENQUEUE, roles::CONSUMER, roles::VERIFY],
    load: None,
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[
        &super::schema::QUEUE,
        &crate::labs::http_dispatch::schema::RECEIVER,
    ],
    readback: super::readback::replayed,
    replay: super::replay::REPLAY,
    cli: Some(crate::engine::RoleCli {
        augment: super::commands::augment,
        run: super::route::run,
    }),
    stack: None,
    crash_modes: crash_mode::ON_FILES_NO_CUT,
};

pub const MESSAGE: (&str, &str) = ("M1", r#"{"amount":25,"to":"R1"}"#);
/// A's lease: short, so B waits little; B waits out at most `WAIT_MS` (bounded, never
/// reached: A is stopped and cannot renew).
pub const LEASE_MS: u64 = 300;
pub const WAIT_MS: u64 = 10_000;
pub const CALL_TIMEOUT_MS: u64 = 5_000;

fn consume(consumer: &'static str, variant: &'static str, pause_at: Option<Point>) -> Consume {
    Consume {
        consumer,
        variant,
        lease_ms: LEASE_MS,
        wait_ms: WAIT_MS,
        timeout_ms: CALL_TIMEOUT_MS,
        pause_at,
    }
}

fn verify(scenario: &str, step: &str) -> Step {
    let stage = stage(&format!("{scenario}.{step}")).expect("every readback step has a stage");
    Step::of(
        step,
        &roles::verify(true, Some(stage.name)),
        EXIT_OK,
        Expect::Readback(stage),
    )
}

/// One scenario: A paused at `at`, B takes the expired lease, A continued.
fn paused(variant: &'static str, at: Point, when: &str) -> Scenario {
    let name = format!("{variant}-pause-{when}-call");
    let (id, body) = MESSAGE;
    let steps = vec![
        Step::of("enqueue", &roles::enqueue(id, body), EXIT_OK, Expect::Exit),
        Step::of(
            "receiver",
            &roles::receiver(variant, None),
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
            &roles::consumer(&consume("A", variant, Some(at))),
            EXIT_OK,
            Expect::Output("LEASE-LOST message M1"),
        )
        .in_background(Background {
            ready: Ready::Paused,
            stop_after: Some("during-pause"),
            stop: Stop::Continue,
        }),
        Step::of(
            "consumer-b",
            &roles::consumer(&consume("B", variant, None)),
            EXIT_OK,
            Expect::Output("ACKED message M1 by B"),
        ),
        verify(&name, "during-pause"),
        // A was continued after `during-pause`; a third consumer finds nothing owed.
        Step::of(
            "consumer-c",
            &roles::consumer(&consume("C", variant, None)),
            EXIT_OK,
            Expect::Output("EMPTY nothing to consume"),
        ),
        verify(&name, "final"),
    ];
    Scenario::named(&name, steps)
}

/// Both variants, A paused before and after its call.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    for variant in roles::VARIANTS {
        all.push(paused(variant, points::CONSUMER_AFTER_CLAIM, "before"));
        all.push(paused(variant, points::CONSUMER_AFTER_CALL, "after"));
    }
    all
}

/// The scenarios that show the second effect on purpose.
pub fn expects_duplicate(scenario: &str) -> bool {
    scenario.starts_with("unkeyed-")
}
