//! The counts each readback step of lab 13's scenarios must show, by `<scenario>.<step>`.

use crate::role::Stage;

const E: &str = "receiver.effects";
const R: &str = "receipts.receipts";
const H: &str = "history.history";
/// Intents without a receipt: 0 once every intent is delivered.
const U: &str = "intents.undelivered";

/// Stages are named `<scenario>.<step>`: step names repeat across scenarios.
pub static STAGES: &[Stage] = &[
    Stage {
        name: "keyed-dispatcher-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "keyed-dispatcher-crash.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1), (U, 0)],
    },
    Stage {
        name: "unkeyed-dispatcher-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "unkeyed-dispatcher-crash.final",
        fields: &[(E, 2), (R, 1), (H, 1), ("receiver.keys", 1)],
    },
    Stage {
        name: "keyed-receiver-restart.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0)],
    },
    Stage {
        name: "keyed-receiver-restart.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1)],
    },
    Stage {
        name: "receiver-unavailable.after-unavailable",
        fields: &[(E, 0), (R, 0), (H, 0), ("intents.attempts", 0), (U, 1)],
    },
    Stage {
        name: "receiver-unavailable.final",
        fields: &[(E, 1), (R, 1), (H, 1), (U, 0)],
    },
    Stage {
        name: "key-conflict.final",
        fields: &[(E, 1), (R, 0), (H, 0), ("receiver.ledger", 1), (U, 1)],
    },
    Stage {
        name: "keyed-receiver-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "keyed-receiver-crash.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1)],
    },
    Stage {
        name: "unkeyed-receiver-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "unkeyed-receiver-crash.final",
        fields: &[(E, 2), (R, 1), (H, 1)],
    },
    Stage {
        name: "two-dispatchers.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("intents.attempts", 1)],
    },
    Stage {
        name: "key-expired.final",
        fields: &[(E, 2), (R, 1), (H, 1), ("receipts.replayed", 0)],
    },
    Stage {
        name: "bad-requests.final",
        fields: &[(E, 0), (R, 0), (H, 0), ("receiver.ledger", 0)],
    },
    Stage {
        name: "unkeyed-unknown-hold.final",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.unknown", 1), (U, 1)],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}
