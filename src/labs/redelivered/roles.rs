//! Lab f3's roles as typed argument builders: the one place their flags are spelled. Lab
//! 13's receiver is built by lab 13's own builder (`http_dispatch::roles::Receiver`).

use crate::crash::Point;
use crate::labs::http_dispatch::receiver::Mode;
use crate::labs::http_dispatch::roles::Receiver;
use crate::labs::http_dispatch::schema::{PORT_FILE, RECEIVER_DB};
pub use crate::role::Argv;
use crate::role::Role;

pub const ENQUEUE: &str = "redeliver-enqueue";
pub const CONSUMER: &str = "redeliver-consumer";
pub const VERIFY: &str = "redeliver-verify";
/// Lab 13's receiver, run by argv.
pub const RECEIVER: &str = Receiver::NAME;

/// This lab's own subcommands.
pub const ALL: &[&str] = &[ENQUEUE, CONSUMER, VERIFY];

/// The queue file and the receiver's files, relative to the work directory.
pub const QUEUE_DB: &str = "queue.db";

/// The variants: the receiver's mode, and whether the call carries the message id as key.
pub const VARIANTS: &[&str] = &["keyed", "unkeyed"];

/// `redeliver-enqueue --queue queue.db --id M --body B`
pub fn enqueue(id: &str, body: &str) -> Argv {
    Argv::new(ENQUEUE)
        .flag("--queue", QUEUE_DB)
        .flag("--id", id)
        .flag("--body", body)
}

/// Lab 13's receiver in `variant`'s mode, stopping by itself after `lifetime_ms` at most.
pub fn receiver(variant: &str, lifetime_ms: Option<u64>) -> Argv {
    let mode = <Mode as clap::ValueEnum>::from_str(variant, false);
    let mut receiver = Receiver::of(mode.expect("each variant is a receiver mode"));
    if let Some(ms) = lifetime_ms {
        receiver.lifetime_ms = ms;
    }
    receiver.argv()
}

/// How one consumer runs.
#[derive(Debug, Clone, Copy)]
pub struct Consume {
    pub consumer: &'static str,
    pub variant: &'static str,
    pub lease_ms: u64,
    /// How long it may wait for another consumer's lease to expire.
    pub wait_ms: u64,
    /// Bound of the HTTP call (connect and whole request).
    pub timeout_ms: u64,
    /// Where the pause nemesis stops it.
    pub pause_at: Option<Point>,
}

/// `redeliver-consumer --queue … --port-file … --consumer C --variant V --lease-ms N
/// --wait-ms N --timeout-ms N [--pause-at POINT]`
pub fn consumer(how: &Consume) -> Argv {
    Argv::new(CONSUMER)
        .flag("--queue", QUEUE_DB)
        .flag("--port-file", PORT_FILE)
        .flag("--consumer", how.consumer)
        .flag("--variant", how.variant)
        .flag("--lease-ms", how.lease_ms)
        .flag("--wait-ms", how.wait_ms)
        .flag("--timeout-ms", how.timeout_ms)
        .maybe(crate::pause::FLAG, how.pause_at.map(|p| p.name))
}

/// `redeliver-verify --queue … --receiver … [--json] [--expect STAGE]`
pub fn verify(json: bool, expect: Option<&str>) -> Argv {
    Argv::new(VERIFY)
        .flag("--queue", QUEUE_DB)
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
        let how = Consume {
            consumer: "A",
            variant: "keyed",
            lease_ms: 300,
            wait_ms: 1000,
            timeout_ms: 2000,
            pause_at: Some(super::super::points::CONSUMER_AFTER_CALL),
        };
        let c = consumer(&how);
        let armed = PAUSE.arm("redeliver-consumer.after-call");
        assert!(c.args().ends_with(&armed), "{:?}", c.args());
        for argv in [
            enqueue("M1", "{}"),
            receiver("unkeyed", Some(1000)),
            c,
            verify(true, None),
        ] {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone().into_vec());
            if let Err(e) = crate::cli::parser(crate::labs::LABS).try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
    }
}
