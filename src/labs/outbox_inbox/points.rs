//! Lab 14's crash points, typed: a call site names the constant (`crash::point(SENDER_AFTER_COMMIT)`),
//! so a misspelt point does not compile. Each commit has a `before-…` and an `after-…` point.

use crate::crash::Point;

pub const SENDER_BEFORE_COMMIT: Point = Point::new(
    "sender.before-commit",
    "contract and Outbox row written, not committed: both vanish",
);
pub const SENDER_AFTER_COMMIT: Point = Point::new(
    "sender.after-commit",
    "contract and Outbox row committed, nothing published",
);
pub const PUBLISHER_BEFORE_QUEUE_COMMIT: Point = Point::new(
    "publisher.before-queue-commit",
    "delivery written to the queue, not committed",
);
pub const PUBLISHER_AFTER_QUEUE_COMMIT: Point = Point::new(
    "publisher.after-queue-commit",
    "delivery committed in the queue, Outbox row still pending: it will be sent again",
);
pub const PUBLISHER_BEFORE_MARK_SENT: Point = Point::new(
    "publisher.before-mark-sent",
    "Outbox row marked sent, not committed",
);
pub const PUBLISHER_AFTER_MARK_SENT: Point = Point::new(
    "publisher.after-mark-sent",
    "Outbox row committed as sent (mark-before-send: before the queue has it)",
);
pub const CONSUMER_BEFORE_CLAIM_COMMIT: Point = Point::new(
    "consumer.before-claim-commit",
    "delivery claimed, claim not committed",
);
pub const CONSUMER_AFTER_CLAIM_COMMIT: Point = Point::new(
    "consumer.after-claim-commit",
    "delivery claimed by this consumer, nothing applied",
);
pub const CONSUMER_BEFORE_INBOX_COMMIT: Point = Point::new(
    "consumer.before-inbox-commit",
    "split-inbox-tx only: Inbox row written, not committed",
);
pub const CONSUMER_AFTER_INBOX_COMMIT: Point = Point::new(
    "consumer.after-inbox-commit",
    "split-inbox-tx only: Inbox row committed, ledger not yet credited",
);
pub const CONSUMER_BEFORE_RECEIVER_COMMIT: Point = Point::new(
    "consumer.before-receiver-commit",
    "Inbox row and ledger credit written, not committed",
);
pub const CONSUMER_AFTER_RECEIVER_COMMIT: Point = Point::new(
    "consumer.after-receiver-commit",
    "Inbox row and ledger credit committed, delivery not acked: it will be delivered again",
);
pub const CONSUMER_BEFORE_ACK: Point = Point::new(
    "consumer.before-ack",
    "delivery marked acked, not committed",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "consumer.after-ack",
    "delivery acked (ack-before-apply: before anything was applied)",
);
pub const ENQUEUE_BEFORE_COMMIT: Point = Point::new(
    "enqueue.before-commit",
    "raw delivery written, not committed",
);
pub const ENQUEUE_AFTER_COMMIT: Point =
    Point::new("enqueue.after-commit", "raw delivery committed");

/// Every point of the lab, for `--crash-at NAME` and the tables.
pub static POINTS: &[Point] = &[
    SENDER_BEFORE_COMMIT,
    SENDER_AFTER_COMMIT,
    PUBLISHER_BEFORE_QUEUE_COMMIT,
    PUBLISHER_AFTER_QUEUE_COMMIT,
    PUBLISHER_BEFORE_MARK_SENT,
    PUBLISHER_AFTER_MARK_SENT,
    CONSUMER_BEFORE_CLAIM_COMMIT,
    CONSUMER_AFTER_CLAIM_COMMIT,
    CONSUMER_BEFORE_INBOX_COMMIT,
    CONSUMER_AFTER_INBOX_COMMIT,
    CONSUMER_BEFORE_RECEIVER_COMMIT,
    CONSUMER_AFTER_RECEIVER_COMMIT,
    CONSUMER_BEFORE_ACK,
    CONSUMER_AFTER_ACK,
    ENQUEUE_BEFORE_COMMIT,
    ENQUEUE_AFTER_COMMIT,
];
