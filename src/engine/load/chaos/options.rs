//! A chaos run's options, as `crashlab chaos` parses them and its audit reads them back, and
//! the command that replays a run.

use std::path::PathBuf;

use crate::engine::crash_mode::{CrashMode, PowerArgs};
use crate::engine::load::kills;
use crate::engine::load::profile::Shape;
use crate::engine::nemesis::Nemesis;
use crate::engine::LabStack;
use crate::power::cut::Style;

/// A chaos run's options, as `crashlab chaos` parses them and its audit reads them back.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Business items to carry end to end (lab 14: contracts, one message each)
    #[arg(long, default_value_t = 1_000)]
    pub messages: usize,
    /// Parallel workers of the last stage (lab 14: consumers)
    #[arg(long, default_value_t = 2)]
    pub consumers: usize,
    /// SIGKILLs to send, at moments and to processes drawn from the seed
    #[arg(long, default_value_t = 20)]
    pub kills: usize,
    /// Seed of the items' values, the kill moments and the victims: the same seed replays the run
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seeds to run, one run each: --seed, --seed + 1, …; more than one writes each run's
    /// evidence under --out as seed-S/ and sums what they lost and duplicated
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    pub runs: u64,
    /// Run only the seeds in bucket K of N (hash:K/N by the FNV-1a hash of each seed's
    /// replay command, count:K/N by position), as one job of a CI matrix; `crashlab merge`
    /// joins the shards
    #[arg(long, value_name = "hash:K/N|count:K/N", value_parser = crate::engine::explore::shard::parse)]
    pub shard: Option<crate::engine::explore::shard::Shard>,
    /// Rows per transaction for the sender, the publisher and the consumers
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// Consumer lease: a claim whose holder is gone is taken over after this
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(i64).range(1..=86_400_000))]
    pub lease_ms: i64,
    /// A process running longer than this is killed and fails the run
    #[arg(long, default_value_t = 60_000)]
    pub process_timeout_ms: u64,
    /// The whole run, recovery included
    #[arg(long, default_value_t = 600_000)]
    pub timeout_ms: u64,
    /// A lab on servers: SIGKILL the server --server names this many times during the run,
    /// at moments drawn from the seed, and start it again on its data (private servers only)
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub server_kills: usize,
    /// Run a known-broken design of the lab instead of its own, to see what it loses
    /// (lab 14 on postgres-rabbitmq: async-commit, no-confirm, auto-ack, transient)
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Print the report as one JSON document on stdout (progress stays on stderr)
    #[arg(long)]
    pub json: bool,
    /// Evidence directory (must not exist): processes.json, chaos.json, logs/, db/
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write a JUnit XML report: one test case per seed, failed with what was lost or
    /// duplicated
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// power-loss: each kill moment kills every role and cuts the files (what was never
    /// synced is lost, --cut, seeded by --seed); default: one role SIGKILLed, files kept
    #[arg(long, value_enum, value_name = "power-loss")]
    pub crash_mode: Option<CrashMode>,
    /// A seed of a study under `--json`: no report on stdout (the study prints one document)
    #[arg(skip)]
    pub quiet: bool,
    #[command(flatten)]
    pub power: PowerArgs,
    #[command(flatten)]
    pub stack: Box<crate::engine::stack::StackArgs>,
}

impl Options {
    /// The cut every kill moment makes, under power loss.
    pub fn cut(&self) -> Option<(Style, u64)> {
        (self.crash_mode == Some(CrashMode::PowerLoss))
            .then(|| (self.power.cut.unwrap_or(Style::Drop), self.seed))
    }

    /// What `processes.json` records as the run's crash mode.
    pub fn crash_mode_name(&self) -> &'static str {
        match self.crash_mode {
            Some(mode) => mode.name(),
            None => kills::NEMESIS.name(),
        }
    }

    pub fn shape(&self) -> Shape {
        Shape {
            messages: self.messages,
            consumers: self.consumers,
            batch: self.batch,
            seed: self.seed,
            lease_ms: self.lease_ms,
            variant: self.variant_name(),
        }
    }

    /// `--variant` as a `'static` name for `Shape` (`validate` refuses a name the lab's
    /// profile does not list), None for the lab's design.
    pub fn variant_name(&self) -> Option<&'static str> {
        self.variant.as_deref().map(intern)
    }
}

/// Distinct variant names kept for the process's life (a command names one).
const NAMES_MAX: usize = 64;

/// `name` as a `'static` str: each distinct name is leaked once (bounded by NAMES_MAX; past
/// it, and for a name longer than any variant's, `"?"`, which no profile lists).
fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = names.iter().find(|n| **n == name) {
        return found;
    }
    if names.len() >= NAMES_MAX || name.len() > 64 {
        return "?";
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}

pub const CONSUMERS_MAX: usize = 16;
pub const KILLS_MAX: usize = 100_000;
pub const TIMEOUT_MS_MAX: u64 = 3_600_000;

/// The command that replays this run: same seed, same schedule, same values.
pub fn replay_command(lab: &LabStack, o: &Options) -> String {
    let mut command = format!(
        "crashlab chaos {} --messages {} --consumers {} --kills {} --seed {} --batch {} --lease-ms {}",
        lab.id(), o.messages, o.consumers, o.kills, o.seed, o.batch, o.lease_ms
    );
    if let Some((style, _)) = o.cut() {
        command.push_str(&format!(" --crash-mode power-loss --cut {}", style.name()));
    }
    if let Some(name) = &o.power.store_profile {
        command.push_str(&format!(" --store-profile {name}"));
    }
    if let Some(def) = lab.stack {
        command.push_str(&format!(" --stack {}", def.name));
    }
    if let (n @ 1.., Some(server)) = (o.server_kills, o.stack.server) {
        command.push_str(&format!(" --server-kills {n} --server {}", server.name()));
    }
    if let Some(variant) = &o.variant {
        command.push_str(&format!(" --variant {variant}"));
    }
    command
}
