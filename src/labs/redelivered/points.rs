//! Lab f3's crash points, typed. The consumer's three windows: the message is in its hands
//! (a lease committed on SQLite; on the broker, delivered unacked and the delivery
//! recorded), the receiver has answered, the ack is settled. The pause nemesis stops a
//! consumer at the first two; a crash at any of them leaves the message to come again (the
//! lease expires, or the broker requeues what the dead connection held). One list, with the
//! stacks each point exists on.

use super::stack::Stack;
use crate::crash::Point;

pub const CONSUMER_AFTER_CLAIM: Point = Point::new(
    "redeliver-consumer.after-claim",
    "delivery claimed with a lease, committed; the HTTP call not made yet",
);
pub const CONSUMER_AFTER_DELIVER: Point = Point::new(
    "redeliver-consumer.after-deliver",
    "the broker delivered the message (unacked) and the delivery is recorded; no call yet",
);
pub const CONSUMER_AFTER_CALL: Point = Point::new(
    "redeliver-consumer.after-call",
    "the receiver applied (or replayed) the call and answered; the ack not settled",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "redeliver-consumer.after-ack",
    "the ack settled (committed, or refused: the lease passed on or the channel was gone) and the reply recorded",
);

/// Lab 13's receiver is part of this system too: its points are reached in every run, and a
/// crash there is explored like one in the consumer.
pub use crate::labs::http_dispatch::points::{
    RECEIVER_AFTER_EFFECT_COMMIT, RECEIVER_BEFORE_EFFECT_COMMIT,
};

/// Every point of the lab on each stack, in protocol order: each point is listed under the
/// stacks it exists on.
static ON_SQLITE: &[Point] = &[
    CONSUMER_AFTER_CLAIM,
    CONSUMER_AFTER_CALL,
    CONSUMER_AFTER_ACK,
    RECEIVER_BEFORE_EFFECT_COMMIT,
    RECEIVER_AFTER_EFFECT_COMMIT,
];
static ON_SERVERS: &[Point] = &[
    CONSUMER_AFTER_DELIVER,
    CONSUMER_AFTER_CALL,
    CONSUMER_AFTER_ACK,
    RECEIVER_BEFORE_EFFECT_COMMIT,
    RECEIVER_AFTER_EFFECT_COMMIT,
];

/// The points of the lab on `stack`, for `--crash-at NAME` and the tables.
pub const fn of(stack: Stack) -> &'static [Point] {
    match stack {
        Stack::Sqlite => ON_SQLITE,
        Stack::Servers => ON_SERVERS,
    }
}

/// The consumer's point once the message is in its hands, before its call.
pub fn taken(stack: Stack) -> Point {
    match stack {
        Stack::Sqlite => CONSUMER_AFTER_CLAIM,
        Stack::Servers => CONSUMER_AFTER_DELIVER,
    }
}
