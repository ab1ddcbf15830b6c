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

/// What a cut breaks: the acknowledged commits only, or an effect lost or doubled with them.
const ACK: &[Invariant] = &[Invariant::AcknowledgedDurable];
const ACK_LOST: &[Invariant] = &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable];
const ACK_DOUBLED: &[Invariant] = &[Invariant::NoDuplicateEffect, Invariant::AcknowledgedDurable];
const ACK_LOST_DOUBLED: &[Invariant] = &[
    Invariant::NoLostEffect,
    Invariant::NoDuplicateEffect,
    Invariant::AcknowledgedDurable,
];

/// Every acknowledged commit a cut rolls back is a lost-write; an effect left without the
/// contract it credits is G1a too.
const LOST_WRITE: &[Anomaly] = &[Anomaly::LostWrite];
const LOST_WRITE_G1A: &[Anomaly] = &[Anomaly::LostWrite, Anomaly::G1a];
const LOST_WRITE_UNSEEN_G1A: &[Anomaly] = &[Anomaly::LostWrite, Anomaly::Unseen, Anomaly::G1a];

/// The faulty upstream's enqueue of its redelivery, the commit the seeded cuts roll back.
const ENQUEUE_1: &[At] = &[At::of("enqueue.after-commit", &[1])];
/// Every publisher point: the queue's commit of both messages, then of the messages `sent`,
/// the mark before it at those, and the mark made at `marked`.
const fn publisher(sent: &'static [u32], marked: &'static [u32]) -> [At; 4] {
    [
        At::of("publisher.before-queue-commit", &[1, 2]),
        At::of("publisher.after-queue-commit", sent),
        At::of("publisher.before-mark-sent", sent),
        At::of("publisher.after-mark-sent", marked),
    ]
}
/// Every consumer point at every hit it reaches, and the upstream's enqueue.
const CONSUMER: &[At] = &[
    At::of("consumer.before-claim-commit", &[1, 2, 3]),
    At::of("consumer.after-claim-commit", &[1, 2, 3]),
    At::of("consumer.before-receiver-commit", &[1, 2]),
    At::of("consumer.after-receiver-commit", &[1, 2]),
    At::of("consumer.before-ack", &[1, 2, 3]),
    At::of("consumer.after-ack", &[1, 2, 3]),
    At::of("enqueue.before-commit", &[1]),
    At::of("enqueue.after-commit", &[1]),
];

/// Where `sync-off`'s torn cut loses an effect too.
const TORN_LOST: &[At] = &[
    At::of("consumer.before-claim-commit", &[1]),
    At::of("enqueue.before-commit", &[1]),
    At::of("enqueue.after-commit", &[1]),
];
/// Where its prefix cut loses acknowledged commits only, and where an effect too.
const PREFIX_ACKED: &[At] = &[
    At::of("consumer.before-claim-commit", &[1, 3]),
    At::of("consumer.after-ack", &[2, 3]),
    At::of("enqueue.before-commit", &[1]),
    At::of("enqueue.after-commit", &[1]),
];
const PREFIX_LOST: &[At] = &[
    At::of("consumer.before-claim-commit", &[2]),
    At::of("consumer.after-ack", &[1]),
];

/// A profile's break, said as `says`, the hits of its points it does not list held for
/// `hidden`.
const fn breaks(
    variant: &'static str,
    says: &'static str,
    hidden: &'static str,
    at: &'static [At],
    invariants: &'static [Invariant],
    anomalies: &'static [Anomaly],
) -> Prediction {
    Prediction {
        variant,
        at,
        invariants,
        anomalies,
        says,
        hidden,
    }
}

/// The upstream's acknowledged redelivery rolls back, in the profile's words.
const fn enqueue_lost(
    variant: &'static str,
    says: &'static str,
    hidden: &'static str,
) -> Prediction {
    breaks(variant, says, hidden, ENQUEUE_1, ACK, LOST_WRITE)
}

/// `sync-off` under a seeded cut: these invariants and anomalies at `at`.
const fn sync_off(
    variant: &'static str,
    at: &'static [At],
    invariants: &'static [Invariant],
    anomalies: &'static [Anomaly],
) -> Prediction {
    breaks(
        variant,
        SYNC_OFF,
        SYNC_OFF_HIDDEN,
        at,
        invariants,
        anomalies,
    )
}

/// Under `--cut exhaustive`: these invariants and anomalies at `at`, in these words.
const fn exhaustive(
    variant: &'static str,
    at: &'static [At],
    invariants: &'static [Invariant],
    anomalies: &'static [Anomaly],
    says: &'static str,
) -> Prediction {
    breaks(variant, says, EXHAUSTIVE_HIDDEN, at, invariants, anomalies)
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
    enqueue_lost("sync-normal/drop", SYNC_NORMAL, SYNC_NORMAL_HIDDEN),
    enqueue_lost("sync-normal/torn", SYNC_NORMAL, SYNC_NORMAL_HIDDEN),
    enqueue_lost("sync-normal/prefix", SYNC_NORMAL, SYNC_NORMAL_HIDDEN),
    enqueue_lost("journal-delete/drop", JOURNAL_DELETE, JOURNAL_DELETE_HIDDEN),
    sync_off(
        "sync-off/drop",
        &publisher(&[1, 2], &[1, 2]),
        ACK_DOUBLED,
        LOST_WRITE_G1A,
    ),
    sync_off("sync-off/drop", CONSUMER, ACK, LOST_WRITE),
    sync_off(
        "sync-off/torn",
        &[
            At::of("publisher.before-queue-commit", &[1, 2]),
            At::of("publisher.after-queue-commit", &[1, 2]),
            At::of("publisher.before-mark-sent", &[1, 2]),
            At::of("publisher.after-mark-sent", &[1, 2]),
            At::of("consumer.before-claim-commit", &[2, 3]),
            At::of("consumer.after-claim-commit", &[1, 2, 3]),
            At::of("consumer.before-receiver-commit", &[1, 2]),
            At::of("consumer.after-receiver-commit", &[1, 2]),
            At::of("consumer.before-ack", &[1, 2, 3]),
            At::of("consumer.after-ack", &[1, 2, 3]),
        ],
        ACK_DOUBLED,
        LOST_WRITE_G1A,
    ),
    sync_off("sync-off/torn", TORN_LOST, ACK_LOST, LOST_WRITE),
    sync_off(
        "sync-off/prefix",
        &publisher(&[1], &[1]),
        ACK_DOUBLED,
        LOST_WRITE_G1A,
    ),
    sync_off("sync-off/prefix", PREFIX_ACKED, ACK, LOST_WRITE),
    sync_off("sync-off/prefix", PREFIX_LOST, ACK_LOST, LOST_WRITE),
    enqueue_lost("sync-normal/exhaustive", SYNC_NORMAL, EXHAUSTIVE_HIDDEN),
    exhaustive(
        "sync-normal/exhaustive",
        &[
            At::of("publisher.after-mark-sent", &[2]),
            At::of("consumer.before-claim-commit", &[3]),
            At::of("consumer.after-claim-commit", &[3]),
            At::of("consumer.before-ack", &[3]),
            At::of("consumer.after-ack", &[2, 3]),
        ],
        ACK_LOST,
        &[Anomaly::LostWrite, Anomaly::Unseen],
        SYNC_NORMAL_LOST,
    ),
    enqueue_lost(
        "journal-delete/exhaustive",
        JOURNAL_DELETE,
        EXHAUSTIVE_HIDDEN,
    ),
    exhaustive(
        "sync-off/exhaustive",
        &publisher(&[1, 2], &[1]),
        ACK_LOST_DOUBLED,
        LOST_WRITE_G1A,
        SYNC_OFF,
    ),
    exhaustive(
        "sync-off/exhaustive",
        &[At::of("publisher.after-mark-sent", &[2])],
        ACK_LOST_DOUBLED,
        LOST_WRITE_UNSEEN_G1A,
        SYNC_OFF,
    ),
    exhaustive(
        "sync-off/exhaustive",
        CONSUMER,
        &[
            Invariant::NoLostEffect,
            Invariant::NoDuplicateEffect,
            Invariant::NothingStuck,
            Invariant::AcknowledgedDurable,
        ],
        LOST_WRITE_UNSEEN_G1A,
        SYNC_OFF,
    ),
];
