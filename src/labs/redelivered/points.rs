//! Lab f3's crash points, typed. The consumer's three windows: its lease is committed, the
//! receiver has answered, its ack is committed (or refused). The pause nemesis stops a
//! consumer at the first two; a crash at any of them leaves the lease to expire.

use crate::crash::Point;

pub const CONSUMER_AFTER_CLAIM: Point = Point::new(
    "redeliver-consumer.after-claim",
    "delivery claimed with a lease, committed; the HTTP call not made yet",
);
pub const CONSUMER_AFTER_CALL: Point = Point::new(
    "redeliver-consumer.after-call",
    "the receiver applied (or replayed) the call and answered; the ack not committed",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "redeliver-consumer.after-ack",
    "the ack committed, or refused because the lease passed to another consumer",
);

/// Lab 13's receiver is part of this system too: its points are reached in every run, and a
/// crash there is explored like one in the consumer.
pub use crate::labs::http_dispatch::points::{
    RECEIVER_AFTER_EFFECT_COMMIT, RECEIVER_BEFORE_EFFECT_COMMIT,
};

pub static POINTS: &[Point] = &[
    CONSUMER_AFTER_CLAIM,
    CONSUMER_AFTER_CALL,
    CONSUMER_AFTER_ACK,
    RECEIVER_BEFORE_EFFECT_COMMIT,
    RECEIVER_AFTER_EFFECT_COMMIT,
];
