//! Lab f3's roles in the audit's replay: lab 13's receiver is checked by lab 13's own
//! claims; this lab's roles print lines the replay knows by their first word.

use crate::engine::replay::claims_api::{LabReplay, RoleClaims};

pub const REPLAY: LabReplay = LabReplay {
    // Lab 13's receiver serves requests on several workers.
    threaded: &[super::roles::RECEIVER],
    raw_replies: &[],
    lines: &[
        // Lab 13's receiver.
        "READY",
        "REQUEST",
        "ACCEPT",
        "STOPPED",
        "EXPIRED",
        "RECEIVER",
        // This lab's roles.
        "ALREADY",
        "EMPTY",
        "WAITING",
        "RESPONSE",
        "ACKED",
        "LEASE-LOST",
    ],
    claims,
};

/// The receiver's REQUEST lines against its replayed effects, as lab 13 checks them.
pub fn claims(c: &mut RoleClaims<'_>) {
    if c.proc.step.phase == super::roles::RECEIVER {
        crate::labs::http_dispatch::replay::claims(c);
    }
}
