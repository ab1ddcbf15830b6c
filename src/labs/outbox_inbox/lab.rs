//! Lab 14 (outbox-inbox) as data: its files, its crash points, its protocol and the state each
//! readback must show. The driver runs this; the audit re-checks evidence against it.

use super::points::{self, POINTS};
use super::roles::{self, Argv, Send, CONSUME, FILES};
use super::variant::Variant;
use crate::crash::Point;
use crate::engine::scenario::{Expect, Scenario, Stage, Step};
use crate::engine::Lab;
use crate::fail::{EXIT_CONFLICT, EXIT_OK};

pub static LAB: Lab = Lab {
    id: "14",
    slug: "outbox-inbox",
    title: "Outbox, durable SQL queue, Inbox: 2 deliveries, 1 effect",
    points: POINTS,
    databases: &["sender.db", "queue.db", "receiver.db"],
    scenarios,
    stages: STAGES,
    store: crate::engine::state::SQLITE,
    roles: &["sender", "publisher", "consumer", "enqueue", "verify"],
    load: Some(&super::load::LOAD),
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[
        &super::schema::SENDER,
        &super::schema::QUEUE,
        &super::schema::RECEIVER,
    ],
    readback: super::readback::replayed,
    replay: super::replay::REPLAY,
    cli: crate::engine::RoleCli {
        augment: super::commands::augment,
        run: super::route::run,
    },
    stack: None,
};

pub static STAGES: &[Stage] = &[
    Stage {
        name: "after-business",
        fields: &[
            ("sender.contracts", 1),
            ("sender.outbox_pending", 1),
            ("queue.deliveries", 0),
        ],
    },
    Stage {
        name: "after-publish",
        fields: &[
            ("sender.outbox_pending", 1),
            ("queue.deliveries", 1),
            ("queue.pending", 1),
        ],
    },
    Stage {
        name: "after-consume",
        fields: &[
            ("receiver.inbox", 1),
            ("receiver.ledger", 25),
            ("queue.pending", 2),
        ],
    },
    Stage {
        name: "final-verify",
        fields: &[
            ("sender.outbox_sent", 1),
            ("queue.deliveries", 2),
            ("queue.messages", 1),
            ("queue.acked", 2),
            ("receiver.inbox", 1),
            ("receiver.ledger", 25),
        ],
    },
    Stage {
        name: "after-conflict",
        fields: &[
            ("receiver.ledger", 25),
            ("receiver.inbox", 1),
            ("queue.rejected", 1),
        ],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}

/// A step that runs a role's argv to the given exit.
fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

/// A step that runs a role's argv and crashes at `point`.
fn crashing(name: &str, argv: Argv, point: Point) -> Step {
    Step::crashing_at(name, &argv, point)
}

fn verify(name: &'static str) -> Step {
    let stage = stage(name).expect("every readback step has a stage");
    step(
        name,
        roles::verify(&FILES, true, Some(name)),
        EXIT_OK,
        Expect::Readback(stage),
    )
}

/// The protocol, step by step, with the step names of the contract.
pub fn scenarios() -> Vec<Scenario> {
    let publisher = || roles::publisher(&FILES, 1, Variant::Correct);
    let consumer = || roles::consumer(&FILES, &CONSUME);
    let business = Send::One {
        contract: "R1",
        amount: 25,
        message: "M1",
    };
    let steps = vec![
        crashing(
            "business-crash",
            roles::sender(&FILES, business, 1),
            points::SENDER_AFTER_COMMIT,
        ),
        verify("after-business"),
        crashing(
            "publish-crash",
            publisher(),
            points::PUBLISHER_AFTER_QUEUE_COMMIT,
        ),
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
            roles::enqueue(&FILES, "M1", "R1", 99),
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
