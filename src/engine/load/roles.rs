//! The roles of a load run as child processes, through the one exec layer
//! (`engine::process`): spawning one with its logs and its events file, counting the starts
//! that failed in a row, and killing them all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::engine::evidence::Process;
use crate::engine::load::pipeline::{FAILED_STARTS_MAX, IDLE_RESTART, LOGS};
use crate::engine::process::{self, Started};
use crate::fail;

pub struct Running {
    pub started: Started,
    pub step: String,
    /// `logs/<step>.stdout.txt` and `logs/<step>.stderr.txt`, relative to the run directory.
    pub stdout: String,
    pub stderr: String,
    pub killed: bool,
    /// Index into `Outcome::kills` of the engine's kill of this process.
    pub kill: Option<usize>,
    /// It was running when chaos killed a server (`server_kills`): a 69 is that kill's doing.
    pub server_lost: bool,
}

pub struct Role {
    pub name: String,
    /// Its argv after `crashlab`, `--no-trace` included when the run asks for it.
    pub argv: Vec<String>,
    /// Which entry of the watcher's `work` starts it.
    pub waits_on: usize,
    pub runs: u32,
    pub running: Option<Running>,
    pub not_before: Option<std::time::Instant>,
    /// The engine killed it: start it again even when no work is visible.
    pub restart: bool,
    /// Starts in a row that failed (reset by a clean exit or the engine's kill).
    pub failed_starts: u32,
    /// What the last failed start showed: its exit, its stderr's first line, or the spawn
    /// error; and whether that was an I/O failure (exit 74, or an I/O error spawning it).
    pub last_failure: Option<(String, bool)>,
}

impl Role {
    pub fn new(name: String, argv: Vec<String>, waits_on: usize) -> Role {
        Role {
            name,
            argv,
            waits_on,
            runs: 0,
            running: None,
            not_before: None,
            restart: false,
            failed_starts: 0,
            last_failure: None,
        }
    }

    /// A start failed: count it, remember why, and try again after a pause.
    pub fn failed(&mut self, why: String, io: bool) {
        self.failed_starts += 1;
        self.last_failure = Some((why, io));
        self.not_before = Some(std::time::Instant::now() + IDLE_RESTART);
    }

    /// The run's end when this role failed too many starts in a row.
    pub fn given_up(&self) -> Option<anyhow::Error> {
        if self.failed_starts < FAILED_STARTS_MAX {
            return None;
        }
        let (why, io) = self.last_failure.clone().unwrap_or_default();
        let message = format!(
            "{} failed {} starts in a row, the last: {why}; stopped instead of restarting it until the time limit",
            self.name, self.failed_starts
        );
        Some(if io {
            fail::io(message)
        } else {
            fail::failed(message)
        })
    }
}

/// The argv a role runs with: `--no-trace` first when the run measures without the trace.
pub fn with_trace(argv: &[String], trace: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len() + 1);
    if !trace {
        out.push("--no-trace".to_string());
    }
    out.extend(argv.iter().cloned());
    out
}

/// SIGKILL every running role and reap it: nothing the pipeline started outlives it.
pub fn stop_all(roles: &mut [Role]) {
    for role in roles.iter_mut() {
        if let Some(running) = role.running.take() {
            process::kill(&running.started);
            // Reaps it whatever it returns (an interrupted wait kills and reaps as well).
            let _ = process::wait_bounded(
                running.started.pid,
                running.started.started,
                Duration::from_secs(10),
            );
        }
    }
}

/// `: <first line of its stderr>` of an ended process, or nothing when it printed none.
pub fn first_line(dir: &Path, process: &Process) -> String {
    std::fs::read_to_string(dir.join(&process.stderr))
        .ok()
        .and_then(|text| text.lines().next().map(|l| format!(": {l}")))
        .unwrap_or_default()
}

/// The events file of a step, relative to the run directory.
pub fn events_rel(step: &str) -> String {
    format!("{LOGS}/{step}.events.jsonl")
}

/// Start the next run of `role` in `work`, its logs and events under `<dir>/logs/`.
pub fn spawn(
    exe: &Path,
    work: &Path,
    dir: &Path,
    role: &mut Role,
    events: bool,
    env: &[(String, String)],
) -> Result<Running> {
    role.runs += 1;
    let step = format!("{}.{}", role.name, role.runs);
    let stdout = format!("{LOGS}/{step}.stdout.txt");
    let stderr = format!("{LOGS}/{step}.stderr.txt");
    // Absolute: the child runs in `work`, and a relative `--out` is relative to us.
    let events_path: Option<PathBuf> = match events {
        true => Some(std::path::absolute(dir.join(events_rel(&step)))?),
        false => None,
    };
    let started = process::spawn_env(
        exe,
        &role.argv,
        work,
        &dir.join(&stdout),
        &dir.join(&stderr),
        events_path.as_deref(),
        env,
    )?;
    Ok(Running {
        started,
        step,
        stdout,
        stderr,
        killed: false,
        kill: None,
        server_lost: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_given_up_after_its_bound_of_failed_starts_with_the_cause() {
        let mut role = Role::new("consumer-c1".into(), Vec::new(), 2);
        for _ in 1..FAILED_STARTS_MAX {
            role.failed("exit 74: crashlab: disk full".into(), true);
            assert!(role.given_up().is_none());
        }
        role.failed("exit 74: crashlab: disk full".into(), true);
        let e = role.given_up().expect("the bound is reached");
        assert_eq!(fail::exit_code(&e), fail::EXIT_IOERR);
        assert_eq!(
            fail::one_line(&e),
            format!(
                "consumer-c1 failed {FAILED_STARTS_MAX} starts in a row, the last: exit 74: crashlab: disk full; stopped instead of restarting it until the time limit"
            )
        );
        // Not an I/O failure: the run fails (1), with the same words.
        role.failed("exit 2: crashlab: corrupt".into(), false);
        let e = role.given_up().expect("still past the bound");
        assert_eq!(fail::exit_code(&e), fail::EXIT_FAILED);
    }

    #[test]
    fn no_trace_goes_first_only_when_asked() {
        let argv = vec!["sender".to_string(), "--db".to_string()];
        assert_eq!(with_trace(&argv, true), argv);
        assert_eq!(with_trace(&argv, false)[0], "--no-trace");
    }
}
