//! Lab 13's crash points, typed: a call site names the constant (`crash::point(INTENT_AFTER_COMMIT)`),
//! so a misspelt point does not compile. Each commit has a `before-…` and an `after-…` point.

use crate::crash::Point;

pub const INTENT_BEFORE_COMMIT: Point = Point::new(
    "intent.before-commit",
    "intent written, not committed: it vanishes",
);
pub const INTENT_AFTER_COMMIT: Point =
    Point::new("intent.after-commit", "intent committed, nothing sent");
pub const DISPATCHER_BEFORE_ATTEMPT_COMMIT: Point = Point::new(
    "dispatcher.before-attempt-commit",
    "attempt written, not committed, nothing sent",
);
pub const DISPATCHER_AFTER_ATTEMPT_COMMIT: Point = Point::new(
    "dispatcher.after-attempt-commit",
    "attempt committed, request not sent: a recovery sees an attempt of unknown result",
);
pub const DISPATCHER_AFTER_RESPONSE: Point = Point::new(
    "dispatcher.after-response",
    "reply in hand, receipt not written: the receiver ran it, the dispatcher will send again",
);
pub const DISPATCHER_BEFORE_RECEIPT_COMMIT: Point = Point::new(
    "dispatcher.before-receipt-commit",
    "receipt written, not committed",
);
pub const DISPATCHER_AFTER_RECEIPT_COMMIT: Point = Point::new(
    "dispatcher.after-receipt-commit",
    "receipt committed, history not appended: the recovery appends it",
);
pub const DISPATCHER_BEFORE_HISTORY_COMMIT: Point = Point::new(
    "dispatcher.before-history-commit",
    "history row written, not committed",
);
pub const DISPATCHER_AFTER_HISTORY_COMMIT: Point = Point::new(
    "dispatcher.after-history-commit",
    "receipt and history committed",
);
pub const DISPATCHER_BEFORE_UNKNOWN_COMMIT: Point = Point::new(
    "dispatcher.before-unknown-commit",
    "intent marked unknown, not committed",
);
pub const DISPATCHER_AFTER_UNKNOWN_COMMIT: Point = Point::new(
    "dispatcher.after-unknown-commit",
    "intent committed as unknown: left for reconciliation, never resent",
);
pub const RECEIVER_BEFORE_EFFECT_COMMIT: Point = Point::new(
    "receiver.before-effect-commit",
    "effect (and key) written, not committed: nothing ran",
);
pub const RECEIVER_AFTER_EFFECT_COMMIT: Point = Point::new(
    "receiver.after-effect-commit",
    "effect (and key) committed, reply not sent: the dispatcher sees a broken connection",
);

/// Every point of the lab, for `--crash-at NAME` and the tables.
pub static POINTS: &[Point] = &[
    INTENT_BEFORE_COMMIT,
    INTENT_AFTER_COMMIT,
    DISPATCHER_BEFORE_ATTEMPT_COMMIT,
    DISPATCHER_AFTER_ATTEMPT_COMMIT,
    DISPATCHER_AFTER_RESPONSE,
    DISPATCHER_BEFORE_RECEIPT_COMMIT,
    DISPATCHER_AFTER_RECEIPT_COMMIT,
    DISPATCHER_BEFORE_HISTORY_COMMIT,
    DISPATCHER_AFTER_HISTORY_COMMIT,
    DISPATCHER_BEFORE_UNKNOWN_COMMIT,
    DISPATCHER_AFTER_UNKNOWN_COMMIT,
    RECEIVER_BEFORE_EFFECT_COMMIT,
    RECEIVER_AFTER_EFFECT_COMMIT,
];
