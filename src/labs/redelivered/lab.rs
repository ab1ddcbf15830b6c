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

use super::points;
use super::roles::{self, Consumer, Enqueue, Variant, Verify, VARIANTS};
use super::schema::{CONSUMER, QUEUE};
use super::stack::Stack;
use super::stages;
use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::stack::StackDef;
use crate::engine::state::server::ServerStore;
use crate::engine::{crash_mode, Lab, LabStack};
use crate::fail::EXIT_OK;
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::role::{entry, Role};

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
    readback: super::state::replayed,
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

pub static SERVERS: ServerStore = ServerStore {
    schemas: &[&CONSUMER],
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

pub const MESSAGE: (&str, &str) = ("M1", r#"{"amount":25,"to":"R1"}"#);
/// A's lease on SQLite: short, so B waits little.
pub const LEASE_MS: u64 = 300;
pub const CALL_TIMEOUT_MS: u64 = 5_000;

/// How long consumer A, B and C each wait for the message. On SQLite B waits out A's lease,
/// at most 10 s (bounded, never reached: A is stopped and cannot renew). On the servers B
/// asks the broker again for up to 8 s: past its heartbeat timeout (about two intervals)
/// with room to spare, inside the driver's default step timeout (10 s).
pub const fn waits(stack: Stack) -> [u64; 3] {
    match stack {
        Stack::Sqlite => [10_000, 10_000, 10_000],
        Stack::Servers => [0, 8_000, 0],
    }
}

/// The line of A's ack that did nothing.
fn lost(stack: Stack) -> &'static str {
    match stack {
        Stack::Sqlite => "LEASE-LOST message M1",
        Stack::Servers => "CHANNEL-LOST message M1",
    }
}

fn verify(stack: Stack, scenario: &str, step: &str) -> Step {
    let stage = stages::named(stack, &format!("{scenario}.{step}"));
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
    let [a, b, c] = waits(stack);
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

/// The scenarios that show the second effect on purpose.
pub fn expects_duplicate(scenario: &str) -> bool {
    scenario.starts_with("unkeyed-")
}
