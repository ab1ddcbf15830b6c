//! Where each store profile of lab 13 breaks under each cut style (seed 1, the default):
//! measured with `crashlab explore 13 --crash-mode power-loss --variants all`, then written
//! down; every other reached point and hit holds. The correct design (`default`: WAL, FULL)
//! and `journal-delete-extra` break nowhere. The receiver is one long-lived process: under
//! `sync-normal` its commits are never synced before the cut, so an effect the dispatcher
//! holds a receipt for can vanish (a lost-write). The dispatcher's own processes end by
//! closing their databases, and the last close checkpoints and syncs.

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Prediction};
use crate::engine::jepsen::Anomaly;

const fn at(point: &'static str, hits: &'static [u32]) -> At {
    At { point, hits }
}

const SYNC_NORMAL: &str = "the receiver's acknowledged effect rolls back (WAL, NORMAL: the long-lived receiver never checkpoints, so nothing it committed is synced): a lost-write the dispatcher holds a receipt for, or an acknowledged commit gone";
const SYNC_NORMAL_HIDDEN: &str = "a dispatcher or intent process that ends checkpoints and syncs on close; where recovery sends again, the key makes one effect";
const JOURNAL_DELETE: &str = "the acknowledged intent rolls back (DELETE, FULL: the journal's unlink is not made durable, its hot journal undoes the commit)";
const JOURNAL_DELETE_HIDDEN: &str = "in the torn and prefix cuts of this seed the unlink survives; recovery makes the dispatcher's commits again";
const SYNC_OFF: &str = "anything unsynced is lost: acknowledged commits vanish, and in the torn cut effects the dispatcher was told of";
const SYNC_OFF_HIDDEN: &str =
    "where a case holds, recovery made again what the cut took, or the cut kept it";

pub static POWER_PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "sync-normal/drop",
        at: &[at("intent.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/drop",
        at: &[
            at("receiver.before-effect-commit", &[2]),
            at("receiver.after-effect-commit", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/torn",
        at: &[at("intent.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/torn",
        at: &[
            at("receiver.before-effect-commit", &[2]),
            at("receiver.after-effect-commit", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/prefix",
        at: &[
            at("intent.after-commit", &[1]),
            at("dispatcher.after-response", &[2]),
            at("dispatcher.before-receipt-commit", &[2]),
            at("dispatcher.after-history-commit", &[2]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/prefix",
        at: &[
            at("receiver.before-effect-commit", &[2]),
            at("receiver.after-effect-commit", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "journal-delete/drop",
        at: &[at("intent.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: JOURNAL_DELETE,
        hidden: JOURNAL_DELETE_HIDDEN,
    },
    Prediction {
        variant: "sync-off/drop",
        at: &[
            at("intent.after-commit", &[1]),
            at("dispatcher.before-attempt-commit", &[1, 2]),
            at("dispatcher.after-attempt-commit", &[1, 2]),
            at("dispatcher.after-response", &[1, 2]),
            at("dispatcher.before-receipt-commit", &[1, 2]),
            at("dispatcher.after-receipt-commit", &[1, 2]),
            at("dispatcher.before-history-commit", &[1, 2]),
            at("dispatcher.after-history-commit", &[1, 2]),
            at("receiver.before-effect-commit", &[1, 2]),
            at("receiver.after-effect-commit", &[1, 2]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/torn",
        at: &[
            at("intent.after-commit", &[1]),
            at("dispatcher.before-attempt-commit", &[1, 2]),
            at("dispatcher.after-attempt-commit", &[1, 2]),
            at("dispatcher.after-response", &[1, 2]),
            at("dispatcher.before-receipt-commit", &[1, 2]),
            at("dispatcher.after-receipt-commit", &[1, 2]),
            at("dispatcher.before-history-commit", &[1, 2]),
            at("dispatcher.after-history-commit", &[1, 2]),
            at("receiver.before-effect-commit", &[2]),
            at("receiver.after-effect-commit", &[1]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/torn",
        at: &[
            at("receiver.before-effect-commit", &[1]),
            at("receiver.after-effect-commit", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/prefix",
        at: &[
            at("intent.after-commit", &[1]),
            at("dispatcher.before-attempt-commit", &[1]),
            at("receiver.before-effect-commit", &[2]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
];
