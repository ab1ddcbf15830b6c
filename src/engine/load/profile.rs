//! A lab's load profile: what `chaos` and `bench` need to know of a lab to put it under
//! load, and nothing of how they do it. The engine's loop, kill schedule, progress and
//! reports are generic; a lab that supplies this (in its own folder) can be run by both.
//!
//! The shape of a load is the same for every lab: N business items written by producers,
//! carried and applied by K parallel workers, in transactions of B rows, with a lease for
//! work a dead worker held. A profile turns that shape into role processes (argv from the
//! lab's typed builders), says which role has work to do by looking at the files, and
//! reduces the final files (and the roles' events) to a verdict in Jepsen's words.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::engine::jepsen::Found;
use crate::events::Event;

/// The shape of one load run, as the command gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Business items (lab 14: contracts, each with one message).
    pub messages: usize,
    /// Parallel workers of the last stage (lab 14: consumers).
    pub consumers: usize,
    /// Rows per transaction.
    pub batch: u32,
    /// The seed of the items' values (and of the kill schedule).
    pub seed: u64,
    /// How long a worker's claim lasts before another may take it over.
    pub lease_ms: i64,
    /// The design the roles run: None for the lab's own, else one of
    /// `LoadProfile::variants` (a known-broken design, to show what it loses).
    pub variant: Option<&'static str>,
}

/// One role process of a load run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSpec {
    /// Unique in the run; its processes are `<name>.<run>`.
    pub name: String,
    /// Its argv after `crashlab`, from the lab's typed builders.
    pub argv: Vec<String>,
    /// Which entry of `Observed::work` starts it.
    pub waits_on: usize,
}

/// What a watcher sees in the files at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// Work done so far, in the units of `LoadProfile::units`.
    pub units: u64,
    /// Whether there is work now for the roles waiting on each entry.
    pub work: Vec<bool>,
}

impl Observed {
    /// Nothing left for any role: with no process running, the run is over.
    pub fn idle(&self) -> bool {
        self.work.iter().all(|w| !w)
    }
}

/// Cheap progress readings during a run (connections kept open).
pub trait Watch {
    fn read(&self) -> Result<Observed>;
}

/// The end-to-end verdict on a run's final files and events.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The lab's own counts (chaos.json `check`), re-derived by the audit.
    pub check: serde_json::Value,
    /// Everything the check finds wrong, one line each (empty: the run holds).
    pub problems: Vec<String>,
    /// The checker's anomalies, allowed or not.
    pub anomalies: Vec<Found>,
    /// Those the design does not allow.
    pub bad_anomalies: Vec<Found>,
    /// Items whose effect is missing, and effects beyond the first (the report's headline).
    pub lost: i64,
    pub duplicated: i64,
}

/// A bench stage: roles started together on the files the previous stages left.
#[derive(Debug, Clone)]
pub struct BenchStage {
    pub name: String,
    pub roles: Vec<RoleSpec>,
}

/// A lab under load.
pub trait LoadProfile: Sync {
    /// The largest number of items one run may have.
    fn messages_max(&self) -> usize;

    /// The files the roles share, relative to the work directory.
    fn databases(&self) -> &'static [&'static str];

    /// Create them with their schemas, so every role and the watcher find them.
    fn create(&self, work: &Path) -> Result<()>;

    /// The progress units of a run of `messages` items (the kill schedule's range).
    fn units(&self, messages: usize) -> u64;

    /// The designs `--variant` may name (none: the lab's own design only).
    fn variants(&self) -> &'static [&'static str] {
        &[]
    }

    /// After the run, with every role ended and before `check`: bring the final state into
    /// files in `work` that `check` and the evidence read. A lab on files has nothing to do;
    /// a lab on servers copies its databases' rows (and its queue's messages) into SQLite
    /// files named as its `databases`, so the audit can re-derive the verdict offline.
    fn settle(&self, _work: &Path) -> Result<()> {
        Ok(())
    }

    /// The roles a run starts, names unique, in a fixed order.
    fn roles(&self, shape: &Shape) -> Vec<RoleSpec>;

    /// A watcher over the files in `work` (they exist) during a run of `shape`.
    fn watch(&self, work: &Path, shape: &Shape) -> Result<Box<dyn Watch>>;

    /// The verdict on the files in `work` after a run of `shape`, given every event its
    /// processes wrote (a bench run may give none).
    fn check(&self, work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict>;

    /// The lines the human report prints for the lab's counts (`Verdict::check`), after the
    /// kills and before the anomalies.
    fn summary(&self, check: &serde_json::Value, shape: &Shape) -> Vec<String>;

    /// The lab's own checks of one role process's stdout in a run of `shape` (the audit's):
    /// values the seed determines, say. One line per problem.
    fn check_log(&self, stdout: &str, shape: &Shape) -> Vec<String>;

    /// Bench: each role on one item, in order, in a fresh directory (name, argv).
    fn phases(&self) -> Vec<(&'static str, Vec<String>)>;

    /// Bench: the stages timed one at a time, in order.
    fn stages(&self, shape: &Shape) -> Vec<BenchStage>;

    /// Bench: the same rows as stage `stage` writes, by plain batched inserts in this process
    /// into fresh files in `dir` (same schema and pragmas, no trace): its wall ms.
    fn ceiling(&self, dir: &Path, shape: &Shape, stage: usize) -> Result<f64>;
}
