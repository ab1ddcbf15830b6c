//! Lab f3's role subcommands as the command line reads them; `route.rs` runs them.

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};

use crate::role::{CrashArgs, ReadbackArgs};

/// Whether the consumer's call carries the message id as its Idempotency-Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// The call carries `Idempotency-Key: <message id>` (the receiver must run keyed)
    Keyed,
    /// The call carries no key (the receiver runs unkeyed): each call is a new effect
    Unkeyed,
}

/// The largest lease, wait and call bound accepted (ms).
pub const MS_MAX: u64 = 600_000;

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab f3: put one message on the queue (id + body) in one commit
    RedeliverEnqueue {
        /// The queue database; created with its schema when missing
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// Message id, [A-Za-z0-9_-]{1,64} (sent as the Idempotency-Key when keyed)
        #[arg(long)]
        id: String,
        /// The message body, the request body of the call
        #[arg(long)]
        body: String,
    },
    /// Lab f3: claim a message with a lease, call the receiver, ack (refused if the lease passed on)
    RedeliverConsumer {
        /// The queue database (must exist: `crashlab redeliver-enqueue` creates it)
        #[arg(long, value_name = "FILE")]
        queue: PathBuf,
        /// Read the receiver's port from this file (the receiver's --port-file)
        #[arg(long, value_name = "FILE")]
        port_file: PathBuf,
        /// This consumer's name, [A-Za-z0-9_-]{1,64}
        #[arg(long)]
        consumer: String,
        /// Keyed: the call carries the message id as Idempotency-Key; unkeyed: no key
        #[arg(long, value_enum)]
        variant: Variant,
        /// How long a claim holds the message before another consumer may take it
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MS_MAX))]
        lease_ms: u64,
        /// Wait up to this long for another consumer's lease to expire (default: exit 75 at once)
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MS_MAX))]
        wait_ms: u64,
        /// Connect and request timeout of the call
        #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
        timeout_ms: u64,
        /// Stop this process (SIGSTOP) at the N-th hit of POINT until continued: the pause nemesis
        #[arg(long, value_name = "POINT[@N]")]
        pause_at: Option<String>,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f3 readback: open the queue and the receiver's file read-only and print their state
    RedeliverVerify {
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
