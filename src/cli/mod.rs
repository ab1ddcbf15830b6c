//! The command line: parse, validate the shape of arguments, and nothing else.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::engine::Lab;
use crate::role::RoleEntry;

mod help;
mod recorded;

pub use help::{command, guide};

/// The whole command line: the engine's commands, then every lab's roles (each lab brings
/// its own, `engine::Lab::roles`). The labs are handed in: the command line reads no list.
pub fn parser(labs: &[&'static Lab]) -> clap::Command {
    let mut command = <Cli as clap::CommandFactory>::command();
    for lab in labs {
        for role in lab.roles {
            command = command.subcommand((role.command)());
        }
    }
    command
}

/// The role spelled once that a command line's first word names, if any.
pub fn role_entry(labs: &[&'static Lab], word: Option<&str>) -> Option<RoleEntry> {
    let word = word?;
    labs.iter()
        .flat_map(|lab| lab.roles.iter())
        .find(|r| r.name == word)
        .copied()
}

/// The command line of one role alone: the global flags and its subcommand, what a role's
/// process parses (the whole tree costs a role a fifth of its start-up).
pub fn role_parser(role: RoleEntry) -> clap::Command {
    let command = clap::Command::new("crashlab").version(env!("CARGO_PKG_VERSION"));
    <Global as clap::Args>::augment_args(command).subcommand((role.command)())
}

/// The role a parsed command line names, if it names one.
pub fn role(labs: &[&'static Lab], matches: &clap::ArgMatches) -> Option<RoleEntry> {
    role_entry(labs, matches.subcommand_name())
}

use crate::engine::crash_mode::{CrashMode, PowerArgs};

#[derive(Parser, Debug)]
#[command(
    name = "crashlab",
    version,
    about = "Crash-recovery experiments on real processes and real SQLite files",
    long_about = "Runs each phase of an experiment as a fresh OS process, crashes it at a named point \
                  right after a real commit, restarts, reads the files back, and records the evidence."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes, a role's included.
#[derive(clap::Args, Debug)]
pub struct Global {
    /// Do not print the SQL trace (to measure its cost; the trace is the default and the evidence)
    #[arg(long, global = true)]
    pub no_trace: bool,
}

/// What `crashlab lab` does.
#[derive(Subcommand, Debug)]
pub enum LabAction {
    /// Print a lab's value: on every stack, or on the one --stack names
    Show {
        /// The lab: its number (14), its name (outbox-inbox) or both, or a lab file
        /// (crashlab.toml; docs/own-system.md)
        lab: String,
        /// Only the lab on this stack (sqlite, postgres-rabbitmq, postgres)
        #[arg(long, value_name = "NAME")]
        stack: Option<String>,
        /// Print the value as one JSON document (docs/lab-value.md)
        #[arg(long)]
        json: bool,
    },
    /// Validate a lab file without running anything: its first mistake as FILE:LINE:COL, exit 2
    Check {
        /// The lab file (crashlab.toml; docs/own-system.md)
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// In a shell script under crashlab: announce the point NAME, and crash there when the
    /// harness says so (`crashlab point NAME || exit $?`; docs/own-system.md)
    Point {
        /// The point's name, as the lab file declares it
        name: String,
    },
    /// List the crash points of a lab (or of every lab)
    Points {
        /// The lab: its number (14), its name (outbox-inbox) or both, or a lab file; default:
        /// every lab
        lab: Option<String>,
        /// Print one JSON document (a list of labs and their points) instead of the table
        #[arg(long)]
        json: bool,
    },
    /// What a lab is, as data: its stacks, roles, points, scenarios, stages, designs, predictions
    Lab {
        #[command(subcommand)]
        action: LabAction,
    },
    /// Run a lab's protocol as fresh processes and record the evidence
    Driver {
        /// The lab: its number (14), its name (outbox-inbox) or both (14-outbox-inbox), or a
        /// lab file (crashlab.toml)
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
        #[command(flatten)]
        stack: Box<crate::engine::stack::StackArgs>,
        /// A step still running after this is killed and recorded as a failure
        #[arg(long, default_value_t = 10_000)]
        step_timeout_ms: u64,
        /// Print one JSON document (verdict, evidence directory, scenarios, steps), no table
        #[arg(long)]
        json: bool,
        /// Also write a JUnit XML report: one test case per scenario
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// A lab under load (lab 14: sender, publisher and K consumers at once), seeded random SIGKILLs
    Chaos {
        /// The lab, by number or name (it must have a load profile), or a lab file
        /// (docs/own-system.md)
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
        /// The stack the lab runs on: bench measures SQLite files (sqlite, the default); a lab
        /// on servers is measured by chaos (docs/load.md)
        #[arg(long, value_name = "NAME")]
        stack: Option<String>,
    },
    /// Move the crash everywhere: every point, every hit, every variant, checked end to end
    Explore(crate::engine::explore::Args),
    /// Join explore or chaos shards (`--shard`) into one run: one report, verdict and audit
    Merge(crate::engine::explore::merge::Args),
    /// Print size, raw SHA-256 and logical SHA-256 (rows, not pages) of database files
    Digest {
        /// Database files to digest (each read from a private copy, never written)
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print one JSON document (a list of files and their digests) instead of lines
        #[arg(long)]
        json: bool,
    },
    /// Test your own HTTP endpoint's Idempotency-Key, including the reply that never arrives
    Probe(Box<crate::probe::Args>),
    /// Start a lab's servers (PostgreSQL, RabbitMQ) and its databases and queues until stdin ends
    Servers(crate::servers::command::Args),
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
