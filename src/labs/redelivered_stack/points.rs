//! Lab f3's crash points on the stack, typed. The consumer's three windows: the delivery is in
//! its hands (unacked, recorded), the receiver has answered, the ack is settled and recorded.
//! The pause nemesis stops a consumer at the first two; a crash at any of them closes its
//! connection, and the broker requeues what it had not acked.

use crate::crash::Point;

pub const CONSUMER_AFTER_DELIVER: Point = Point::new(
    "stack-redeliver-consumer.after-deliver",
    "the broker delivered the message (unacked) and the delivery is recorded; no call yet",
);
pub const CONSUMER_AFTER_CALL: Point = Point::new(
    "stack-redeliver-consumer.after-call",
    "the receiver applied (or replayed) the call and answered; no ack yet",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "stack-redeliver-consumer.after-ack",
    "the ack reached the broker (or the channel was gone) and the reply is recorded",
);

/// Lab 13's receiver is part of this system too: a crash there is explored like one in the
/// consumer.
pub use crate::labs::http_dispatch::points::{
    RECEIVER_AFTER_EFFECT_COMMIT, RECEIVER_BEFORE_EFFECT_COMMIT,
};

pub static POINTS: &[Point] = &[
    CONSUMER_AFTER_DELIVER,
    CONSUMER_AFTER_CALL,
    CONSUMER_AFTER_ACK,
    RECEIVER_BEFORE_EFFECT_COMMIT,
    RECEIVER_AFTER_EFFECT_COMMIT,
];
