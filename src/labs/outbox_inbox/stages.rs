//! The states lab 14's readbacks must show, by name: the same five stages on each stack,
//! each with the fields its stack's readback has (the SQL queue's rows; the broker's ready
//! messages and the receipts its deliveries left).

use super::stack::Stack;
use crate::role::Stage;

static ON_SQLITE: &[Stage] = &[
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

static ON_SERVERS: &[Stage] = &[
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

/// The stages of `stack`, in scenario order.
pub const fn of(stack: Stack) -> &'static [Stage] {
    match stack {
        Stack::Sqlite => ON_SQLITE,
        Stack::Servers => ON_SERVERS,
    }
}
