//! One scenario's history, replayed step by step, with the recorded states checked after
//! each step.
//!
//! An ordinary step's process runs to its end before the next step starts, so its whole
//! trace is replayed at its step. A background process (lab 13's receiver, a dispatcher
//! holding the lock) runs across later steps, and its stdout says nothing of when each line
//! was written relative to them. So it is replayed lazily: at each observation (a readback,
//! a snapshot of the files) it is advanced, one commit at a time, to the first prefix of its
//! commits that gives the recorded state of the files it writes, and never moved back. A
//! process stopped with SIGSTOP for a snapshot (a `frozen` row) is exactly such a prefix; so
//! is a committed state read while it runs. When no prefix gives the recorded state, the
//! mismatch is reported and the scenario is replayed again with that process held where it
//! was, so one bad row does not drag every later check with it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::compare;
use super::cut::EmptyReads;
use super::engine::{Session, Store};
use super::load::{Row, END};
use super::trace::Line;
use super::Problems;
use crate::engine::evidence::Process;
use crate::engine::scenario::Step;
use crate::engine::LabStack;

/// One process of the scenario, its trace, and (per pass) how far it has been replayed.
pub struct Proc<'a> {
    pub index: usize,
    pub step: &'a Step,
    /// Its role serves on several threads into one stdout (`LabReplay::threaded`).
    pub threaded: bool,
    /// Its role prints a reply raw after a `STATUS` line (`LabReplay::raw_replies`).
    pub raw_reply: bool,
    pub record: &'a Process,
    pub lines: Vec<Line>,
    /// The file each SQL line runs on (None: not SQL, or a database the lab does not have).
    pub line_files: Vec<Option<String>>,
    /// Flag name (`sender`, `receipts`, …) to file, from its argv.
    pub files: BTreeMap<String, String>,
    /// Files it writes somewhere in its trace.
    pub writes: BTreeSet<String>,
    /// A background process stops after the snapshot of this step (None: the scenario's end).
    pub stop: Option<usize>,
    /// Files that another process, running in the background when this one started, writes:
    /// when this one read them relative to that one's commits is not in the evidence, so
    /// what its statements on them returned is replayed but not judged.
    pub unjudged: BTreeSet<String>,
    pub pos: usize,
    pub ended: bool,
    pub session: Session,
    /// The files it read as holding nothing, which a cut can leave.
    pub empty: EmptyReads,
}

impl Proc<'_> {
    /// Replay the next line; true when it completed a commit.
    fn advance(&mut self, store: &mut Store) -> bool {
        let at = self.pos;
        self.pos += 1;
        match (&self.lines[at], &self.line_files[at]) {
            (Line::Sql { sql, db }, Some(file)) => {
                let (sql, db, file) = (sql.clone(), db.clone(), file.clone());
                self.feed(store, at, (&db, &file, &sql))
            }
            _ => false,
        }
    }

    /// Replay up to and including the next commit; false when the trace ends first.
    fn advance_commit(&mut self, store: &mut Store) -> bool {
        while self.pos < self.lines.len() {
            if self.advance(store) {
                return true;
            }
        }
        false
    }

    fn finish(&mut self, store: &mut Store) {
        while self.pos < self.lines.len() {
            self.advance(store);
        }
        if !self.ended {
            self.session.end(store, self.lines.len());
            self.ended = true;
        }
    }

    /// Will a line not yet replayed run on `file`?
    fn will_touch(&self, file: &str) -> bool {
        self.line_files[self.pos.min(self.lines.len())..]
            .iter()
            .any(|f| f.as_deref() == Some(file))
    }

    /// A background step the pause nemesis stops (`Ready::Paused`): its lines up to its
    /// `PAUSED` line ran before the next step started, the rest after its stop step.
    fn paused(&self) -> bool {
        use crate::engine::scenario::Ready;
        self.step
            .background
            .is_some_and(|b| b.ready == Ready::Paused)
    }

    /// Replay a paused step up to its `PAUSED` line: what it did before it stopped itself.
    fn advance_to_pause(&mut self, store: &mut Store) {
        let paused = |l: &Line| matches!(l, Line::Other(t) if t.starts_with("PAUSED "));
        while self.pos < self.lines.len() && !paused(&self.lines[self.pos]) {
            self.advance(store);
        }
    }

    fn reset(&mut self) {
        self.pos = 0;
        self.ended = false;
        self.unjudged.clear();
        self.session = Session::default();
        self.empty = EmptyReads::new(self.empty.schemas);
    }
}

/// The scenario being replayed.
pub struct Scene<'a> {
    /// The lab on the stack the run was on.
    pub lab: &'a LabStack,
    pub name: &'a str,
    pub procs: Vec<Proc<'a>>,
    pub rows: Vec<&'a Row>,
    /// Step index to the readback JSON its stdout ends with.
    pub readbacks: BTreeMap<usize, Value>,
    pub databases: &'a [&'a str],
    /// A power-loss run: after each step index here, a cut changed these database files.
    pub cuts: Option<BTreeMap<usize, BTreeSet<String>>>,
}

/// (observation, process) to the position it is held at after a search failed.
pub type Pins = BTreeMap<(usize, usize), usize>;

/// A search that failed: hold `proc` at `pos` at `observation` and replay again.
pub struct Held {
    pub observation: usize,
    pub proc: usize,
    pub pos: usize,
}

impl Scene<'_> {
    /// Files written by two processes that run at the same time: their commits' order is
    /// not in the evidence.
    pub fn concurrent_writers(&self, problems: &mut Problems) {
        let last = self.procs.len().saturating_sub(1);
        // A paused step's commits are ordered: before its pause, or after its stop step.
        for b in self
            .procs
            .iter()
            .filter(|p| p.step.background.is_some() && !p.paused())
        {
            let b_stop = b.stop.unwrap_or(last);
            for q in self
                .procs
                .iter()
                .filter(|q| q.index > b.index && q.index <= b_stop)
            {
                for file in b.writes.intersection(&q.writes) {
                    problems.push((
                        q.record.stdout.clone(),
                        format!(
                            "{}: {} and {} both write {file} while both run; the evidence does not order their commits, so the replay cannot",
                            self.name, b.step.name, q.step.name
                        ),
                    ));
                }
            }
        }
    }

    fn live(&self, at: usize) -> Vec<usize> {
        self.procs
            .iter()
            .filter(|p| p.step.background.is_some() && p.index <= at && !p.ended)
            .map(|p| p.index)
            .collect()
    }

    /// Advance every live process that writes one of `files` to the first prefix of its
    /// commits where `holds` is true for each of them.
    fn settle(
        &mut self,
        store: &mut Store,
        at: usize,
        observation: usize,
        pins: &Pins,
        holds: &dyn Fn(&Store, &str) -> bool,
    ) -> Result<(), Held> {
        for b in self.live(at) {
            let owned: Vec<String> = self.procs[b].writes.iter().cloned().collect();
            if owned.is_empty() {
                continue;
            }
            let proc = &mut self.procs[b];
            if let Some(pos) = pins.get(&(observation, b)) {
                while proc.pos < *pos {
                    proc.advance(store);
                }
                continue;
            }
            // The first prefix where every file it writes holds; failing that, the first
            // where most of them do, so each file that cannot hold is named alone.
            let mut best = (0, proc.pos);
            loop {
                let n = owned.iter().filter(|f| holds(store, f)).count();
                if n == owned.len() {
                    break;
                }
                if n > best.0 {
                    best = (n, proc.pos);
                }
                if !proc.advance_commit(store) {
                    return Err(Held {
                        observation,
                        proc: b,
                        pos: best.1,
                    });
                }
            }
        }
        Ok(())
    }

    /// One pass over the scenario; the store at its end, or the search that failed.
    pub fn pass(&mut self, pins: &Pins, problems: &mut Problems) -> Result<Store, Held> {
        for p in &mut self.procs {
            p.reset();
        }
        let mut store = Store::default();
        if self.cuts.is_some() {
            store.record_windows();
        }
        let mut observation = 0;
        for at in 0..self.procs.len() {
            let others: BTreeSet<String> = self
                .live(at)
                .into_iter()
                .filter(|b| *b != at)
                .flat_map(|b| self.procs[b].writes.iter().cloned())
                .collect();
            self.procs[at].unjudged = others;
            if self.procs[at].step.background.is_none() {
                self.procs[at].finish(&mut store);
            } else if self.procs[at].paused() {
                self.procs[at].advance_to_pause(&mut store);
            }
            self.cut(&mut store, at);
            if let Some(recorded) = self.readbacks.get(&at).cloned() {
                let reader = &self.procs[at];
                let phase = reader.step.phase;
                let files = reader.files.clone();
                let holds = |store: &Store, file: &str| {
                    let flag = files.iter().find(|(_, f)| f.as_str() == file);
                    match (flag, compare::readback(self.lab, phase, &files, store)) {
                        (Some((flag, _)), Ok(Some(replayed))) => {
                            compare::readback_part(&recorded, &replayed, flag)
                        }
                        // A file the reader does not read cannot disagree with it.
                        (None, _) => true,
                        _ => false,
                    }
                };
                self.settle(&mut store, at, observation, pins, &holds)?;
                let held = self.held_note(pins, observation);
                compare::readback_all(
                    self.lab,
                    self.name,
                    &self.procs[at],
                    &recorded,
                    &store,
                    &held,
                    problems,
                );
                observation += 1;
            }
            let step = self.procs[at].step.name.as_str();
            let rows: Vec<&Row> = self
                .rows
                .iter()
                .copied()
                .filter(|r| r.after_step == step)
                .collect();
            if !rows.is_empty() {
                self.observe_rows(&mut store, at, observation, pins, &rows, problems)?;
                observation += 1;
            }
            for b in 0..self.procs.len() {
                if self.procs[b].stop == Some(at) && self.procs[b].index <= at {
                    self.procs[b].finish(&mut store);
                }
            }
        }
        for p in &mut self.procs {
            p.finish(&mut store);
        }
        let rows: Vec<&Row> = self
            .rows
            .iter()
            .copied()
            .filter(|r| r.after_step == END)
            .collect();
        if !rows.is_empty() {
            let at = self.procs.len();
            self.observe_rows(&mut store, at, observation, pins, &rows, problems)?;
        }
        Ok(store)
    }

    fn observe_rows(
        &mut self,
        store: &mut Store,
        at: usize,
        observation: usize,
        pins: &Pins,
        rows: &[&Row],
        problems: &mut Problems,
    ) -> Result<(), Held> {
        let live: Vec<String> = self
            .live(at)
            .iter()
            .map(|b| self.procs[*b].step.name.clone())
            .collect();
        let frozen: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| r.frozen.iter().map(String::as_str))
            .collect();
        for name in frozen {
            if !live.iter().any(|l| l == name) {
                problems.push((
                    crate::engine::evidence::DATABASE_FILES.to_string(),
                    format!(
                        "{} after {}: frozen names {name}, which is not a background step running then",
                        self.name,
                        rows[0].after_step
                    ),
                ));
            }
        }
        let by_file: BTreeMap<&str, &Row> = rows
            .iter()
            .filter(|r| self.databases.contains(&r.file.as_str()))
            .map(|r| (r.file.as_str(), *r))
            .collect();
        let holds = |store: &Store, file: &str| match by_file.get(file) {
            Some(row) => compare::digest(store, row).is_ok(),
            None => true,
        };
        self.settle(store, at, observation, pins, &holds)?;
        let held = self.held_note(pins, observation);
        for (file, row) in &by_file {
            let Err((recorded, replayed)) = compare::digest(store, row) else {
                continue;
            };
            // A live process may have created the file and been stopped before its first
            // statement: an existing empty database is then the truth.
            let creating = self
                .live(at)
                .iter()
                .any(|b| self.procs[*b].will_touch(file));
            if creating && recorded == compare::empty_digest() {
                continue;
            }
            problems.push((
                crate::engine::evidence::DATABASE_FILES.to_string(),
                format!(
                    "{} after {}, {file}: recorded logical_sha256 {recorded}, the replayed history gives {replayed}{held}",
                    self.name, row.after_step
                ),
            ));
        }
        Ok(())
    }

    /// The note a check adds when a live process was held after its search failed.
    fn held_note(&self, pins: &Pins, observation: usize) -> String {
        let held: Vec<String> = pins
            .keys()
            .filter(|(o, _)| *o == observation)
            .map(|(_, b)| {
                let p = &self.procs[*b];
                format!(
                    " (nor does any prefix of the commits of {}, still running then)",
                    p.step.name
                )
            })
            .collect();
        held.join("")
    }
}
