//! Lab 14 on the server stack (`--stack postgres-rabbitmq`) as data: its stores, its crash
//! points, its protocol and the state each readback must show. The same story as the SQLite
//! lab: the seed's run ends with 2 physical deliveries, 1 effect, ledger 25, and a conflicting
//! payload rejected.

use super::points::{self, POINTS};
use super::roles::{self, Argv, Send, STORES};
use super::schema::{RECEIVER, SENDER};
use super::variant::Variant;
use crate::crash::Point;
use crate::engine::scenario::{Expect, Scenario, Stage, Step};
use crate::engine::stack::StackDef;
use crate::engine::state::server::ServerStore;
use crate::engine::Lab;
use crate::fail::{EXIT_CONFLICT, EXIT_OK};

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
    schemas: &[&SENDER, &RECEIVER],
};

pub static LAB: Lab = Lab {
    id: "14",
    slug: "outbox-inbox",
    title: "Outbox on PostgreSQL, RabbitMQ with confirms and manual acks, Inbox: 2 deliveries, 1 effect",
    points: POINTS,
    databases: &["sender", "receiver", "messages"],
    scenarios,
    stages: STAGES,
    store: &STORE,
    roles: &[
        roles::SENDER,
        roles::PUBLISHER,
        roles::CONSUMER,
        roles::ENQUEUE,
        roles::VERIFY,
    ],
    load: Some(&super::load::LOAD),
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[&SENDER, &RECEIVER],
    readback: super::history::readback,
    replay: super::history::REPLAY,
    cli: crate::engine::RoleCli {
        augment: super::commands::augment,
        run: super::route::run,
    },
    stack: Some(&STACK),
};

pub static STAGES: &[Stage] = &[
    Stage {
        name: "after-business",
        fields: &[
            ("sender.contracts", 1),
            ("sender.outbox_pending", 1),
            ("queue.messages", 0),
        ],
    },
    Stage {
        name: "after-publish",
        fields: &[("sender.outbox_pending", 1), ("queue.messages", 1)],
    },
    Stage {
        name: "after-consume",
        fields: &[
            ("receiver.inbox", 1),
            ("receiver.ledger", 25),
            ("receiver.deliveries", 1),
            ("queue.messages", 2),
        ],
    },
    Stage {
        name: "final-verify",
        fields: &[
            ("sender.outbox_sent", 1),
            ("queue.messages", 0),
            ("receiver.deliveries", 2),
            ("receiver.handled", 3),
            ("receiver.redelivered", 1),
            ("receiver.inbox", 1),
            ("receiver.ledger", 25),
        ],
    },
    Stage {
        name: "after-conflict",
        fields: &[
            ("receiver.ledger", 25),
            ("receiver.inbox", 1),
            ("receiver.rejected", 1),
            ("queue.messages", 0),
        ],
    },
];

fn stage(name: &str) -> Stage {
    *STAGES
        .iter()
        .find(|s| s.name == name)
        .expect("every readback step has a stage")
}

fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

fn crashing(name: &str, argv: Argv, point: Point) -> Step {
    Step::crashing_at(name, &argv, point)
}

fn verify(name: &'static str) -> Step {
    step(
        name,
        roles::verify(&STORES, true, Some(name)),
        EXIT_OK,
        Expect::Readback(stage(name)),
    )
}

/// The protocol, step by step, with the step names of the SQLite lab.
pub fn scenarios() -> Vec<Scenario> {
    let publisher = || roles::publisher(&STORES, Variant::Correct);
    let consumer = || roles::consumer(&STORES, Variant::Correct);
    let business = Send::One {
        contract: "R1",
        amount: 25,
        message: "M1",
    };
    let steps = vec![
        crashing(
            "business-crash",
            roles::sender(&STORES, business),
            points::SENDER_AFTER_COMMIT,
        ),
        verify("after-business"),
        // Crashed after the broker's confirm, before the mark: the row is still pending, so
        // the recovery publishes M1 a second time.
        crashing(
            "publish-crash",
            publisher(),
            points::PUBLISHER_AFTER_CONFIRM,
        ),
        verify("after-publish"),
        step("publish-recover", publisher(), EXIT_OK, Expect::Exit),
        // Crashed after the receiver's commit, before the ack: the broker delivers the first
        // copy again, flagged redelivered.
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
            roles::enqueue(&STORES, "M1", "R1", 99),
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
