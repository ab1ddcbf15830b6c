//! The counts each readback step of lab f3's scenarios must show, by `<scenario>.<step>`,
//! on each stack: the stage names are the story's, the fields each stack's readback.
//!
//! On SQLite, `during-pause`: consumer B has taken the expired lease and acked, A is still
//! stopped; `final`: A was continued and finished its call, its ack refused. On the servers,
//! `during-pause`: the broker closed A's connection and redelivered the message to B, which
//! called and acked; A is still stopped. `final`: A was continued, made or had made its call,
//! and its ack did nothing (`lost 1`).

use super::stack::Stack;
use crate::role::Stage;

const MESSAGES: &str = "queue.messages";
const ACKED: &str = "queue.acked";
const DELIVERIES: &str = "queue.deliveries";
const REPLIES: &str = "queue.replies";
const REPLAYED: &str = "queue.replayed";
const REFUSED: &str = "queue.refused";
const EFFECTS: &str = "receiver.effects";
const LEDGER: &str = "receiver.ledger";

static ON_SQLITE: &[Stage] = &[
    Stage {
        name: "keyed-pause-before-call.during-pause",
        fields: &[
            (MESSAGES, 1),
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 1),
            (REPLAYED, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-before-call.final",
        fields: &[
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 2),
            (REPLAYED, 1),
            (REFUSED, 1),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.during-pause",
        fields: &[
            (MESSAGES, 1),
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 1),
            (REPLAYED, 1),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.final",
        fields: &[
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 2),
            (REPLAYED, 1),
            (REFUSED, 1),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.during-pause",
        fields: &[
            (MESSAGES, 1),
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 1),
            (REPLAYED, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.final",
        fields: &[
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 2),
            (REPLAYED, 0),
            (REFUSED, 1),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.during-pause",
        fields: &[
            (MESSAGES, 1),
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 1),
            (REPLAYED, 0),
            (EFFECTS, 2),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.final",
        fields: &[
            (ACKED, 1),
            (DELIVERIES, 2),
            (REPLIES, 2),
            (REPLAYED, 0),
            (REFUSED, 1),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
];

const C_DELIVERIES: &str = "consumer.deliveries";
const REDELIVERED: &str = "consumer.redelivered";
const C_REPLIES: &str = "consumer.replies";
const C_REPLAYED: &str = "consumer.replayed";
const C_ACKED: &str = "consumer.acked";
const LOST: &str = "consumer.lost";

static ON_SERVERS: &[Stage] = &[
    Stage {
        name: "keyed-pause-before-call.during-pause",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 1),
            (C_REPLAYED, 0),
            (C_ACKED, 1),
            (LOST, 0),
            (MESSAGES, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-before-call.final",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 2),
            (C_REPLAYED, 1),
            (C_ACKED, 1),
            (LOST, 1),
            (MESSAGES, 0),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.during-pause",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 1),
            (C_REPLAYED, 1),
            (C_ACKED, 1),
            (LOST, 0),
            (MESSAGES, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.final",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 2),
            (C_REPLAYED, 1),
            (C_ACKED, 1),
            (LOST, 1),
            (MESSAGES, 0),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.during-pause",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 1),
            (C_REPLAYED, 0),
            (C_ACKED, 1),
            (LOST, 0),
            (MESSAGES, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.final",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 2),
            (C_REPLAYED, 0),
            (C_ACKED, 1),
            (LOST, 1),
            (MESSAGES, 0),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.during-pause",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 1),
            (C_REPLAYED, 0),
            (C_ACKED, 1),
            (LOST, 0),
            (MESSAGES, 0),
            (EFFECTS, 2),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.final",
        fields: &[
            (C_DELIVERIES, 2),
            (REDELIVERED, 1),
            (C_REPLIES, 2),
            (C_REPLAYED, 0),
            (C_ACKED, 1),
            (LOST, 1),
            (MESSAGES, 0),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
];

/// The stages of `stack`.
pub const fn of(stack: Stack) -> &'static [Stage] {
    match stack {
        Stack::Sqlite => ON_SQLITE,
        Stack::Servers => ON_SERVERS,
    }
}
