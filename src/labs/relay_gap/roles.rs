//! Lab f1's roles as typed argument builders: the one place their flags are spelled.

use crate::crash::Point;
pub use crate::engine::argv::Argv;

pub const INIT: &str = "gap-init";
pub const WRITE: &str = "gap-write";
pub const RELAY: &str = "gap-relay";
pub const VERIFY: &str = "gap-verify";

pub const ALL: &[&str] = &[INIT, WRITE, RELAY, VERIFY];

/// The logical databases (names in `stack.json`).
pub const OUTBOX_DB: &str = "outbox";
pub const RECEIVER_DB: &str = "receiver";

/// The relay's designs, the correct ones first.
pub const VARIANTS: &[&str] = &["pending-status", "xid-horizon", "last-id"];

/// `gap-init --outbox outbox --receiver receiver`
pub fn init() -> Argv {
    Argv::new(INIT)
        .flag("--outbox", OUTBOX_DB)
        .flag("--receiver", RECEIVER_DB)
}

/// `gap-write --outbox outbox --writer W --body B [--pause-at POINT]`
pub fn write(writer: &str, body: &str, pause_at: Option<Point>) -> Argv {
    Argv::new(WRITE)
        .flag("--outbox", OUTBOX_DB)
        .flag("--writer", writer)
        .flag("--body", body)
        .maybe(crate::pause::FLAG, pause_at.map(|p| p.name))
}

/// `gap-relay --outbox outbox --receiver receiver --variant V`
pub fn relay(variant: &str) -> Argv {
    Argv::new(RELAY)
        .flag("--outbox", OUTBOX_DB)
        .flag("--receiver", RECEIVER_DB)
        .flag("--variant", variant)
}

/// `gap-verify --outbox outbox --receiver receiver [--json] [--expect STAGE]`
pub fn verify(json: bool, expect: Option<&str>) -> Argv {
    Argv::new(VERIFY)
        .flag("--outbox", OUTBOX_DB)
        .flag("--receiver", RECEIVER_DB)
        .switch("--json", json)
        .maybe("--expect", expect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nemesis::{Nemesis, PAUSE};

    /// Every argv a builder makes is one the real command line accepts, and the pause flag is
    /// the one the pause nemesis arms.
    #[test]
    fn every_builder_argv_parses_with_the_real_cli() {
        let w = write("A", "{}", Some(super::super::points::WRITE_AFTER_INSERT));
        assert!(w.args().ends_with(&PAUSE.arm("gap-write.after-insert")));
        let mut all = vec![init(), w, write("B", "{}", None), verify(true, Some("x"))];
        all.extend(VARIANTS.iter().map(|v| relay(v)));
        for argv in all {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone().into_vec());
            if let Err(e) = crate::cli::parser().try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
    }
}
