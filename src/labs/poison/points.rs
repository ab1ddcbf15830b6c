//! Lab f2's crash points, typed: every commit of the retry/park path has its point, so a
//! crash lands right after (or right before) each durable step of it.

use crate::crash::Point;

pub const CONSUME_AFTER_APPLY_COMMIT: Point = Point::new(
    "poison-consume.after-apply-commit",
    "credit committed at the receiver, message not acked: it comes again and the receiver's key absorbs it",
);
pub const CONSUME_AFTER_ACK_COMMIT: Point = Point::new(
    "poison-consume.after-ack-commit",
    "message acked (done) in the queue",
);
pub const CONSUME_BEFORE_ATTEMPT_COMMIT: Point = Point::new(
    "poison-consume.before-attempt-commit",
    "the receiver refused the message; the failed attempt is written, not committed: it is not counted",
);
pub const CONSUME_AFTER_ATTEMPT_COMMIT: Point = Point::new(
    "poison-consume.after-attempt-commit",
    "a failed attempt is recorded in the queue (failures + 1), the message still at the head",
);
pub const CONSUME_BEFORE_PARK_COMMIT: Point = Point::new(
    "poison-consume.before-park-commit",
    "retry-then-skip: dead letter and park written, not committed: both vanish",
);
pub const CONSUME_AFTER_PARK_COMMIT: Point = Point::new(
    "poison-consume.after-park-commit",
    "retry-then-skip: message parked in the dead-letter table with its reason and attempts",
);
pub const REPLAY_AFTER_FIX_COMMIT: Point = Point::new(
    "poison-replay.after-fix-commit",
    "the parked message's payload is corrected, nothing replayed yet",
);
pub const REPLAY_AFTER_APPLY_COMMIT: Point = Point::new(
    "poison-replay.after-apply-commit",
    "the corrected message is credited at the receiver, still parked: a replay again is absorbed",
);
pub const REPLAY_BEFORE_REPLAY_COMMIT: Point = Point::new(
    "poison-replay.before-replay-commit",
    "dead letter marked replayed and message done, not committed",
);
pub const REPLAY_AFTER_REPLAY_COMMIT: Point = Point::new(
    "poison-replay.after-replay-commit",
    "dead letter replayed and message done",
);

/// Every point of the lab, for `--crash-at NAME` and the tables.
pub static POINTS: &[Point] = &[
    CONSUME_AFTER_APPLY_COMMIT,
    CONSUME_AFTER_ACK_COMMIT,
    CONSUME_BEFORE_ATTEMPT_COMMIT,
    CONSUME_AFTER_ATTEMPT_COMMIT,
    CONSUME_BEFORE_PARK_COMMIT,
    CONSUME_AFTER_PARK_COMMIT,
    REPLAY_AFTER_FIX_COMMIT,
    REPLAY_AFTER_APPLY_COMMIT,
    REPLAY_BEFORE_REPLAY_COMMIT,
    REPLAY_AFTER_REPLAY_COMMIT,
];
