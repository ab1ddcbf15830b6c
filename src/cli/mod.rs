//! The command line: parse, validate the shape of arguments, and nothing else.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod help;
mod recorded;

pub use help::{command, guide};

use crate::crash::Mode;
use crate::engine::crash_mode::{CrashMode, PowerArgs};
use crate::labs::outbox_inbox::model::parse_amount;
use crate::labs::outbox_inbox::variant::Variant;

#[derive(Parser, Debug)]
#[command(
    name = "crashlab",
    version,
    about = "Crash-recovery experiments on real processes and real SQLite files",
    long_about = "Runs each phase of an experiment as a fresh OS process, crashes it at a named point \
                  right after a real commit, restarts, reads the files back, and records the evidence."
)]
pub struct Cli {
    /// Do not print the SQL trace (to measure its cost; the trace is the default and the evidence)
    #[arg(long, global = true)]
    pub no_trace: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// How a readback role prints and checks what it read.
#[derive(Args, Debug, Clone)]
pub struct ReadbackArgs {
    /// Print the readback JSON as the last line of stdout
    #[arg(long)]
    pub json: bool,
    /// Compare with a stage of this role's lab and exit 1 with a diff on mismatch
    #[arg(long, value_name = "STAGE")]
    pub expect: Option<String>,
}

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

/// Where a phase may be stopped.
#[derive(Args, Debug, Clone)]
pub struct CrashArgs {
    /// Crash at the N-th time POINT is reached (`crashlab points` lists them)
    #[arg(long, value_name = "POINT[@N]")]
    pub crash_at: Option<String>,
    /// How the crash stops the process
    #[arg(long, value_enum, default_value_t = Mode::Exit)]
    pub crash_mode: Mode,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
        mode: crate::labs::http_dispatch::receiver::Mode,
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
        #[arg(long, value_enum, default_value_t = crate::labs::http_dispatch::dispatcher::Unknown::Resend)]
        unknown: crate::labs::http_dispatch::dispatcher::Unknown,
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
    /// List the crash points of a lab (or of every lab)
    Points {
        /// The lab: its number (14), its name (outbox-inbox) or both; default: every lab
        lab: Option<String>,
        /// Print one JSON document (a list of labs and their points) instead of the table
        #[arg(long)]
        json: bool,
    },
    /// Run a lab's protocol as fresh processes and record the evidence
    Driver {
        /// The lab: its number (14), its name (outbox-inbox) or both (14-outbox-inbox)
        lab: String,
        /// Output directory (must not exist); default target/lab/<lab>-<UTC time>
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Keep the databases under DIR/db/
        #[arg(long)]
        keep_db: bool,
        /// Move a step's crash: STEP=POINT[@N], or STEP=none (repeatable)
        #[arg(long = "move-crash", value_name = "STEP=POINT")]
        moves: Vec<String>,
        /// How every crashing step stops at its point: a process crash, or power-loss (what was
        /// never synced is lost; docs/power-loss.md)
        #[arg(long, value_enum, default_value_t = CrashMode::Exit)]
        crash_mode: CrashMode,
        #[command(flatten)]
        power: PowerArgs,
        /// With --crash-mode power-loss: the seed of the cut (torn and prefix draw from it)
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
        /// A step still running after this is killed and recorded as a failure
        #[arg(long, default_value_t = 10_000)]
        step_timeout_ms: u64,
        /// Print one JSON document (verdict, evidence directory, scenarios, steps), no table
        #[arg(long)]
        json: bool,
    },
    /// A lab under load (lab 14: sender, publisher and K consumers at once), seeded random SIGKILLs
    Chaos {
        /// The lab, by number or name; it must have a load profile
        lab: String,
        #[command(flatten)]
        options: crate::engine::load::chaos::Options,
    },
    /// A lab's costs: per-phase process cost, stage throughput, end to end, plain-insert ceiling
    Bench {
        /// The lab, by number or name; it must have a load profile
        lab: String,
        /// Business items each stage carries (lab 14: contracts, one message each)
        #[arg(long, default_value_t = 10_000)]
        messages: usize,
        /// Rows per transaction, for every role and for the ceiling
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        batch: u32,
        /// Parallel workers of the last stage (lab 14: consumers)
        #[arg(long, default_value_t = 4)]
        consumers: usize,
        /// Runs of each phase for the per-phase process cost (the median is reported)
        #[arg(long, default_value_t = 11)]
        runs: usize,
        /// Print the figures as one JSON document on stdout (progress stays on stderr)
        #[arg(long)]
        json: bool,
    },
    /// Move the crash everywhere: every point, every hit, every variant, checked end to end
    Explore(crate::engine::explore::Args),
    /// Print size, raw SHA-256 and logical SHA-256 (rows, not pages) of database files
    Digest {
        /// Database files to digest (each read from a private copy, never written)
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print one JSON document (a list of files and their digests) instead of lines
        #[arg(long)]
        json: bool,
    },
    /// Re-check a run's evidence offline: digests, exits, claims, readbacks, sources
    Audit {
        /// The evidence directory of a driver, chaos or explore run
        dir: PathBuf,
        /// Print the report as one JSON document
        #[arg(long)]
        json: bool,
        /// Changed sources are a failure, not a note
        #[arg(long)]
        strict_sources: bool,
        /// Also run the recorded command again in a temporary directory and compare
        #[arg(long)]
        rerun: bool,
    },
}
