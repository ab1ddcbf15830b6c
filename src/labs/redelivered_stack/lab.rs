//! Lab f3 (redelivered) on the server stack as data: its stores, its points, its scenarios
//! and the counts each readback must show. The driver runs this; the audit re-checks evidence
//! against it.
//!
//! Each scenario, on fresh stores: one persistent message is published to a durable queue;
//! lab 13's receiver runs in the background; consumer A takes the message (manual ack, a 1 s
//! heartbeat) and the pause nemesis stops it at a point inside its work (before or after its
//! call); the broker hears no heartbeat from A, closes its connection and requeues the
//! message; consumer B takes it (flagged `redelivered`), calls and acks; A is continued,
//! makes or has made its call, and its ack does nothing (`CHANNEL-LOST`). Keyed, the
//! receiver replays the second call: one effect. Unkeyed, it runs it: two effects, the
//! `duplicate` the scenario expects.

use super::points::{self, POINTS};
use super::roles::{self, Consume};
use super::schema::CONSUMER;
pub use super::stages::{stage, STAGES};
use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::stack::StackDef;
use crate::engine::state::server::ServerStore;
use crate::engine::{crash_mode, LabStack};
use crate::fail::EXIT_OK;
use crate::labs::http_dispatch::schema::RECEIVER;

/// The servers: one PostgreSQL database for the consumers' own record, one durable queue.
/// Lab 13's receiver keeps its ledger in its SQLite file in the work directory, as on SQLite.
pub static STACK: StackDef = StackDef {
    name: "postgres-rabbitmq",
    databases: &["consumer"],
    queues: &["messages"],
    pg_settings: &[],
};

pub static SERVERS: ServerStore = ServerStore {
    schemas: &[&CONSUMER],
};

pub static ON_SERVERS: LabStack = LabStack {
    lab: &crate::labs::redelivered::lab::LAB,
    title: "Channel closed while working: the redelivered message's side effect runs twice unless keyed",
    points: POINTS,
    databases: &["consumer", "messages", "receiver.db"],
    scenarios,
    stages: STAGES,
    store: &super::store::STORE,
    roles: &[roles::ENQUEUE, roles::CONSUMER, roles::VERIFY],
    load: None,
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[&CONSUMER, &RECEIVER],
    readback: super::history::readback,
    replay: super::history::REPLAY,
    cli: Some(crate::engine::RoleCli {
        augment: super::commands::augment,
        run: super::route::run,
    }),
    stack: Some(&STACK),
    crash_modes: crash_mode::ON_SERVERS,
};

pub const MESSAGE: (&str, &str) = ("M1", r#"{"amount":25,"to":"R1"}"#);
/// A's heartbeat: short, so the broker gives up on the stopped consumer in seconds.
pub const HEARTBEAT_S: u16 = 1;
/// How long B asks for the message again: past the broker's heartbeat timeout (about two
/// intervals) with room to spare, inside the driver's default step timeout (10 s).
pub const WAIT_MS: u64 = 8_000;
pub const CALL_TIMEOUT_MS: u64 = 5_000;

fn consume(
    consumer: &'static str,
    variant: &'static str,
    wait_ms: u64,
    pause_at: Option<Point>,
) -> Consume {
    Consume {
        consumer,
        variant,
        heartbeat_s: HEARTBEAT_S,
        wait_ms,
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

/// One scenario: A paused at `at`, the broker closes its connection, B takes the redelivery,
/// A continued.
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
            &roles::consumer(&consume("A", variant, 0, Some(at))),
            EXIT_OK,
            Expect::Output("CHANNEL-LOST message M1"),
        )
        .in_background(Background {
            ready: Ready::Paused,
            stop_after: Some("during-pause"),
            stop: Stop::Continue,
        }),
        Step::of(
            "consumer-b",
            &roles::consumer(&consume("B", variant, WAIT_MS, None)),
            EXIT_OK,
            Expect::Output("ACKED message M1 by B"),
        ),
        verify(&name, "during-pause"),
        // A was continued after `during-pause`; a third consumer finds nothing owed.
        Step::of(
            "consumer-c",
            &roles::consumer(&consume("C", variant, 0, None)),
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
        all.push(paused(variant, points::CONSUMER_AFTER_DELIVER, "before"));
        all.push(paused(variant, points::CONSUMER_AFTER_CALL, "after"));
    }
    all
}

/// The scenarios that show the second effect on purpose.
pub fn expects_duplicate(scenario: &str) -> bool {
    scenario.starts_with("unkeyed-")
}
