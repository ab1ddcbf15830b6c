//! `--cut exhaustive`: a case forks at its cut. The case itself logs each call its scenario
//! makes on its steps; at the cut it reads the work directory once, enumerates the states the
//! cut may leave, keeps one per distinct image, goes on with the first ("every unsynced act
//! lost") written in place, and puts its later steps' files under `states/0/`. Every other
//! state runs in a fresh work directory as a replay: the scenario is called again, its calls
//! before the cut answered with the case's own records (their processes do not run again),
//! and at the cut the state's images are written; from there its steps run for real, their
//! files under `states/<k>/`. A replay whose scenario asks for another step than the case did
//! is an error of the state, never a guess.

use std::ops::Range;
use std::sync::Arc;

use anyhow::Result;

use super::{StepRecord, Steps};
use crate::engine::evidence::Process;
use crate::fail;
use crate::power::cut::image::{Crashed, State};
use crate::power::states::{self, Bounds, Fate, Space};

/// One call of the scenario on its steps (run, start, stop), as the case made it.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// For a start: whether it came back ready (a background step) or ended first.
    ready: Option<bool>,
    /// The records it made, as indices into the case's records.
    records: Range<usize>,
}

/// What a case's steps did up to its cut: every state replays it.
pub struct Prefix {
    calls: Vec<Call>,
    records: Vec<(StepRecord, Process)>,
    /// Background steps the cut killed, recorded when the scenario stopped them after it.
    killed: Vec<(StepRecord, Process)>,
}

/// The fork a case took at its cut.
pub struct Forked {
    pub crashed: Arc<Crashed>,
    pub space: Space,
    /// The states to run, as indices into `space.states`: the first of each distinct image,
    /// in order; the case itself went on with the first, index 0.
    pub unique: Vec<usize>,
    /// What the case's own state (index 0) did to the files.
    pub first: State,
    calls: Vec<Call>,
    records: usize,
    killed: Vec<String>,
}

/// A state's replay of the case's prefix.
struct Replay {
    prefix: Arc<Prefix>,
    cursor: usize,
    /// Records it answered with the case's own (their processes did not run again).
    replayed: usize,
    /// The state's images, written at the cut; None once written.
    pending: Option<(Arc<Crashed>, Arc<State>)>,
    rel: String,
}

/// Where a case is in its fork.
#[derive(Default)]
pub(super) struct Fork {
    /// Logging calls: an exhaustive case before its cut.
    logging: bool,
    calls: Vec<Call>,
    forked: Option<Forked>,
    replay: Option<Replay>,
    /// After the cut: the state's directory relative to the case's (with its slash) and the
    /// steps whose files are there.
    state_dir: Option<(String, Vec<String>)>,
}

impl Fork {
    pub(super) fn logging() -> Fork {
        Fork {
            logging: true,
            ..Fork::default()
        }
    }

    /// A step was named (numbered): after the cut its files go to the state's directory.
    pub(super) fn named(&mut self, name: &str) {
        if let Some((_, names)) = &mut self.state_dir {
            names.push(name.to_string());
        }
    }

    /// `states/<k>/` for a step run after the cut, "" for one run before it.
    pub(super) fn rel_of(&self, name: &str) -> String {
        match &self.state_dir {
            Some((rel, names)) if names.iter().any(|n| n == name) => rel.clone(),
            _ => String::new(),
        }
    }

    /// Log a call the case made before its cut.
    pub(super) fn call(&mut self, name: &str, ready: Option<bool>, records: Range<usize>) {
        if self.logging {
            self.calls.push(Call {
                name: name.to_string(),
                ready,
                records,
            });
        }
    }

    /// A step no replay can answer (a paused one): refused under `--cut exhaustive`.
    pub(super) fn unreplayable(&self, what: &str) -> Result<()> {
        if self.logging || self.replay.is_some() {
            return Err(fail::usage(format!(
                "--cut exhaustive: {what} cannot be replayed from a state; explore this lab with a seeded cut"
            )));
        }
        Ok(())
    }
}

impl Steps<'_> {
    /// Make these steps a state's replay of `prefix`, written at the cut as `state`
    /// (`states/<index>/`).
    pub fn replay(
        &mut self,
        prefix: Arc<Prefix>,
        crashed: Arc<Crashed>,
        state: Arc<State>,
        index: usize,
    ) {
        self.fork = Fork {
            replay: Some(Replay {
                prefix,
                cursor: 0,
                replayed: 0,
                pending: Some((crashed, state)),
                rel: format!("states/{index}/"),
            }),
            ..Fork::default()
        };
    }

    /// In a replay before its cut: answer the call `name` with the case's records (true: the
    /// call was replayed; for a start, whether it came back ready).
    pub(super) fn replayed(&mut self, name: &str) -> Result<Option<bool>> {
        let Some(r) = self.fork.replay.as_mut().filter(|r| r.pending.is_some()) else {
            return Ok(None);
        };
        let Some(call) = r.prefix.calls.get(r.cursor) else {
            return Err(fail::usage(format!(
                "--cut exhaustive: the replay asked for {name} past the case's cut"
            )));
        };
        if call.name != name {
            return Err(fail::usage(format!(
                "--cut exhaustive: the replay asked for {name} where the case ran {}",
                call.name
            )));
        }
        r.cursor += 1;
        r.replayed += call.records.len();
        let ready = call.ready.unwrap_or(true);
        let prefix = Arc::clone(&r.prefix);
        for (record, process) in &prefix.records[call.records.clone()] {
            self.memo = None;
            self.records.push(record.clone());
            self.processes.push(process.clone());
        }
        Ok(Some(ready))
    }

    /// Stop a background step the replay did not start: before the cut, as the case's call;
    /// after it, a step the cut killed, with the record the case made of it.
    pub(super) fn stop_replayed(&mut self, name: &str, armed: bool) -> Result<()> {
        if armed {
            self.armed_running = None;
        }
        if self.replayed(name)?.is_some() {
            return Ok(());
        }
        let prefix = match self.fork.replay.as_mut() {
            Some(r) => {
                r.replayed += 1;
                Arc::clone(&r.prefix)
            }
            None => unreachable!("only a replay holds a step it did not start"),
        };
        let Some((record, process)) = prefix.killed.iter().find(|(r, _)| r.name == name) else {
            return Err(fail::usage(format!(
                "--cut exhaustive: the replay stops {name}, which the case did not"
            )));
        };
        self.memo = None;
        self.records.push(record.clone());
        self.processes.push(process.clone());
        Ok(())
    }

    /// The processes a replay answered from the case's records instead of running them.
    pub fn replayed_processes(&self) -> usize {
        self.fork.replay.as_ref().map_or(0, |r| r.replayed)
    }

    /// At a replay's cut: write the state's images into the fresh work directory. False when
    /// this is no replay.
    pub(super) fn install_state(&mut self) -> Result<bool> {
        let Some(r) = self.fork.replay.as_mut() else {
            return Ok(false);
        };
        let Some((crashed, state)) = r.pending.take() else {
            return Ok(false);
        };
        if r.cursor != r.prefix.calls.len() {
            return Err(fail::usage(
                "--cut exhaustive: the replay was cut before the case's own cut",
            ));
        }
        crashed.install(&state, self.work, false)?;
        self.fork.state_dir = Some((r.rel.clone(), Vec::new()));
        Ok(true)
    }

    /// At the case's cut: read the work directory, enumerate its states, keep one per image,
    /// and go on with the first, written in place.
    pub(super) fn fork_at_cut(&mut self, bounds: Bounds) -> Result<()> {
        let crashed = Crashed::capture(self.work)?;
        let space = states::enumerate(&crashed.acts(), bounds);
        let mut seen = std::collections::HashSet::new();
        let mut unique = Vec::new();
        let mut first = None;
        for (index, fates) in space.states.iter().enumerate() {
            crate::interrupt::check()?;
            let state = crashed.state(fates)?;
            if seen.insert(state.sha256.clone()) {
                unique.push(index);
            }
            if index == 0 {
                first = Some(state);
            }
        }
        let first = first.expect("a space holds at least the state with every act lost");
        assert!(space.states[0].iter().all(|f| *f == Fate::Dropped));
        crashed.install(&first, self.work, true)?;
        let dir = self.case_dir.join("states/0");
        std::fs::create_dir_all(&dir)
            .map_err(|e| fail::io(format!("creating {}: {e}", dir.display())))?;
        let killed = self.cut_killed.clone();
        self.fork.logging = false;
        self.fork.state_dir = Some(("states/0/".to_string(), Vec::new()));
        self.fork.forked = Some(Forked {
            crashed: Arc::new(crashed),
            space,
            unique,
            first,
            calls: std::mem::take(&mut self.fork.calls),
            records: self.records.len(),
            killed,
        });
        Ok(())
    }

    /// The fork this case took, with the prefix its states replay: once the case has ended
    /// (the records of the steps its cut killed are made when the scenario stops them).
    pub fn take_fork(&mut self) -> Option<(Forked, Prefix)> {
        let forked = self.fork.forked.take()?;
        let pair = |i: usize| (self.records[i].clone(), self.processes[i].clone());
        let records = (0..forked.records).map(pair).collect();
        let killed = forked
            .killed
            .iter()
            .filter_map(|name| self.records.iter().position(|r| &r.name == name))
            .map(pair)
            .collect();
        let prefix = Prefix {
            calls: forked.calls.clone(),
            records,
            killed,
        };
        Some((forked, prefix))
    }
}
