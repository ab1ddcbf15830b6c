//! Lab f2's roles as typed argument builders: the one place their flags are spelled. The
//! driver's scenarios, explore's cases and the tests build argv here.

use super::model::{Variant, ATTEMPTS_MAX_DEFAULT, BACKOFF_MS_DEFAULT};
pub use crate::engine::argv::Argv;

/// The subcommand of each role (prefixed: every lab's roles share one command line).
pub const PRODUCE: &str = "poison-produce";
pub const CONSUME: &str = "poison-consume";
pub const REPLAY: &str = "poison-replay";
pub const VERIFY: &str = "poison-verify";

/// The two database files of a run, relative to its work directory.
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub queue: &'a str,
    pub receiver: &'a str,
}

pub const FILES: Files<'static> = Files {
    queue: "queue.db",
    receiver: "receiver.db",
};

/// `poison-produce --queue … --amounts A,B,…`
pub fn produce(files: &Files, amounts: &[i64]) -> Argv {
    assert!(
        !amounts.is_empty(),
        "a producer writes at least one message"
    );
    let list: Vec<String> = amounts.iter().map(i64::to_string).collect();
    Argv::new(PRODUCE)
        .flag("--queue", files.queue)
        .flag("--amounts", list.join(","))
}

/// How a consumer runs beyond its files.
#[derive(Debug, Clone, Copy)]
pub struct Consume {
    pub variant: Variant,
    pub attempts_max: u32,
    pub backoff_ms: u64,
}

impl Consume {
    /// The design with the default bounds.
    pub const fn of(variant: Variant) -> Consume {
        Consume {
            variant,
            attempts_max: ATTEMPTS_MAX_DEFAULT,
            backoff_ms: BACKOFF_MS_DEFAULT,
        }
    }
}

/// `poison-consume --queue … --receiver … --variant V [--attempts-max N] [--backoff-ms B]`
pub fn consume(files: &Files, how: &Consume) -> Argv {
    Argv::new(CONSUME)
        .flag("--queue", files.queue)
        .flag("--receiver", files.receiver)
        .flag("--variant", how.variant.name())
        .maybe(
            "--attempts-max",
            (how.attempts_max != ATTEMPTS_MAX_DEFAULT).then_some(how.attempts_max),
        )
        .maybe(
            "--backoff-ms",
            (how.backoff_ms != BACKOFF_MS_DEFAULT).then_some(how.backoff_ms),
        )
}

/// `poison-replay --queue … --receiver … --message M [--amount N]`
pub fn replay(files: &Files, message: &str, amount: Option<i64>) -> Argv {
    Argv::new(REPLAY)
        .flag("--queue", files.queue)
        .flag("--receiver", files.receiver)
        .flag("--message", message)
        .maybe("--amount", amount)
}

/// `poison-verify --queue … --receiver … [--json] [--expect STAGE]`
pub fn verify(files: &Files, json: bool, expect: Option<&str>) -> Argv {
    Argv::new(VERIFY)
        .flag("--queue", files.queue)
        .flag("--receiver", files.receiver)
        .switch("--json", json)
        .maybe("--expect", expect)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_spell_the_flags() {
        assert_eq!(
            produce(&FILES, &[25, 5000]).into_vec().join(" "),
            "poison-produce --queue queue.db --amounts 25,5000"
        );
        let c = Consume {
            attempts_max: 5,
            ..Consume::of(Variant::RetryForever)
        };
        assert_eq!(
            consume(&FILES, &c).args().join(" "),
            "--queue queue.db --receiver receiver.db --variant retry-forever --attempts-max 5"
        );
        assert_eq!(
            replay(&FILES, "M2", Some(500)).args().join(" "),
            "--queue queue.db --receiver receiver.db --message M2 --amount 500"
        );
        assert_eq!(
            verify(&FILES, true, Some("final-skip")).args().join(" "),
            "--queue queue.db --receiver receiver.db --json --expect final-skip"
        );
    }

    /// Every argv a builder makes is one the real command line accepts.
    #[test]
    fn every_builder_argv_parses_with_the_real_cli() {
        let all = [
            produce(&FILES, &[1, -2]),
            consume(&FILES, &Consume::of(Variant::RetryThenSkip)),
            replay(&FILES, "M2", None),
            verify(&FILES, false, None),
        ];
        for argv in all {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone().into_vec());
            if let Err(e) = crate::cli::parser().try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
    }
}
