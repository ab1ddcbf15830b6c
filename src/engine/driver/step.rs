//! Finishing one step: its output files' names, how a background step is stopped, and the
//! record and result the driver makes of it once it has ended.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::observe;
use crate::engine::check::{check, Output};
use crate::engine::evidence::{Process, StepResult};
use crate::engine::nemesis::Nemesis;
use crate::engine::process;
use crate::engine::scenario::{Expect, Ready, Scenario, Step, Stop};
use crate::fail;

/// A step that ended with an I/O error (exit 74: a full disk) says nothing about the protocol,
/// and every later step would fail for it too: the run stops here, naming the step.
pub(super) fn io_failure(
    scenario: &str,
    step: &Step,
    ended: &process::Ended,
    stderr: &Path,
) -> Result<()> {
    if ended.exit != fail::EXIT_IOERR {
        return Ok(());
    }
    let said = fs::read_to_string(stderr).unwrap_or_default();
    let said = said.lines().next().unwrap_or("no message").trim();
    let said = said.strip_prefix("crashlab: ").unwrap_or(said);
    Err(fail::io(format!(
        "step {scenario}/{} ended with an I/O error (exit 74: {said}); is the work directory's or the evidence directory's disk full?",
        step.name
    )))
}

/// What finishing a step needs to know of its scenario.
pub(super) struct Ctx<'a> {
    pub scenario: &'a Scenario,
    pub sub: &'a str,
    pub dir: &'a Path,
    pub nemesis: &'a dyn Nemesis,
}

impl Ctx<'_> {
    /// The step's stdout and stderr files, relative to the run's directory.
    pub(super) fn rel(&self, step: &Step) -> (String, String) {
        let rel = |kind: &str| {
            if self.sub.is_empty() {
                format!("{}.{kind}.txt", step.name)
            } else {
                format!("{}/{}.{kind}.txt", self.sub, step.name)
            }
        };
        (rel("stdout"), rel("stderr"))
    }

    pub(super) fn stop(
        &self,
        step: &Step,
        started: &process::Started,
        timeout: Duration,
    ) -> Result<process::Ended> {
        let term = step.background.is_some_and(|b| b.stop == Stop::Term);
        if step.background.is_some_and(|b| b.stop == Stop::Continue) {
            crate::engine::nemesis::PAUSE.resume(started.pid);
        }
        process::stop(started, term, timeout)
    }

    /// Check an ended step and make its record.
    pub(super) fn finish(
        &self,
        step: &Step,
        ended: &process::Ended,
        readbacks: &mut BTreeMap<String, String>,
    ) -> (Process, StepResult) {
        let (stdout_rel, stderr_rel) = self.rel(step);
        let stdout_path = self.dir.join(&stdout_rel);
        let stdout = fs::read_to_string(&stdout_path).unwrap_or_default();
        let stderr = fs::read_to_string(self.dir.join(&stderr_rel)).unwrap_or_default();
        let events = observe::read_events(&process::events_file(&stdout_path));
        let verdict = check(
            step,
            self.nemesis,
            &Output {
                exit: ended.exit,
                timed_out: ended.timed_out,
                stdout: &stdout,
                stderr: &stderr,
                events: match &events {
                    Ok(events) => Ok(events),
                    Err(why) => Err(why),
                },
            },
        );
        if let Expect::Readback(_) = step.expect {
            if let Some(line) = stdout.lines().rev().find(|l| l.starts_with('{')) {
                readbacks.insert(
                    readback_key(&self.scenario.name, &step.name),
                    line.to_string(),
                );
            }
        }
        let mut argv = vec!["crashlab".to_string()];
        argv.extend(step.argv(self.nemesis));
        let process = ended.record(process::Step {
            scenario: self.scenario.name.clone(),
            step: step.name.clone(),
            argv,
            expected_exit: step.expected_exit(self.nemesis),
            crash: step
                .crash
                .clone()
                .map(|point| (point, self.nemesis.name().to_string())),
            stdout: stdout_rel,
            stderr: stderr_rel,
        });
        let result = StepResult {
            scenario: self.scenario.name.clone(),
            step: step.name.clone(),
            ok: verdict.problems.is_empty(),
            expected: verdict.expected,
            observed: verdict.observed,
            problems: verdict.problems,
        };
        (process, result)
    }
}

/// A background step that the pause nemesis holds stopped until its `Stop::Continue`.
pub(super) fn paused(step: &Step) -> bool {
    step.background.is_some_and(|b| b.ready == Ready::Paused)
}

/// For a step ready when paused: whether the kernel reports it stopped within `timeout`
/// (false: it ended or never stopped, and the driver ends and records it). True for any
/// other readiness.
pub(super) fn stopped_if_paused(
    ready: Ready,
    started: &process::Started,
    timeout: Duration,
) -> Result<bool> {
    if ready != Ready::Paused {
        return Ok(true);
    }
    crate::engine::nemesis::PAUSE.await_stopped(started.pid, timeout)
}

/// Readbacks are kept by scenario and step: lab 13 repeats step names across scenarios.
pub(super) fn readback_key(scenario: &str, step: &str) -> String {
    format!("{scenario}/{step}")
}
