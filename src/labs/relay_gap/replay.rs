//! Lab f1's roles in the audit's replay: the lines they print besides SQL, and nothing
//! more to check than the replay does (every poll's READ and PUBLISHED lines follow from the
//! statements around them, which the replay runs).

use crate::engine::replay::claims_api::{LabReplay, RoleClaims};

pub const REPLAY: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[
        // PostgreSQL-only values, printed instead of traced (their users carry literals).
        "SEQUENCE",
        "SEQUENCE-CREATED",
        "XID",
        "HORIZON",
        // The roles' own lines.
        "SCHEMA",
        "READ",
        "PUBLISHED",
        "ALREADY",
    ],
    claims,
};

/// Nothing beyond the replay's own checks yet.
pub fn claims(_c: &mut RoleClaims<'_>) {}
