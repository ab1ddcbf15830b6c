//! The pipeline's roles as child processes: their argv, spawning one with its logs, reaping
//! it without blocking, counting the starts that failed in a row, and killing them all.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::engine::evidence::Process;
use crate::engine::load::pipeline::{
    Logs, Plan, FAILED_STARTS_MAX, IDLE_RESTART, LOGS, QUEUE_DB, RECEIVER_DB, SENDER_DB,
};
use crate::fail;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sender,
    Publisher,
    Consumer,
}

pub struct Running {
    pub pid: libc::pid_t,
    pub started: Instant,
    pub step: String,
    pub stdout: String,
    pub stderr: String,
    pub killed: bool,
    /// Index into `Outcome::kills` of the driver's kill of this process.
    pub kill: Option<usize>,
}

pub struct Role {
    pub name: String,
    pub kind: Kind,
    pub argv: Vec<String>,
    pub runs: u32,
    pub running: Option<Running>,
    pub not_before: Option<Instant>,
    /// The driver killed it: start it again even when no work is visible.
    pub restart: bool,
    /// Starts in a row that failed (reset by a clean exit or the driver's kill).
    pub failed_starts: u32,
    /// What the last failed start showed: its exit, its stderr's first line, or the spawn
    /// error; and whether that was an I/O failure (exit 74, or an I/O error spawning it).
    pub last_failure: Option<(String, bool)>,
}

impl Role {
    pub fn new(name: String, kind: Kind, argv: Vec<String>) -> Role {
        Role {
            name,
            kind,
            argv,
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
        self.not_before = Some(Instant::now() + IDLE_RESTART);
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

pub fn role_argv(kind: Kind, plan: &Plan, consumer: usize) -> Vec<String> {
    let batch = plan.batch.to_string();
    let strings = |v: &[&str]| {
        let mut argv = if plan.trace {
            Vec::new()
        } else {
            vec!["--no-trace".to_string()]
        };
        argv.extend(v.iter().map(|s| s.to_string()));
        argv
    };
    match kind {
        Kind::Sender => strings(&[
            "sender",
            "--db",
            SENDER_DB,
            "--generate",
            &plan.messages.to_string(),
            "--seed",
            &plan.seed.to_string(),
            "--batch",
            &batch,
        ]),
        Kind::Publisher => strings(&[
            "publisher",
            "--sender",
            SENDER_DB,
            "--queue",
            QUEUE_DB,
            "--batch",
            &batch,
        ]),
        Kind::Consumer => strings(&[
            "consumer",
            "--queue",
            QUEUE_DB,
            "--receiver",
            RECEIVER_DB,
            "--consumer-id",
            &format!("c{consumer}"),
            "--lease-ms",
            &plan.lease_ms.to_string(),
            "--batch",
            &batch,
        ]),
    }
}

/// Non-blocking wait4: `Some((exit, signal, max_rss_kb))` once the child has ended.
pub fn reap(pid: libc::pid_t) -> Result<Option<(i32, Option<i32>, i64)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    for _ in 0..100 {
        // SAFETY: wait4 writes only into the two out-parameters we own.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == 0 {
            return Ok(None);
        }
        if r == pid {
            crate::engine::process::forget(pid);
            let (exit, signal) = crate::engine::process::decode_status(status);
            return Ok(Some((exit, signal, usage.ru_maxrss)));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(anyhow::Error::new(err).context(format!("waiting for child {pid}")));
        }
    }
    anyhow::bail!("waiting for child {pid}: interrupted 100 times in a row")
}

/// SIGKILL every running role and reap it: nothing the pipeline started outlives it.
pub fn stop_all(roles: &mut [Role]) {
    for role in roles.iter_mut() {
        if let Some(running) = role.running.take() {
            // SAFETY: kill has no memory effects; the pid is not reaped yet, so still ours.
            unsafe { libc::kill(running.pid, libc::SIGKILL) };
            // Reaps it whatever it returns (an interrupted wait kills and reaps as well).
            let _ = crate::engine::process::wait_bounded(
                running.pid,
                running.started,
                Duration::from_secs(10),
            );
        }
    }
}

/// `: <first line of its stderr>` of an ended process, or nothing when it printed none.
pub fn first_line(logs: &Logs, process: &Process) -> String {
    let Logs::Dir(dir) = logs;
    std::fs::read_to_string(dir.join(&process.stderr))
        .ok()
        .and_then(|text| text.lines().next().map(|l| format!(": {l}")))
        .unwrap_or_default()
}

pub fn spawn(exe: &Path, work: &Path, logs: &Logs, role: &mut Role) -> Result<Running> {
    crate::interrupt::check()?;
    role.runs += 1;
    let step = format!("{}.{}", role.name, role.runs);
    let (out, err, stdout, stderr) = match logs {
        Logs::Dir(dir) => {
            let stdout = format!("{LOGS}/{step}.stdout.txt");
            let stderr = format!("{LOGS}/{step}.stderr.txt");
            let out =
                File::create(dir.join(&stdout)).with_context(|| format!("creating {stdout}"))?;
            let err =
                File::create(dir.join(&stderr)).with_context(|| format!("creating {stderr}"))?;
            (Stdio::from(out), Stdio::from(err), stdout, stderr)
        }
    };
    let started = Instant::now();
    let mut command = Command::new(exe);
    command
        .args(&role.argv)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    crate::engine::process::die_with_parent(&mut command);
    let child = command
        .spawn()
        .with_context(|| format!("starting {step}"))?;
    let pid = child.id() as libc::pid_t;
    crate::engine::process::remember(pid);
    // Reaped by wait4 in the loop; dropping the handle neither waits nor kills.
    drop(child);
    Ok(Running {
        pid,
        started,
        step,
        stdout,
        stderr,
        killed: false,
        kill: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_given_up_after_its_bound_of_failed_starts_with_the_cause() {
        let mut role = Role::new("consumer-c1".into(), Kind::Consumer, Vec::new());
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
}
