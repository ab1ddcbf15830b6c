//! Where each store profile of lab 13 breaks under each cut style (seed 1, the default):
//! measured with `crashlab explore 13 --crash-mode power-loss --variants all`, then written
//! down; every other reached point and hit holds. The correct design (`default`: WAL, FULL)
//! and `journal-delete-extra` break nowhere. The receiver is one long-lived process: under
//! `sync-normal` its commits are never synced before the cut, so an effect the dispatcher
//! holds a receipt for can vanish. Every acknowledged commit a cut rolls back is a
//! `lost-write`: the process was told it committed, and the data is gone. The dispatcher's own processes end by
//! closing their databases, and the last close checkpoints and syncs.

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Prediction};
use crate::engine::jepsen::Anomaly;

/// What a cut breaks: the acknowledged commits only, or an effect lost with them.
const ACK: &[Invariant] = &[Invariant::AcknowledgedDurable];
const ACK_LOST: &[Invariant] = &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable];
/// The receiver's commits of the second intent's effect, where `sync-normal` loses it.
const RECEIVER_2: &[At] = &[
    At::of("receiver.before-effect-commit", &[2]),
    At::of("receiver.after-effect-commit", &[2]),
];
const INTENT_1: &[At] = &[At::of("intent.after-commit", &[1])];

/// The intent's commit and every dispatcher point at both intents; the receiver's effect
/// commits at these hits.
const fn every_commit(before_effect: &'static [u32], after_effect: &'static [u32]) -> [At; 10] {
    [
        At::of("intent.after-commit", &[1]),
        At::of("dispatcher.before-attempt-commit", &[1, 2]),
        At::of("dispatcher.after-attempt-commit", &[1, 2]),
        At::of("dispatcher.after-response", &[1, 2]),
        At::of("dispatcher.before-receipt-commit", &[1, 2]),
        At::of("dispatcher.after-receipt-commit", &[1, 2]),
        At::of("dispatcher.before-history-commit", &[1, 2]),
        At::of("dispatcher.after-history-commit", &[1, 2]),
        At::of("receiver.before-effect-commit", before_effect),
        At::of("receiver.after-effect-commit", after_effect),
    ]
}

/// Every acknowledged commit a cut rolls back is a lost-write: each prediction here has one.
const LOST_WRITE: &[Anomaly] = &[Anomaly::LostWrite];

/// `sync-normal`: the acknowledged commits at `at`; with `lost`, an effect too.
const fn sync_normal(variant: &'static str, at: &'static [At], lost: bool) -> Prediction {
    Prediction {
        variant,
        at,
        invariants: if lost { ACK_LOST } else { ACK },
        anomalies: LOST_WRITE,
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    }
}

/// `sync-off`: these invariants at `at`, the acknowledged commits lost.
const fn sync_off(
    variant: &'static str,
    at: &'static [At],
    broken: &'static [Invariant],
) -> Prediction {
    Prediction {
        variant,
        at,
        invariants: broken,
        anomalies: LOST_WRITE,
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    }
}

const SYNC_NORMAL: &str = "the receiver's acknowledged effect rolls back (WAL, NORMAL: the long-lived receiver never checkpoints, so nothing it committed is synced): a lost-write the dispatcher holds a receipt for, or an acknowledged commit gone";
const SYNC_NORMAL_HIDDEN: &str = "a dispatcher or intent process that ends checkpoints and syncs on close; where recovery sends again, the key makes one effect";
const JOURNAL_DELETE: &str = "the acknowledged intent rolls back (DELETE, FULL: the journal's unlink is not made durable, its hot journal undoes the commit)";
const JOURNAL_DELETE_HIDDEN: &str = "in the torn and prefix cuts of this seed the unlink survives; recovery makes the dispatcher's commits again";
const SYNC_OFF: &str = "anything unsynced is lost: acknowledged commits vanish, and in the torn cut effects the dispatcher was told of";
const SYNC_OFF_HIDDEN: &str =
    "where a case holds, recovery made again what the cut took, or the cut kept it";

pub static POWER_PREDICTIONS: &[Prediction] = &[
    sync_normal("sync-normal/drop", INTENT_1, false),
    sync_normal("sync-normal/drop", RECEIVER_2, true),
    sync_normal("sync-normal/torn", INTENT_1, false),
    sync_normal("sync-normal/torn", RECEIVER_2, true),
    sync_normal(
        "sync-normal/prefix",
        &[
            At::of("intent.after-commit", &[1]),
            At::of("dispatcher.after-response", &[2]),
            At::of("dispatcher.before-receipt-commit", &[2]),
            At::of("dispatcher.after-history-commit", &[2]),
        ],
        false,
    ),
    sync_normal("sync-normal/prefix", RECEIVER_2, true),
    Prediction {
        variant: "journal-delete/drop",
        at: INTENT_1,
        invariants: ACK,
        anomalies: LOST_WRITE,
        says: JOURNAL_DELETE,
        hidden: JOURNAL_DELETE_HIDDEN,
    },
    sync_off("sync-off/drop", &every_commit(&[1, 2], &[1, 2]), ACK),
    sync_off("sync-off/torn", &every_commit(&[2], &[1]), ACK),
    sync_off(
        "sync-off/torn",
        &[
            At::of("receiver.before-effect-commit", &[1]),
            At::of("receiver.after-effect-commit", &[2]),
        ],
        ACK_LOST,
    ),
    sync_off(
        "sync-off/prefix",
        &[
            At::of("intent.after-commit", &[1]),
            At::of("dispatcher.before-attempt-commit", &[1]),
            At::of("receiver.before-effect-commit", &[2]),
        ],
        ACK,
    ),
];
