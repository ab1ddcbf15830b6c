//! Lab 14's crash points on the server stack, where the broker's windows are: each commit in
//! PostgreSQL has a `before-…` and an `after-…` point, each broker step an `after-…` point.
//! A point's phase is its role's subcommand (the engine arms it in that role's step).

use crate::crash::Point;

pub const SENDER_BEFORE_COMMIT: Point = Point::new(
    "stack-sender.before-commit",
    "contract and Outbox row written, not committed: both vanish",
);
pub const SENDER_AFTER_COMMIT: Point = Point::new(
    "stack-sender.after-commit",
    "contract and Outbox row committed, nothing published",
);
pub const PUBLISHER_AFTER_PUBLISH: Point = Point::new(
    "stack-publisher.after-publish",
    "message published, its confirm not yet seen, Outbox row pending: it will be published again",
);
pub const PUBLISHER_AFTER_CONFIRM: Point = Point::new(
    "stack-publisher.after-confirm",
    "the broker confirmed the message, Outbox row still pending: it will be published again",
);
pub const PUBLISHER_BEFORE_MARK_COMMIT: Point = Point::new(
    "stack-publisher.before-mark-commit",
    "Outbox row marked sent, not committed",
);
pub const PUBLISHER_AFTER_MARK_COMMIT: Point = Point::new(
    "stack-publisher.after-mark-commit",
    "Outbox row committed as sent (no-confirm: maybe before the broker stored the message)",
);
pub const CONSUMER_AFTER_DELIVER: Point = Point::new(
    "stack-consumer.after-deliver",
    "delivery received, nothing applied, not acked: it will be delivered again",
);
pub const CONSUMER_BEFORE_RECEIVER_COMMIT: Point = Point::new(
    "stack-consumer.before-receiver-commit",
    "Inbox row, ledger credit and receipt written, not committed",
);
pub const CONSUMER_AFTER_RECEIVER_COMMIT: Point = Point::new(
    "stack-consumer.after-receiver-commit",
    "Inbox row and ledger credit committed, delivery not acked: it will be delivered again, redelivered",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "stack-consumer.after-ack",
    "delivery acked (auto-ack: before anything was applied)",
);

/// Every point of the lab on the stack, for `--crash-at NAME` and the tables.
pub static POINTS: &[Point] = &[
    SENDER_BEFORE_COMMIT,
    SENDER_AFTER_COMMIT,
    PUBLISHER_AFTER_PUBLISH,
    PUBLISHER_AFTER_CONFIRM,
    PUBLISHER_BEFORE_MARK_COMMIT,
    PUBLISHER_AFTER_MARK_COMMIT,
    CONSUMER_AFTER_DELIVER,
    CONSUMER_BEFORE_RECEIVER_COMMIT,
    CONSUMER_AFTER_RECEIVER_COMMIT,
    CONSUMER_AFTER_ACK,
];
