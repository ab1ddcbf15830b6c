//! Lab 13's roles as typed argument builders: the one place their flags are spelled. The
//! driver's scenarios, explore's cases and the tests build argv here, so a renamed flag is one
//! edit and a missing required flag does not compile.
//!
//! `argv()` returns the subcommand and its flags (without crash flags, which the engine adds
//! for whichever role it crashes).

/// The subcommand of each role.
pub const INTENT: &str = "intent";
pub const RECEIVER: &str = "receiver";
pub const DISPATCHER: &str = "dispatcher";
pub const POST: &str = "dispatch-post";
pub const VERIFY: &str = "dispatch-verify";

/// Every role's subcommand.
pub const ALL: &[&str] = &[INTENT, RECEIVER, DISPATCHER, POST, VERIFY];

pub use crate::engine::argv::Argv;

/// The files of a run, relative to its work directory.
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub intents: &'a str,
    pub receipts: &'a str,
    pub history: &'a str,
    pub receiver: &'a str,
    /// Where the receiver writes its port, and the clients read it.
    pub port_file: &'a str,
}

/// The file names of the contract.
pub const FILES: Files<'static> = Files {
    intents: "intents.db",
    receipts: "receipts.db",
    history: "history.db",
    receiver: "receiver.db",
    port_file: "receiver.port",
};

/// `intent --intents … --key K --body B`
pub fn intent(files: &Files, key: &str, body: &str) -> Argv {
    Argv::new(INTENT)
        .flag("--intents", files.intents)
        .flag("--key", key)
        .flag("--body", body)
}

/// How a receiver runs beyond its files and mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct Serve {
    pub key_ttl_ms: Option<i64>,
    pub delay_ms: Option<u64>,
    pub lifetime_ms: Option<u64>,
}

/// `receiver --db … --mode M --port-file … [--key-ttl-ms …] [--delay-ms …] [--lifetime-ms …]`
pub fn receiver(files: &Files, mode: &str, how: &Serve) -> Argv {
    Argv::new(RECEIVER)
        .flag("--db", files.receiver)
        .flag("--mode", mode)
        .flag("--port-file", files.port_file)
        .maybe("--key-ttl-ms", how.key_ttl_ms)
        .maybe("--delay-ms", how.delay_ms)
        .maybe("--lifetime-ms", how.lifetime_ms)
}

/// How a dispatcher runs beyond its files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dispatch<'a> {
    pub lock_wait_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    /// `resend` (the default) or `hold`.
    pub unknown: Option<&'a str>,
}

/// `dispatcher --intents … --receipts … --history … --port-file … [options]`
pub fn dispatcher(files: &Files, how: &Dispatch) -> Argv {
    Argv::new(DISPATCHER)
        .flag("--intents", files.intents)
        .flag("--receipts", files.receipts)
        .flag("--history", files.history)
        .flag("--port-file", files.port_file)
        .maybe("--lock-wait-ms", how.lock_wait_ms)
        .maybe("--timeout-ms", how.timeout_ms)
        .maybe("--unknown", how.unknown)
}

/// One raw request of `dispatch-post`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Post<'a> {
    pub key: Option<&'a str>,
    pub body: Option<&'a str>,
    pub body_bytes: Option<u64>,
    pub get_effect: bool,
}

/// `dispatch-post --port-file … [--key K] [--body B | --body-bytes N] [--get-effect]`
pub fn post(files: &Files, how: &Post) -> Argv {
    Argv::new(POST)
        .flag("--port-file", files.port_file)
        .maybe("--key", how.key)
        .maybe("--body", how.body)
        .maybe("--body-bytes", how.body_bytes)
        .switch("--get-effect", how.get_effect)
}

/// `dispatch-verify --intents … --receipts … --history … --receiver … [--json] [--expect S]`
pub fn verify(files: &Files, json: bool, expect: Option<&str>) -> Argv {
    Argv::new(VERIFY)
        .flag("--intents", files.intents)
        .flag("--receipts", files.receipts)
        .flag("--history", files.history)
        .flag("--receiver", files.receiver)
        .switch("--json", json)
        .maybe("--expect", expect)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_spell_the_contract_flags() {
        assert_eq!(
            intent(&FILES, "K1", "{}").into_vec().join(" "),
            "intent --intents intents.db --key K1 --body {}"
        );
        let r = receiver(
            &FILES,
            "keyed",
            &Serve {
                delay_ms: Some(1500),
                ..Serve::default()
            },
        );
        assert_eq!(r.role(), "receiver");
        assert_eq!(
            r.args().join(" "),
            "--db receiver.db --mode keyed --port-file receiver.port --delay-ms 1500"
        );
        assert_eq!(
            dispatcher(
                &FILES,
                &Dispatch {
                    unknown: Some("hold"),
                    ..Dispatch::default()
                }
            )
            .args()
            .join(" "),
            "--intents intents.db --receipts receipts.db --history history.db --port-file receiver.port --unknown hold"
        );
        assert_eq!(
            post(
                &FILES,
                &Post {
                    key: Some("K1"),
                    get_effect: true,
                    ..Post::default()
                }
            )
            .args()
            .join(" "),
            "--port-file receiver.port --key K1 --get-effect"
        );
        assert_eq!(
            verify(&FILES, true, Some("s.final")).args().join(" "),
            "--intents intents.db --receipts receipts.db --history history.db --receiver receiver.db --json --expect s.final"
        );
    }

    /// Every argv a builder makes is one the real command line accepts.
    #[test]
    fn every_builder_argv_parses_with_the_real_cli() {
        let all = [
            intent(&FILES, "K1", "{}"),
            receiver(
                &FILES,
                "unkeyed",
                &Serve {
                    key_ttl_ms: Some(1),
                    delay_ms: Some(1),
                    lifetime_ms: Some(1000),
                },
            ),
            dispatcher(
                &FILES,
                &Dispatch {
                    lock_wait_ms: Some(1),
                    timeout_ms: Some(100),
                    unknown: Some("hold"),
                },
            ),
            post(
                &FILES,
                &Post {
                    body_bytes: Some(10),
                    ..Post::default()
                },
            ),
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
