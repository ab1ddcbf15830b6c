//! Where each broken variant of lab 14 must break, exactly: every other reached point and
//! hit holds. The scenario redelivers the first message (`M000001`) once more from a faulty
//! upstream, so a message lost at hit 1 is often delivered again by that copy: the
//! predictions list those hits as holding, and say so.

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Prediction};
use crate::engine::jepsen::Anomaly;

pub static PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "mark-before-send",
        at: &[
            At {
                point: "publisher.before-queue-commit",
                hits: &[2],
            },
            At {
                point: "publisher.after-mark-sent",
                hits: &[2],
            },
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost message (marked sent before the queue has it)",
        hidden: "at @1 the message is M000001, which the upstream's redelivery brings again",
    },
    Prediction {
        variant: "memory-inbox",
        at: &[
            At {
                point: "sender.before-commit",
                hits: &[1],
            },
            At {
                point: "publisher.before-queue-commit",
                hits: &[1],
            },
            At::every("publisher.after-queue-commit"),
            At::every("publisher.before-mark-sent"),
            At {
                point: "consumer.before-claim-commit",
                hits: &[2, 3],
            },
            At {
                point: "consumer.after-claim-commit",
                hits: &[2, 3],
            },
            At {
                point: "consumer.before-receiver-commit",
                hits: &[2],
            },
            At::every("consumer.after-receiver-commit"),
            At::every("consumer.before-ack"),
            At {
                point: "consumer.after-ack",
                hits: &[1, 2],
            },
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
            At {
                point: "consumer.after-inbox-commit",
                hits: &[1],
            },
            At {
                point: "consumer.before-receiver-commit",
                hits: &[1],
            },
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::LostWrite],
        says: "lost credit of the first message (Inbox row committed, credit not)",
        hidden: "",
    },
    Prediction {
        variant: "split-inbox-tx",
        at: &[
            At {
                point: "consumer.after-inbox-commit",
                hits: &[2],
            },
            At {
                point: "consumer.before-receiver-commit",
                hits: &[2],
            },
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost credit of the second message",
        hidden: "",
    },
    Prediction {
        variant: "ack-before-apply",
        at: &[
            At {
                point: "consumer.before-receiver-commit",
                hits: &[2],
            },
            At {
                point: "consumer.after-ack",
                hits: &[2],
            },
        ],
        invariants: &[Invariant::NoLostEffect],
        anomalies: &[Anomaly::Unseen],
        says: "lost effect (acked before applied)",
        hidden: "at @1 the delivery is M000001, which the upstream's redelivery brings again; @3 is that redelivery itself, already applied",
    },
];
