//! Lab 14's role subcommands as the command line reads them; `route.rs` runs them.

use std::path::PathBuf;

use clap::Subcommand;

use super::model::parse_amount;
use super::variant::Variant;
use crate::cli::{CrashArgs, ReadbackArgs};

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab 14 business transaction: contract + Outbox row in one commit
    Sender {
        /// The sender database (contracts + Outbox); created with its schema when missing
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Contract id of the one contract to write (with --amount and --message)
        #[arg(long, conflicts_with = "generate")]
        contract: Option<String>,
        /// The contract's amount, a whole number (negative allowed)
        #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
        amount: Option<i64>,
        /// Message id of the Outbox row written with the contract (the key the Inbox dedups on)
        #[arg(long)]
        message: Option<String>,
        /// Write N generated contracts (C000001…, M000001…), amounts from --seed
        #[arg(long, value_name = "N")]
        generate: Option<usize>,
        /// Seed of the generated amounts (same seed, same contracts)
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Contracts per transaction
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        batch: u32,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 publisher: queue commit first, then mark the Outbox rows sent
    Publisher {
        /// The sender database whose pending Outbox rows are published
        #[arg(long, value_name = "FILE")]
        sender: PathBuf,
        /// The queue database the deliveries are written to; created when missing
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// Outbox rows per queue transaction
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        batch: u32,
        /// The protocol to run: the lab's design, or one of its known-broken variants
        #[arg(long, value_enum, default_value_t = Variant::Correct)]
        variant: Variant,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 consumer: Inbox + ledger in one receiver commit, then ack
    Consumer {
        /// The queue database deliveries are claimed from
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// The receiver database (Inbox + ledger); created when missing
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        /// This consumer's name; a restart under the same name takes its claims back at once
        #[arg(long, default_value = "c1")]
        consumer_id: String,
        /// How long a claim lasts before another consumer may take it over
        #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(i64).range(1..=86_400_000))]
        lease_ms: i64,
        /// Deliveries per claim, receiver transaction and ack transaction
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        batch: u32,
        /// The protocol to run: the lab's design, or one of its known-broken variants
        #[arg(long, value_enum, default_value_t = Variant::Correct)]
        variant: Variant,
        /// Delete Inbox rows older than this before consuming (default: keep forever)
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..=315_360_000_000))]
        inbox_retention_ms: Option<i64>,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 faulty upstream: write a raw delivery into the queue
    Enqueue {
        /// The queue database to write the delivery into; created when missing
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// Message id of the delivery (reuse one to send a duplicate)
        #[arg(long)]
        message: String,
        /// Contract id in the delivery's payload
        #[arg(long, default_value = "R1")]
        contract: String,
        /// Amount in the delivery's payload, a whole number (negative allowed)
        #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
        amount: i64,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 readback: open the three files read-only and print their state
    Verify {
        /// The sender database (must exist)
        #[arg(long, value_name = "FILE")]
        sender: PathBuf,
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
