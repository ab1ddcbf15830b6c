//! The counts each readback step of lab f1's scenarios must show, by `<scenario>.<step>`.
//! `during-pause`: writer A holds id 7 in its open transaction, B committed 8, the relay
//! polled once; `final`: A was continued and committed 7, the relay polled again.

use crate::role::Stage;

const ROWS: &str = "outbox.rows";
const PUBLISHED: &str = "receiver.published";
const MISSING: &str = "receiver.missing";
const POLLS: &str = "outbox.relay.polls";
const LAST_ID: &str = "outbox.relay.last_id";
const PENDING: &str = "outbox.pending";

pub static STAGES: &[Stage] = &[
    Stage {
        name: "last-id.during-pause",
        fields: &[
            (ROWS, 1),
            (PUBLISHED, 1),
            (MISSING, 0),
            (POLLS, 1),
            (LAST_ID, 8),
        ],
    },
    // The loss: 7 committed, never published; the mark stays at 8.
    Stage {
        name: "last-id.final",
        fields: &[
            (ROWS, 2),
            (PUBLISHED, 1),
            (MISSING, 1),
            (POLLS, 2),
            (LAST_ID, 8),
        ],
    },
    Stage {
        name: "pending-status.during-pause",
        fields: &[
            (ROWS, 1),
            (PUBLISHED, 1),
            (MISSING, 0),
            (POLLS, 1),
            (PENDING, 0),
        ],
    },
    Stage {
        name: "pending-status.final",
        fields: &[
            (ROWS, 2),
            (PUBLISHED, 2),
            (MISSING, 0),
            (POLLS, 2),
            (PENDING, 0),
        ],
    },
    // A's open transaction holds the horizon: B's committed 8 waits with it.
    Stage {
        name: "xid-horizon.during-pause",
        fields: &[(ROWS, 1), (PUBLISHED, 0), (MISSING, 1), (POLLS, 1)],
    },
    Stage {
        name: "xid-horizon.final",
        fields: &[(ROWS, 2), (PUBLISHED, 2), (MISSING, 0), (POLLS, 2)],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}
