//! Lab 13's role subcommands as the command line reads them; `route.rs` runs them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::{CrashArgs, ReadbackArgs};

/// Where a client finds lab 13's receiver: a port, or the file the receiver wrote it to.
#[derive(Args, Debug, Clone)]
pub struct PeerArgs {
    /// The receiver's port on 127.0.0.1 (or --port-file)
    #[arg(
        long,
        conflicts_with = "port_file",
        required_unless_present = "port_file"
    )]
    pub port: Option<u16>,
    /// Read the receiver's port from this file (its --port-file)
    #[arg(long, value_name = "FILE")]
    pub port_file: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab 13: record an intent (stable key + body) in one commit
    Intent {
        /// The intents database; created with its schema when missing
        #[arg(long, value_name = "FILE")]
        intents: PathBuf,
        /// Idempotency key, [A-Za-z0-9_-]{1,64}
        #[arg(long)]
        key: String,
        /// The request body to deliver, sent unchanged on every attempt
        #[arg(long)]
        body: String,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 13: HTTP receiver on 127.0.0.1; prints `READY <port>` when it accepts connections
    Receiver {
        /// The receiver database (effects + idempotency ledger); created when missing
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Keyed: one effect per Idempotency-Key; unkeyed: every request is a new effect
        #[arg(long, value_enum)]
        mode: super::receiver::Mode,
        /// 0: any free port
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Write the port here (atomically) before printing READY
        #[arg(long, value_name = "FILE")]
        port_file: Option<PathBuf>,
        /// Worker threads: the bound on requests handled at once
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
        workers: u64,
        /// Forget keys older than this (default: keys kept forever)
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=315_360_000_000))]
        key_ttl_ms: Option<i64>,
        /// Wait this long before applying each POST (to hold a request in flight)
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
        delay_ms: u64,
        /// Stop by itself after this long
        #[arg(long, default_value_t = 600_000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
        lifetime_ms: u64,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 13: send every intent without a receipt; receipt, then history, after the reply
    Dispatcher {
        /// The intents database (must exist: `crashlab intent` creates it)
        #[arg(long, value_name = "FILE")]
        intents: PathBuf,
        /// The receipts database, one row per delivered key; created when missing
        #[arg(long, value_name = "FILE")]
        receipts: PathBuf,
        /// The history database, the dispatcher's local log; created when missing
        #[arg(long, value_name = "FILE")]
        history: PathBuf,
        #[command(flatten)]
        peer: PeerArgs,
        /// The lock file (default: dispatcher.lock beside the intents file)
        #[arg(long, value_name = "FILE")]
        lock: Option<PathBuf>,
        /// Wait up to this long for a held lock (default: exit 75 at once)
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=600_000))]
        lock_wait_ms: u64,
        /// Connect and request timeout
        #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
        timeout_ms: u64,
        /// An attempt without a receipt: send again, or hold the intent as unknown
        #[arg(long, value_enum, default_value_t = super::dispatcher::Unknown::Resend)]
        unknown: super::dispatcher::Unknown,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 13 readback: open the four files read-only and print their state
    DispatchVerify {
        /// The intents database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        intents: PathBuf,
        /// The receipts database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        receipts: PathBuf,
        /// The history database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        history: PathBuf,
        /// The receiver database (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        #[command(flatten)]
        output: ReadbackArgs,
    },
    /// Lab 13: one raw request to the receiver; prints STATUS, the replay header, the body
    DispatchPost {
        #[command(flatten)]
        peer: PeerArgs,
        /// Sent as Idempotency-Key, unchecked (the receiver judges it)
        #[arg(long)]
        key: Option<String>,
        /// The request body
        #[arg(long, default_value = "{}", conflicts_with = "body_bytes")]
        body: String,
        /// Send a body of N bytes instead
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
        body_bytes: Option<u64>,
        /// GET /effect/<key> instead of POST
        #[arg(long)]
        get_effect: bool,
        /// Connect and request timeout
        #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
        timeout_ms: u64,
    },
}

/// Adds these roles to the command line.
pub fn augment(command: clap::Command) -> clap::Command {
    <Roles as Subcommand>::augment_subcommands(command)
}
