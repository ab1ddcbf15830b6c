//! Where each store profile of lab 14 breaks under each cut style (seed 1, the default):
//! measured with `crashlab explore 14 --crash-mode power-loss --variants all`, then written
//! down; every other reached point and hit holds. The correct design (`default`: WAL, FULL)
//! and `journal-delete-extra` (DELETE, EXTRA) break nowhere. Each role process of this lab
//! ends by closing its databases, and the last close checkpoints and syncs: so under
//! `sync-normal` a cut takes back only the crashed process's own commits, which recovery
//! makes again, and what is lost for good is the faulty upstream's redelivery, which nothing
//! retries. `sync-off` syncs nothing, ever: whole files go, acknowledged commits vanish,
//! effects outlive the contracts they credit (G1a), some files are left corrupt (the roles
//! refuse them, exit 2, and the case counts what they held as lost).
//!
//! Under `--cut exhaustive` (every state of each cut, at most 4096 per crash point, seed 1)
//! a case breaks when any of its states does, with every invariant any of them broke.
//! There `sync-normal` also loses a message for good: the publisher's mark survives in the
//! sender's file while the queue's frame that held the delivery does not (two files' unsynced
//! writes are not ordered), so nothing publishes it again (`unseen`); no seeded cut leaves
//! that state.

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Prediction};
use crate::engine::jepsen::Anomaly;

const fn at(point: &'static str, hits: &'static [u32]) -> At {
    At { point, hits }
}

const SYNC_NORMAL: &str = "the upstream's acknowledged redelivery rolls back (WAL, NORMAL: a commit is synced only by a checkpoint, and nothing retries it)";
const SYNC_NORMAL_HIDDEN: &str = "a role that ends checkpoints and syncs on close, so a cut takes back only the crashed process's own commits, and recovery makes the lab's roles' commits again";
const JOURNAL_DELETE: &str = "the upstream's acknowledged redelivery rolls back (DELETE, FULL: the journal's unlink is not made durable, its hot journal undoes the commit)";
const JOURNAL_DELETE_HIDDEN: &str = "in the torn and prefix cuts of this seed the unlink survives; recovery makes the lab's roles' commits again";
const SYNC_OFF: &str = "anything unsynced is lost, up to whole files: acknowledged commits vanish, effects outlive the contracts they credit (G1a), files are left corrupt";
const SYNC_OFF_HIDDEN: &str =
    "where a case holds, recovery made again what the cut took, or the cut kept it";
const SYNC_NORMAL_LOST: &str = "a delivery is lost for good: the Outbox row's mark survives in sender.db while the queue's unsynced frame that held the delivery does not (WAL, NORMAL: two files' writes are not ordered), so nothing publishes it again";
const EXHAUSTIVE_HIDDEN: &str = "in every state of these points recovery makes again what the cut took, or the cut kept it (bounded points: in every state run)";

pub static POWER_PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "sync-normal/drop",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/torn",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/prefix",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: SYNC_NORMAL_HIDDEN,
    },
    Prediction {
        variant: "journal-delete/drop",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: JOURNAL_DELETE,
        hidden: JOURNAL_DELETE_HIDDEN,
    },
    Prediction {
        variant: "sync-off/drop",
        at: &[
            at("publisher.before-queue-commit", &[1, 2]),
            at("publisher.after-queue-commit", &[1, 2]),
            at("publisher.before-mark-sent", &[1, 2]),
            at("publisher.after-mark-sent", &[1, 2]),
        ],
        invariants: &[Invariant::NoDuplicateEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/drop",
        at: &[
            at("consumer.before-claim-commit", &[1, 2, 3]),
            at("consumer.after-claim-commit", &[1, 2, 3]),
            at("consumer.before-receiver-commit", &[1, 2]),
            at("consumer.after-receiver-commit", &[1, 2]),
            at("consumer.before-ack", &[1, 2, 3]),
            at("consumer.after-ack", &[1, 2, 3]),
            at("enqueue.before-commit", &[1]),
            at("enqueue.after-commit", &[1]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/torn",
        at: &[
            at("publisher.before-queue-commit", &[1, 2]),
            at("publisher.after-queue-commit", &[1, 2]),
            at("publisher.before-mark-sent", &[1, 2]),
            at("publisher.after-mark-sent", &[1, 2]),
            at("consumer.before-claim-commit", &[2, 3]),
            at("consumer.after-claim-commit", &[1, 2, 3]),
            at("consumer.before-receiver-commit", &[1, 2]),
            at("consumer.after-receiver-commit", &[1, 2]),
            at("consumer.before-ack", &[1, 2, 3]),
            at("consumer.after-ack", &[1, 2, 3]),
        ],
        invariants: &[Invariant::NoDuplicateEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/torn",
        at: &[
            at("consumer.before-claim-commit", &[1]),
            at("enqueue.before-commit", &[1]),
            at("enqueue.after-commit", &[1]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/prefix",
        at: &[
            at("publisher.before-queue-commit", &[1, 2]),
            at("publisher.after-queue-commit", &[1]),
            at("publisher.before-mark-sent", &[1]),
            at("publisher.after-mark-sent", &[1]),
        ],
        invariants: &[Invariant::NoDuplicateEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/prefix",
        at: &[
            at("consumer.before-claim-commit", &[1, 3]),
            at("consumer.after-ack", &[2, 3]),
            at("enqueue.before-commit", &[1]),
            at("enqueue.after-commit", &[1]),
        ],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-off/prefix",
        at: &[
            at("consumer.before-claim-commit", &[2]),
            at("consumer.after-ack", &[1]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_OFF,
        hidden: SYNC_OFF_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/exhaustive",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: SYNC_NORMAL,
        hidden: EXHAUSTIVE_HIDDEN,
    },
    Prediction {
        variant: "sync-normal/exhaustive",
        at: &[
            at("publisher.after-mark-sent", &[2]),
            at("consumer.before-claim-commit", &[3]),
            at("consumer.after-claim-commit", &[3]),
            at("consumer.before-ack", &[3]),
            at("consumer.after-ack", &[2, 3]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite, Anomaly::Unseen],
        says: SYNC_NORMAL_LOST,
        hidden: EXHAUSTIVE_HIDDEN,
    },
    Prediction {
        variant: "journal-delete/exhaustive",
        at: &[at("enqueue.after-commit", &[1])],
        invariants: &[Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite],
        says: JOURNAL_DELETE,
        hidden: EXHAUSTIVE_HIDDEN,
    },
    Prediction {
        variant: "sync-off/exhaustive",
        at: &[
            at("publisher.before-queue-commit", &[1, 2]),
            at("publisher.after-queue-commit", &[1, 2]),
            at("publisher.before-mark-sent", &[1, 2]),
            at("publisher.after-mark-sent", &[1]),
        ],
        invariants: &[
            Invariant::NoLostEffect,
            Invariant::NoDuplicateEffect,
            Invariant::AcknowledgedDurable,
        ],
        anomalies: &[Anomaly::LostWrite, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: EXHAUSTIVE_HIDDEN,
    },
    Prediction {
        variant: "sync-off/exhaustive",
        at: &[at("publisher.after-mark-sent", &[2])],
        invariants: &[
            Invariant::NoLostEffect,
            Invariant::NoDuplicateEffect,
            Invariant::AcknowledgedDurable,
        ],
        anomalies: &[Anomaly::LostWrite, Anomaly::Unseen, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: EXHAUSTIVE_HIDDEN,
    },
    Prediction {
        variant: "sync-off/exhaustive",
        at: &[
            at("consumer.before-claim-commit", &[1, 2, 3]),
            at("consumer.after-claim-commit", &[1, 2, 3]),
            at("consumer.before-receiver-commit", &[1, 2]),
            at("consumer.after-receiver-commit", &[1, 2]),
            at("consumer.before-ack", &[1, 2, 3]),
            at("consumer.after-ack", &[1, 2, 3]),
            at("enqueue.before-commit", &[1]),
            at("enqueue.after-commit", &[1]),
        ],
        invariants: &[
            Invariant::NoLostEffect,
            Invariant::NoDuplicateEffect,
            Invariant::NothingStuck,
            Invariant::AcknowledgedDurable,
        ],
        anomalies: &[Anomaly::LostWrite, Anomaly::Unseen, Anomaly::G1a],
        says: SYNC_OFF,
        hidden: EXHAUSTIVE_HIDDEN,
    },
];
