//! Lab f2's role subcommands as the command line reads them; `route.rs` runs them.

use std::path::PathBuf;

use clap::Subcommand;

use super::model::{self, Variant};
use crate::cli::{CrashArgs, ReadbackArgs};

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab f2 producer: messages M1, M2, … with these amounts, in one commit, into an empty queue
    PoisonProduce {
        /// The queue database; created with its schema when missing
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// The amounts of M1, M2, … in queue order, comma-separated (the receiver accepts 1 to 1000)
        #[arg(long, value_name = "A,B,…", value_parser = model::parse_amounts, allow_hyphen_values = true)]
        amounts: model::Amounts,
    },
    /// Lab f2 consumer: the head of the queue credited at the receiver, a refusal recorded, retried
    PoisonConsume {
        /// The queue database (must exist)
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// The receiver database; created when missing
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        /// What to do with a message the receiver refuses
        #[arg(long, value_enum, default_value_t = Variant::RetryThenSkip)]
        variant: Variant,
        /// retry-then-skip: failed attempts recorded before a message is parked; retry-forever: attempts this run makes at the head before it reports the stall
        #[arg(long, default_value_t = model::ATTEMPTS_MAX_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=model::ATTEMPTS_MAX_MAX as i64))]
        attempts_max: u32,
        /// Pause after each failed attempt
        #[arg(long, default_value_t = model::BACKOFF_MS_DEFAULT, value_parser = clap::value_parser!(u64).range(0..=model::BACKOFF_MS_MAX))]
        backoff_ms: u64,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f2 replay: one parked message applied once, after its fix (a corrected amount)
    PoisonReplay {
        /// The queue database (must exist)
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// The receiver database; created when missing
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        /// The parked message to replay (M1, M2, …)
        #[arg(long, value_parser = model::parse_message)]
        message: String,
        /// The corrected amount, written into the dead letter before the replay (default: as parked)
        #[arg(long, value_parser = model::parse_amount, allow_hyphen_values = true)]
        amount: Option<i64>,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f2 readback: open the queue and the receiver read-only and print their state
    PoisonVerify {
        /// The queue database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// The receiver database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        #[command(flatten)]
        output: ReadbackArgs,
    },
}

/// Adds these roles to the command line.
pub fn augment(command: clap::Command) -> clap::Command {
    <Roles as Subcommand>::augment_subcommands(command)
}
