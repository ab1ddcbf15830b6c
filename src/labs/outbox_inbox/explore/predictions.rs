//! Where each broken design of lab 14 must break, exactly, on each stack: every other
//! reached point and hit holds. The scenario sends M000001 and M000002, then a faulty
//! upstream sends a copy of M000001, then the consumer takes them in that order (hits @1,
//! @2, @3): a message lost at @1 is often brought again by that copy, so the predictions
//! list those hits as holding, and say so.

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Prediction};
use crate::engine::jepsen::Anomaly;

/// On SQLite, under process crashes.
pub static ON_SQLITE: &[Prediction] = &[
    Prediction {
        variant: "mark-before-send",
        at: &[
            At::of("publisher.before-queue-commit", &[2]),
            At::of("publisher.after-mark-sent", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost message (marked sent before the queue has it)",
        hidden: "at @1 the message is M000001, which the upstream's redelivery brings again",
    },
    Prediction {
        variant: "memory-inbox",
        at: &[
            At::of("sender.before-commit", &[1]),
            At::of("publisher.before-queue-commit", &[1]),
            At::every("publisher.after-queue-commit"),
            At::every("publisher.before-mark-sent"),
            At::of("consumer.before-claim-commit", &[2, 3]),
            At::of("consumer.after-claim-commit", &[2, 3]),
            At::of("consumer.before-receiver-commit", &[2]),
            At::every("consumer.after-receiver-commit"),
            At::every("consumer.before-ack"),
            At::of("consumer.after-ack", &[1, 2]),
        ],
        invariants: &[Invariant::NoDuplicateEffect],
        anomalies: &[Anomaly::Duplicate],
        says: "double credit (a restarted consumer forgets what it applied)",
        hidden: "a crash before M000001 is applied once, or after both its copies were, leaves one consumer to see both copies: its memory absorbs the second",
    },
    // The first message lost while the second, acknowledged after it, is applied: a
    // lost-write; the second lost: nothing later was applied, so it is unseen.
    Prediction {
        variant: "split-inbox-tx",
        at: &[
            At::of("consumer.after-inbox-commit", &[1]),
            At::of("consumer.before-receiver-commit", &[1]),
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::LostWrite],
        says: "lost credit of the first message (Inbox row committed, credit not)",
        hidden: "",
    },
    Prediction {
        variant: "split-inbox-tx",
        at: &[
            At::of("consumer.after-inbox-commit", &[2]),
            At::of("consumer.before-receiver-commit", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost credit of the second message",
        hidden: "",
    },
    Prediction {
        variant: "ack-before-apply",
        at: &[
            At::of("consumer.before-receiver-commit", &[2]),
            At::of("consumer.after-ack", &[2]),
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost effect (acked before applied)",
        hidden: "at @1 the delivery is M000001, which the upstream's redelivery brings again; @3 is that redelivery itself, already applied",
    },
];

const HIDDEN_BY_COPY: &str =
    "at @1 the message is M000001, which the upstream's copy brings again; @3 is that copy, already applied";

/// auto-ack: the ack is the consumer's first act, so a crash after it and before the
/// receiver's commit loses the effect, under any nemesis (the crash is the process's).
const AUTO_ACK: [At; 2] = [
    At::of("consumer.before-receiver-commit", &[2]),
    At::of("consumer.after-ack", &[2]),
];

/// auto-ack's break, the same under process crashes and under the server kills `variant` names.
const fn auto_ack(variant: &'static str) -> Prediction {
    Prediction {
        variant,
        at: &AUTO_ACK,
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost effect (acked on delivery, before it was applied)",
        hidden: HIDDEN_BY_COPY,
    }
}

/// On the servers under process crashes: only auto-ack breaks. async-commit, no-confirm and transient give up
/// a guarantee only a server crash can take away, so they hold here (and are predicted to).
pub static ON_SERVERS: &[Prediction] = &[auto_ack("auto-ack")];

/// Under server kills (the role crashes at the point, then the engine SIGKILLs the server and
/// restarts it): variant `<design>/<server>`; a design without an entry for a server holds.
pub static SERVER_KILLS: &[Prediction] = &[
    auto_ack("auto-ack/postgres"),
    // On a classic queue a broker kill right after the ack undoes it: the queue's index had
    // not written the ack, and the message comes back (`redelivered=true`) to be applied, so
    // auto-ack holds there. A quorum queue's ack is in its Raft log and survives the kill.
    auto_ack("auto-ack/rabbitmq/quorum"),
    // Every consumer commit is asynchronous and nothing else writes while it runs, so a kill
    // loses all of them (the WAL writer sleeps 10 s). Lost for good are the commits whose
    // deliveries were acked: M000002's once its ack went (@2 on), and M000001's once its
    // copy was acked too (@3 of after-ack).
    Prediction {
        variant: "async-commit/postgres",
        at: &[
            At::of("consumer.after-deliver", &[3]),
            At::of("consumer.before-receiver-commit", &[3]),
            At::of("consumer.after-receiver-commit", &[3]),
            At::of("consumer.after-ack", &[2, 3]),
        ],
        invariants: &[Invariant::NoLostEffect, Invariant::AcknowledgedDurable],
        anomalies: &[Anomaly::LostWrite, Anomaly::Unseen],
        says: "lost acknowledged commit (synchronous_commit=off, the server killed before its WAL was flushed)",
        hidden: "before M000002's ack every lost commit's delivery is still in the queue and is applied again",
    },
    Prediction {
        // Seen on both queue types: on a quorum queue too the unconfirmed message was gone.
        variant: "no-confirm/rabbitmq",
        at: &[At::of("publisher.after-mark-sent", &[2])],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost message (marked sent without the broker's confirm; the broker died before storing it)",
        hidden: "at @1 the message is M000001, which the upstream's copy brings again",
    },
    // Transient messages die with the broker; the upstream's copy of M000001 is persistent.
    // M000002 is lost once its row is marked sent and before its effect is committed. A
    // quorum queue keeps every message in its Raft log whatever its delivery mode: there
    // transient holds.
    Prediction {
        variant: "transient/rabbitmq/classic",
        at: &[
            At::of("publisher.after-mark-sent", &[2]),
            At::of("consumer.after-deliver", &[1, 2]),
            At::of("consumer.before-receiver-commit", &[1, 2]),
            At::of("consumer.after-receiver-commit", &[1]),
            At::of("consumer.after-ack", &[1]),
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost message (non-persistent, gone with the broker's restart)",
        hidden: "once M000002 is applied nothing transient is owed; M000001's copy is persistent",
    },
];
