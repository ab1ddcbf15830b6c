//! Lab 14's roles on the stack as typed argument builders: the one place their flags are
//! spelled. Their argv names logical stores (`--sender sender`), never a URL: `stack.json`
//! in the work directory says where those are, so a step's argv is the same in every run.

use super::variant::Variant;
pub use crate::engine::argv::Argv;

pub const SENDER: &str = "stack-sender";
pub const PUBLISHER: &str = "stack-publisher";
pub const CONSUMER: &str = "stack-consumer";
pub const ENQUEUE: &str = "stack-enqueue";
pub const VERIFY: &str = "stack-verify";

/// The logical stores of a run (`StackDef`'s names).
#[derive(Debug, Clone, Copy)]
pub struct Stores<'a> {
    pub sender: &'a str,
    pub queue: &'a str,
    pub receiver: &'a str,
}

pub const STORES: Stores<'static> = Stores {
    sender: "sender",
    queue: "messages",
    receiver: "receiver",
};

/// What a sender writes.
#[derive(Debug, Clone, Copy)]
pub enum Send<'a> {
    One {
        contract: &'a str,
        amount: i64,
        message: &'a str,
    },
    /// `n` generated contracts, amounts drawn from `seed`.
    Generate { n: usize, seed: u64 },
}

fn with_variant(argv: Argv, variant: Variant) -> Argv {
    argv.maybe(
        "--variant",
        (variant != Variant::Correct).then_some(variant.name()),
    )
}

/// `stack-sender --db … (--contract … --amount … --message … | --generate N --seed S)`
pub fn sender(stores: &Stores, send: Send) -> Argv {
    let argv = Argv::new(SENDER).flag("--db", stores.sender);
    match send {
        Send::One {
            contract,
            amount,
            message,
        } => argv
            .flag("--contract", contract)
            .flag("--amount", amount)
            .flag("--message", message),
        Send::Generate { n, seed } => argv.flag("--generate", n).flag("--seed", seed),
    }
}

/// `stack-publisher --sender … --queue … [--variant V]`
pub fn publisher(stores: &Stores, variant: Variant) -> Argv {
    let argv = Argv::new(PUBLISHER)
        .flag("--sender", stores.sender)
        .flag("--queue", stores.queue);
    with_variant(argv, variant)
}

/// `stack-consumer --queue … --receiver … [--variant V]`
pub fn consumer(stores: &Stores, variant: Variant) -> Argv {
    let argv = Argv::new(CONSUMER)
        .flag("--queue", stores.queue)
        .flag("--receiver", stores.receiver);
    with_variant(argv, variant)
}

/// `stack-enqueue --queue … --message … --contract … --amount …`: a raw message from a faulty
/// upstream.
pub fn enqueue(stores: &Stores, message: &str, contract: &str, amount: i64) -> Argv {
    Argv::new(ENQUEUE)
        .flag("--queue", stores.queue)
        .flag("--message", message)
        .flag("--contract", contract)
        .flag("--amount", amount)
}

/// `stack-verify --sender … --queue … --receiver … [--json] [--expect STAGE]`
pub fn verify(stores: &Stores, json: bool, expect: Option<&str>) -> Argv {
    let argv = Argv::new(VERIFY)
        .flag("--sender", stores.sender)
        .flag("--queue", stores.queue)
        .flag("--receiver", stores.receiver)
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
    fn builders_spell_the_flags_with_logical_names() {
        let one = Send::One {
            contract: "R1",
            amount: 25,
            message: "M1",
        };
        assert_eq!(
            sender(&STORES, one).into_vec().join(" "),
            "stack-sender --db sender --contract R1 --amount 25 --message M1"
        );
        assert_eq!(
            publisher(&STORES, Variant::NoConfirm).into_vec().join(" "),
            "stack-publisher --sender sender --queue messages --variant no-confirm"
        );
        assert_eq!(
            consumer(&STORES, Variant::Correct).into_vec().join(" "),
            "stack-consumer --queue messages --receiver receiver"
        );
    }

    /// Every argv a builder makes is one the real command line accepts.
    #[test]
    fn every_builder_argv_parses_with_the_real_cli() {
        let all = [
            sender(&STORES, Send::Generate { n: 2, seed: 1 }),
            publisher(&STORES, Variant::Transient),
            consumer(&STORES, Variant::AutoAck),
            enqueue(&STORES, "M1", "R1", 5),
            verify(&STORES, true, Some("final-verify")),
        ];
        for argv in all {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone().into_vec());
            if let Err(e) = crate::cli::parser().try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
    }
}
