//! Lab 14 (outbox-inbox) as data: its files, its crash points, its protocol and the state each
//! readback must show. The driver runs this; the audit re-checks evidence against it.

use crate::engine::scenario::{Expect, Scenario, Stage, Step};
use crate::engine::Lab;
use crate::fail::{EXIT_CONFLICT, EXIT_OK};
use crate::labs::outbox_inbox::points::POINTS;

pub static LAB: Lab = Lab {
    id: "14",
    slug: "outbox-inbox",
    title: "Outbox, durable SQL queue, Inbox: 2 deliveries, 1 effect",
    points: POINTS,
    databases: &["sender.db", "queue.db", "receiver.db"],
    scenarios,
    stages: STAGES,
    roles: &["sender", "publisher", "consumer", "enqueue", "verify"],
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

const SENDER: &[&str] = &["--db", "sender.db"];
const PUBLISHER: &[&str] = &["--sender", "sender.db", "--queue", "queue.db"];
const CONSUMER: &[&str] = &["--queue", "queue.db", "--receiver", "receiver.db"];

fn verify(name: &'static str) -> Step {
    let stage = stage(name).expect("every readback step has a stage");
    Step::new(
        name,
        "verify",
        &[
            "--sender",
            "sender.db",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
            "--json",
            "--expect",
            name,
        ],
        EXIT_OK,
        Expect::Readback(stage),
    )
}

fn with(base: &[&'static str], more: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(more).copied().collect()
}

/// The protocol, step by step, with the step names of the contract.
pub fn scenarios() -> Vec<Scenario> {
    let steps = vec![
        Step::crashing(
            "business-crash",
            "sender",
            &with(
                SENDER,
                &["--contract", "R1", "--amount", "25", "--message", "M1"],
            ),
            "sender.after-commit",
        ),
        verify("after-business"),
        Step::crashing(
            "publish-crash",
            "publisher",
            PUBLISHER,
            "publisher.after-queue-commit",
        ),
        verify("after-publish"),
        Step::new(
            "publish-recover",
            "publisher",
            PUBLISHER,
            EXIT_OK,
            Expect::Exit,
        ),
        Step::crashing(
            "consume-crash",
            "consumer",
            CONSUMER,
            "consumer.after-receiver-commit",
        ),
        verify("after-consume"),
        Step::new(
            "consume-recover",
            "consumer",
            CONSUMER,
            EXIT_OK,
            Expect::Exit,
        ),
        verify("final-verify"),
        Step::new(
            "conflict-enqueue",
            "enqueue",
            &[
                "--queue",
                "queue.db",
                "--message",
                "M1",
                "--contract",
                "R1",
                "--amount",
                "99",
            ],
            EXIT_OK,
            Expect::Exit,
        ),
        Step::new(
            "conflict-consume",
            "consumer",
            CONSUMER,
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
