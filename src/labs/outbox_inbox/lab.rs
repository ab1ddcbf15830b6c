//! Lab 14 (outbox-inbox) as data: one story over two stacks. The scenario is written once:
//! the sender crashes after its commit, the publisher once the transport holds M1 and before
//! its mark (so M1 is sent twice), the consumer after its receiver commit and before its ack
//! (so a delivery comes again); then an upstream sends M1 with another amount. The end: 2
//! deliveries, 1 effect, ledger 25, the conflicting payload rejected. What differs per stack
//! is its data: its stores, the publisher's crash point, its stages' fields.

use super::points::{self, held};
use super::roles::{Consumer, Enqueue, Publisher, Sender, Verify};
use super::schema::{PG_RECEIVER, PG_SENDER, QUEUE, RECEIVER, SENDER};
use super::stack::Stack;
use super::stages;
use super::variant::Variant;
use crate::crash::Point;
use crate::engine::scenario::{Expect, Scenario, Step};
use crate::engine::stack::StackDef;
use crate::engine::state::server::ServerStore;
use crate::engine::{crash_mode, Databases, Lab, LabStack};
use crate::fail::{EXIT_CONFLICT, EXIT_OK};
use crate::role::{entry, Argv, Role, Stage};

pub static LAB: Lab = Lab {
    id: "14",
    slug: "outbox-inbox",
    title: "Outbox, durable SQL queue, Inbox: 2 deliveries, 1 effect",
    roles: &[
        entry::<Sender>(),
        entry::<Publisher>(),
        entry::<Consumer>(),
        entry::<Enqueue>(),
        entry::<Verify>(),
    ],
    stacks: &[&ON_SQLITE, &ON_SERVERS],
};

const ROLES: &[&str] = &[
    Sender::NAME,
    Publisher::NAME,
    Consumer::NAME,
    Enqueue::NAME,
    Verify::NAME,
];

pub static ON_SQLITE: LabStack = LabStack {
    lab: &LAB,
    title: "Outbox, durable SQL queue, Inbox: 2 deliveries, 1 effect",
    points: points::of(Stack::Sqlite),
    databases: Stack::Sqlite.databases(),
    scenarios: || scenarios(Stack::Sqlite),
    stages: stages::of(Stack::Sqlite),
    store: crate::engine::state::SQLITE,
    roles: ROLES,
    load: Some(&super::load::ON_SQLITE),
    explore: Some(&super::explore::ON_SQLITE),
    history: super::history::on_sqlite,
    schemas: &[&SENDER, &QUEUE, &RECEIVER],
    readback: replayed,
    replay: super::replay::ON_SQLITE,
    stack: None,
    crash_modes: crash_mode::ON_FILES,
};

/// The servers: two databases on one PostgreSQL cluster (one cluster, so a server kill takes
/// both stores down at once, as a real deployment's shared database server would; the
/// crash windows between them are the protocol's, not the clusters'), and one queue.
pub static STACK: StackDef = StackDef {
    name: "postgres-rabbitmq",
    databases: &["sender", "receiver"],
    queues: &["messages"],
    // A long WAL writer delay: an asynchronous commit (the `async-commit` variant) stays in
    // the server's memory for up to 10 s, so a server kill after it loses it every time.
    // Synchronous commits flush their own WAL and are unaffected.
    pg_settings: &[("wal_writer_delay", "10000ms")],
};

pub static STORE: ServerStore = ServerStore {
    schemas: &[&PG_SENDER, &PG_RECEIVER],
};

pub static ON_SERVERS: LabStack = LabStack {
    lab: &LAB,
    title: "Outbox on PostgreSQL, RabbitMQ with confirms and manual acks, Inbox: 2 deliveries, 1 effect",
    points: points::of(Stack::Servers),
    databases: Stack::Servers.databases(),
    scenarios: || scenarios(Stack::Servers),
    stages: stages::of(Stack::Servers),
    store: &STORE,
    roles: ROLES,
    load: Some(&super::load::ON_SERVERS),
    explore: Some(&super::explore::ON_SERVERS),
    history: super::history::on_servers,
    schemas: &[&PG_SENDER, &PG_RECEIVER],
    // The queue's part of a readback (its ready messages) is the broker's and is not
    // replayed; the server store checks the databases' digests instead.
    readback: |_, _| None,
    replay: super::replay::ON_SERVERS,
    stack: Some(&STACK),
    crash_modes: crash_mode::ON_SERVERS,
};

/// The readback of `verify` on the replayed files (engine::LabStack::readback).
fn replayed(phase: &str, dbs: &Databases<'_>) -> Option<Result<serde_json::Value, String>> {
    (phase == Verify::NAME)
        .then(|| super::open::read_replayed(dbs).map(|s| s.readback(Stack::Sqlite)))
}

fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

fn crashing(name: &str, argv: Argv, point: Point) -> Step {
    Step::crashing_at(name, &argv, point)
}

/// The protocol, step by step, with the step names of the contract.
pub fn scenarios(stack: Stack) -> Vec<Scenario> {
    let publisher = || Publisher::of(stack, Variant::Correct).argv();
    let consumer = || Consumer::of(stack, Variant::Correct).argv();
    let verify = |name: &'static str| {
        let stage = Stage::named(stages::of(stack), name);
        step(
            name,
            Verify::of(stack, Some(name)).argv(),
            EXIT_OK,
            Expect::Readback(stage),
        )
    };
    let business = Sender::one(stack, "R1", 25, "M1").argv();
    let steps = vec![
        crashing("business-crash", business, points::SENDER_AFTER_COMMIT),
        verify("after-business"),
        crashing("publish-crash", publisher(), held(stack)),
        verify("after-publish"),
        step("publish-recover", publisher(), EXIT_OK, Expect::Exit),
        crashing(
            "consume-crash",
            consumer(),
            points::CONSUMER_AFTER_RECEIVER_COMMIT,
        ),
        verify("after-consume"),
        step("consume-recover", consumer(), EXIT_OK, Expect::Exit),
        verify("final-verify"),
        step(
            "conflict-enqueue",
            Enqueue::of(stack, "M1", "R1", 99).argv(),
            EXIT_OK,
            Expect::Exit,
        ),
        step(
            "conflict-consume",
            consumer(),
            EXIT_CONFLICT,
            Expect::Output("payload conflict"),
        ),
        verify("after-conflict"),
    ];
    vec![Scenario {
        name: "outbox-inbox".to_string(),
        dir: None,
        steps,
    }]
}
