//! Lab 14's roles as typed argument builders: the one place their flags are spelled. The
//! driver's scenarios, explore's cases, chaos, bench and the tests build argv here, so a
//! renamed flag is one edit and a missing required flag does not compile.
//!
//! `argv()` returns the subcommand and its flags (without crash flags, which the engine adds
//! for whichever role it crashes).

use super::variant::Variant;

/// The subcommand of each role.
pub const SENDER: &str = "sender";
pub const PUBLISHER: &str = "publisher";
pub const CONSUMER: &str = "consumer";
pub const ENQUEUE: &str = "enqueue";
pub const VERIFY: &str = "verify";

/// The three database files of a run, relative to its work directory.
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub sender: &'a str,
    pub queue: &'a str,
    pub receiver: &'a str,
}

/// The file names of the contract (DESIGN.md).
pub const FILES: Files<'static> = Files {
    sender: "sender.db",
    queue: "queue.db",
    receiver: "receiver.db",
};

/// What a sender writes.
#[derive(Debug, Clone, Copy)]
pub enum Send<'a> {
    /// One business transaction with these values.
    One {
        contract: &'a str,
        amount: i64,
        message: &'a str,
    },
    /// `n` generated contracts, amounts drawn from `seed`.
    Generate { n: usize, seed: u64 },
}

pub use crate::engine::argv::Argv;

/// `--batch N` where N is not the default of 1.
fn with_batch(argv: Argv, batch: u32) -> Argv {
    assert!(batch >= 1, "a batch holds at least one row");
    argv.maybe("--batch", (batch > 1).then_some(batch))
}

/// `--variant V` for a design other than the correct one.
fn with_variant(argv: Argv, variant: Variant) -> Argv {
    argv.maybe(
        "--variant",
        (variant != Variant::Correct).then_some(variant.name()),
    )
}

/// `sender --db … (--contract … --amount … --message … | --generate N --seed S) [--batch B]`
pub fn sender(files: &Files, send: Send, batch: u32) -> Argv {
    let argv = Argv::new(SENDER).flag("--db", files.sender);
    let argv = match send {
        Send::One {
            contract,
            amount,
            message,
        } => argv
            .flag("--contract", contract)
            .flag("--amount", amount)
            .flag("--message", message),
        Send::Generate { n, seed } => argv.flag("--generate", n).flag("--seed", seed),
    };
    with_batch(argv, batch)
}

/// `publisher --sender … --queue … [--batch B] [--variant V]`
pub fn publisher(files: &Files, batch: u32, variant: Variant) -> Argv {
    let argv = Argv::new(PUBLISHER)
        .flag("--sender", files.sender)
        .flag("--queue", files.queue);
    with_variant(with_batch(argv, batch), variant)
}

/// How a consumer runs beyond its files.
#[derive(Debug, Clone, Copy)]
pub struct Consume<'a> {
    /// `None`: the default name `c1`.
    pub consumer_id: Option<&'a str>,
    /// `None`: the default lease.
    pub lease_ms: Option<i64>,
    pub batch: u32,
    pub variant: Variant,
    pub inbox_retention_ms: Option<i64>,
}

/// The consumer of the contract: one delivery at a time, default name and lease.
pub const CONSUME: Consume<'static> = Consume {
    consumer_id: None,
    lease_ms: None,
    batch: 1,
    variant: Variant::Correct,
    inbox_retention_ms: None,
};

/// `consumer --queue … --receiver … [--consumer-id …] [--lease-ms …] [--batch B] …`
pub fn consumer(files: &Files, how: &Consume) -> Argv {
    let argv = Argv::new(CONSUMER)
        .flag("--queue", files.queue)
        .flag("--receiver", files.receiver)
        .maybe("--consumer-id", how.consumer_id)
        .maybe("--lease-ms", how.lease_ms)
        .maybe("--inbox-retention-ms", how.inbox_retention_ms);
    with_variant(with_batch(argv, how.batch), how.variant)
}

/// `enqueue --queue … --message … --contract … --amount …`: a raw delivery from a faulty
/// upstream.
pub fn enqueue(files: &Files, message: &str, contract: &str, amount: i64) -> Argv {
    Argv::new(ENQUEUE)
        .flag("--queue", files.queue)
        .flag("--message", message)
        .flag("--contract", contract)
        .flag("--amount", amount)
}

/// `verify --sender … --queue … --receiver … [--json] [--expect STAGE]`
pub fn verify(files: &Files, json: bool, expect: Option<&str>) -> Argv {
    let argv = Argv::new(VERIFY)
        .flag("--sender", files.sender)
        .flag("--queue", files.queue)
        .flag("--receiver", files.receiver)
        .switch("--json", json);
    match expect {
        Some(stage) => argv.flag("--expect", stage),
        None => argv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_spell_the_contract_flags() {
        let one = Send::One {
            contract: "R1",
            amount: 25,
            message: "M1",
        };
        assert_eq!(
            sender(&FILES, one, 1).into_vec().join(" "),
            "sender --db sender.db --contract R1 --amount 25 --message M1"
        );
        assert_eq!(
            sender(&FILES, Send::Generate { n: 3, seed: 7 }, 50)
                .into_vec()
                .join(" "),
            "sender --db sender.db --generate 3 --seed 7 --batch 50"
        );
        let p = publisher(&FILES, 1, Variant::MarkBeforeSend);
        assert_eq!(p.role(), "publisher");
        assert_eq!(
            p.args().join(" "),
            "--sender sender.db --queue queue.db --variant mark-before-send"
        );
        let c = consumer(
            &FILES,
            &Consume {
                consumer_id: Some("c2"),
                lease_ms: Some(100),
                ..CONSUME
            },
        );
        assert_eq!(
            c.args().join(" "),
            "--queue queue.db --receiver receiver.db --consumer-id c2 --lease-ms 100"
        );
        assert_eq!(
            verify(&FILES, true, Some("final-verify")).into_vec().join(" "),
            "verify --sender sender.db --queue queue.db --receiver receiver.db --json --expect final-verify"
        );
        assert_eq!(
            enqueue(&FILES, "M1", "R1", 99).args().join(" "),
            "--queue queue.db --message M1 --contract R1 --amount 99"
        );
    }

    /// Every argv a builder makes is one the real command line accepts.
    #[test]
    fn every_builder_argv_parses_with_the_real_cli() {
        let all = [
            sender(&FILES, Send::Generate { n: 2, seed: 1 }, 2),
            publisher(&FILES, 3, Variant::Correct),
            consumer(&FILES, &CONSUME),
            enqueue(&FILES, "M1", "R1", 5),
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
