//! What a case's steps share and what each leaves behind: the environment, the crash, and
//! the record of an ended process with its events.

use std::path::Path;
use std::time::Duration;

use crate::engine::nemesis::Nemesis;
use crate::engine::process::Ended;
use crate::events::Event;

/// What every case shares.
pub struct Env<'a> {
    pub exe: &'a Path,
    /// The run's directory being written (the `.partial` one), absolute: the children run
    /// in their work directory and write their events here.
    pub dir: &'a Path,
    /// Where the cases' work directories are made.
    pub work_root: &'a Path,
    pub nemesis: &'a dyn Nemesis,
    pub timeout: Duration,
    /// The lab's kind of store: the cases' snapshots and kept databases go through it.
    pub store: &'a dyn crate::engine::state::StateStore,
    /// Under power loss, the run's designs (store profile × cut style); empty otherwise.
    pub power: &'a [PowerDesign],
    /// The store profile the case's roles pin (a case of a power design: its own).
    pub profile: crate::power::profile::Profile,
    /// A lab on servers: the run's servers; each case gets its own databases and queues.
    pub session: Option<&'a crate::engine::fleet::Session>,
    /// Under `--cut exhaustive`: the bounds of each case's states (its own design's).
    pub states: Option<crate::power::states::Bounds>,
}

/// Under power loss a design of the run is a store profile under one cut style: the lab's
/// own design (its first, the correct one) runs with every role pinning the profile, and
/// every crash is that cut.
pub struct PowerDesign {
    /// `<profile>/<cut>`, as the table, the predictions and the evidence name it.
    pub name: &'static str,
    pub lab_design: &'static str,
    pub profile: crate::power::profile::Profile,
    pub nemesis: &'static dyn Nemesis,
    /// Under `--cut exhaustive`: every state of each cut is run, within these bounds.
    pub states: Option<crate::power::states::Bounds>,
}

/// The crash of a case: `point@hit`, armed in the first scenario step of `role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    pub point: &'static str,
    pub hit: u32,
    /// The probe saw the point reached at least `hit` times.
    pub expect_reached: bool,
}

impl Crash {
    /// The role a point belongs to: `consumer` for `consumer.after-ack`.
    pub fn role(&self) -> &'static str {
        self.point.split('.').next().unwrap_or(self.point)
    }
}

/// One ended process, as the lab's judge and the engine's checks see it.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// `01-sender`: the stem of its files.
    pub name: String,
    /// Its subcommand.
    pub role: String,
    pub armed: bool,
    /// Run by the scenario (false: by recovery).
    pub in_scenario: bool,
    pub ended: Ended,
    /// Its events; empty when the file could not be read (`events_error` says why).
    pub events: Vec<Event>,
    pub events_error: Option<String>,
}

impl StepRecord {
    /// It reported the crash it was armed for.
    pub fn crashed(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Crash { .. }))
    }

    /// It ran to its end and reported its armed point not reached.
    pub fn not_reached(&self) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e, Event::NotReached { .. }))
    }

    /// Its commits: (database, what it made durable).
    pub fn commits(&self) -> impl Iterator<Item = (&str, &str)> {
        self.events.iter().filter_map(|e| match e {
            Event::Commit { db, what } => Some((db.as_str(), what.as_str())),
            _ => None,
        })
    }
}
