//! The counts each readback step of lab f3's scenarios on the stack must show, by
//! `<scenario>.<step>`. `during-pause`: the broker closed A's connection and redelivered the
//! message to B, which called and acked; A is still stopped. `final`: A was continued, made or
//! had made its call, and its ack did nothing (`lost 1`).

use crate::role::Stage;

const DELIVERIES: &str = "consumer.deliveries";
const REDELIVERED: &str = "consumer.redelivered";
const REPLIES: &str = "consumer.replies";
const REPLAYED: &str = "consumer.replayed";
const ACKED: &str = "consumer.acked";
const LOST: &str = "consumer.lost";
const READY: &str = "queue.messages";
const EFFECTS: &str = "receiver.effects";
const LEDGER: &str = "receiver.ledger";

pub static STAGES: &[Stage] = &[
    Stage {
        name: "keyed-pause-before-call.during-pause",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 1),
            (REPLAYED, 0),
            (ACKED, 1),
            (LOST, 0),
            (READY, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-before-call.final",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 2),
            (REPLAYED, 1),
            (ACKED, 1),
            (LOST, 1),
            (READY, 0),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.during-pause",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 1),
            (REPLAYED, 1),
            (ACKED, 1),
            (LOST, 0),
            (READY, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "keyed-pause-after-call.final",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 2),
            (REPLAYED, 1),
            (ACKED, 1),
            (LOST, 1),
            (READY, 0),
            (EFFECTS, 1),
            (LEDGER, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.during-pause",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 1),
            (REPLAYED, 0),
            (ACKED, 1),
            (LOST, 0),
            (READY, 0),
            (EFFECTS, 1),
        ],
    },
    Stage {
        name: "unkeyed-pause-before-call.final",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 2),
            (REPLAYED, 0),
            (ACKED, 1),
            (LOST, 1),
            (READY, 0),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.during-pause",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 1),
            (REPLAYED, 0),
            (ACKED, 1),
            (LOST, 0),
            (READY, 0),
            (EFFECTS, 2),
        ],
    },
    Stage {
        name: "unkeyed-pause-after-call.final",
        fields: &[
            (DELIVERIES, 2),
            (REDELIVERED, 1),
            (REPLIES, 2),
            (REPLAYED, 0),
            (ACKED, 1),
            (LOST, 1),
            (READY, 0),
            (EFFECTS, 2),
            (LEDGER, 0),
        ],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}
