//! The counts each readback step of lab f3's scenarios must show, by `<scenario>.<step>`.
//! `during-pause`: consumer B has taken the expired lease and acked, A is still stopped;
//! `final`: A was continued and finished its call, its ack refused.

use crate::role::Stage;

const MESSAGES: &str = "queue.messages";
const ACKED: &str = "queue.acked";
const DELIVERIES: &str = "queue.deliveries";
const REPLIES: &str = "queue.replies";
const REPLAYED: &str = "queue.replayed";
const REFUSED: &str = "queue.refused";
const EFFECTS: &str = "receiver.effects";

pub static STAGES: &[Stage] = &[
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
            ("receiver.ledger", 1),
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
            ("receiver.ledger", 1),
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
            ("receiver.ledger", 0),
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
            ("receiver.ledger", 0),
        ],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}
