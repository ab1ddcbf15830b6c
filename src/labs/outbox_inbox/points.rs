//! Lab 14's crash points. Each commit has a `before-…` and an `after-…` point.

use crate::crash::PointDef;

pub static POINTS: &[PointDef] = &[
    PointDef {
        name: "sender.before-commit",
        window: "contract and Outbox row written, not committed: both vanish",
    },
    PointDef {
        name: "sender.after-commit",
        window: "contract and Outbox row committed, nothing published",
    },
    PointDef {
        name: "publisher.before-queue-commit",
        window: "delivery written to the queue, not committed",
    },
    PointDef {
        name: "publisher.after-queue-commit",
        window: "delivery committed in the queue, Outbox row still pending: it will be sent again",
    },
    PointDef {
        name: "publisher.before-mark-sent",
        window: "Outbox row marked sent, not committed",
    },
    PointDef {
        name: "publisher.after-mark-sent",
        window: "Outbox row committed as sent (mark-before-send: before the queue has it)",
    },
    PointDef {
        name: "consumer.before-claim-commit",
        window: "delivery claimed, claim not committed",
    },
    PointDef {
        name: "consumer.after-claim-commit",
        window: "delivery claimed by this consumer, nothing applied",
    },
    PointDef {
        name: "consumer.before-inbox-commit",
        window: "split-inbox-tx only: Inbox row written, not committed",
    },
    PointDef {
        name: "consumer.after-inbox-commit",
        window: "split-inbox-tx only: Inbox row committed, ledger not yet credited",
    },
    PointDef {
        name: "consumer.before-receiver-commit",
        window: "Inbox row and ledger credit written, not committed",
    },
    PointDef {
        name: "consumer.after-receiver-commit",
        window:
            "Inbox row and ledger credit committed, delivery not acked: it will be delivered again",
    },
    PointDef {
        name: "consumer.before-ack",
        window: "delivery marked acked, not committed",
    },
    PointDef {
        name: "consumer.after-ack",
        window: "delivery acked (ack-before-apply: before anything was applied)",
    },
    PointDef {
        name: "enqueue.before-commit",
        window: "raw delivery written, not committed",
    },
    PointDef {
        name: "enqueue.after-commit",
        window: "raw delivery committed",
    },
];
