//! Lab f1's crash points, typed. The writer's window is its open transaction: the id is
//! taken and the row inserted, nothing committed (the pause nemesis holds a writer here).
//! The relay's windows: the receiver committed what it read, its position (or the rows'
//! status) not yet; then both committed.

use crate::crash::Point;

pub const WRITE_AFTER_INSERT: Point = Point::new(
    "gap-write.after-insert",
    "id taken from the sequence and the row inserted; the transaction still open",
);
pub const WRITE_AFTER_COMMIT: Point = Point::new(
    "gap-write.after-commit",
    "the row committed: visible to the relay from now on",
);
pub const RELAY_AFTER_PUBLISH: Point = Point::new(
    "gap-relay.after-publish",
    "the rows read are committed at the receiver; the relay's position not advanced",
);
pub const RELAY_AFTER_ADVANCE: Point = Point::new(
    "gap-relay.after-advance",
    "the relay's position (last id, status or horizon) committed",
);

pub static POINTS: &[Point] = &[
    WRITE_AFTER_INSERT,
    WRITE_AFTER_COMMIT,
    RELAY_AFTER_PUBLISH,
    RELAY_AFTER_ADVANCE,
];
