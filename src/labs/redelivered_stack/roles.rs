//! Lab f3's roles on the stack as typed argument builders: the one place their flags are
//! spelled. Their argv names logical stores (`--queue messages --db consumer`), never a URL.
//! Lab 13's receiver is built by lab 13's own builder, its files in the work directory.

use crate::crash::Point;
use crate::labs::http_dispatch::receiver::Mode;
use crate::labs::http_dispatch::roles::Receiver;
use crate::labs::http_dispatch::schema::{PORT_FILE, RECEIVER_DB};
pub use crate::role::Argv;
use crate::role::Role;

pub const ENQUEUE: &str = "stack-redeliver-enqueue";
pub const CONSUMER: &str = "stack-redeliver-consumer";
pub const VERIFY: &str = "stack-redeliver-verify";
/// Lab 13's receiver, run by argv.
pub const RECEIVER: &str = Receiver::NAME;

/// The logical stores (`StackDef`'s names) and the receiver's files.
pub const QUEUE: &str = "messages";
pub const DB: &str = "consumer";

/// The variants: the receiver's mode, and whether the call carries the message id as key.
pub const VARIANTS: &[&str] = &["keyed", "unkeyed"];

/// `stack-redeliver-enqueue --queue messages --id M --body B`
pub fn enqueue(id: &str, body: &str) -> Argv {
    Argv::new(ENQUEUE)
        .flag("--queue", QUEUE)
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
    pub heartbeat_s: u16,
    /// How long it asks again while nothing is ready.
    pub wait_ms: u64,
    /// Bound of the HTTP call (connect and whole request).
    pub timeout_ms: u64,
    /// Where the pause nemesis stops it.
    pub pause_at: Option<Point>,
}

/// `stack-redeliver-consumer --queue … --db … --port-file … --consumer C --variant V
/// --heartbeat-s N --wait-ms N --timeout-ms N [--pause-at POINT]`
pub fn consumer(how: &Consume) -> Argv {
    Argv::new(CONSUMER)
        .flag("--queue", QUEUE)
        .flag("--db", DB)
        .flag("--port-file", PORT_FILE)
        .flag("--consumer", how.consumer)
        .flag("--variant", how.variant)
        .flag("--heartbeat-s", how.heartbeat_s)
        .flag("--wait-ms", how.wait_ms)
        .flag("--timeout-ms", how.timeout_ms)
        .maybe(crate::pause::FLAG, how.pause_at.map(|p| p.name))
}

/// `stack-redeliver-verify --db … --queue … --receiver … [--json] [--expect STAGE]`
pub fn verify(json: bool, expect: Option<&str>) -> Argv {
    Argv::new(VERIFY)
        .flag("--db", DB)
        .flag("--queue", QUEUE)
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
            heartbeat_s: 1,
            wait_ms: 1000,
            timeout_ms: 2000,
            pause_at: Some(super::super::points::CONSUMER_AFTER_CALL),
        };
        let c = consumer(&how);
        let armed = PAUSE.arm("stack-redeliver-consumer.after-call");
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
