//! Run one child process with a bound: stdout and stderr straight into evidence files, wall
//! time, peak memory, and a SIGKILL when it runs past its timeout or the run is interrupted
//! (SIGINT, SIGTERM: every wait here wakes on `interrupt`'s self-pipe).

mod orphans;
mod ready;
mod record;
mod spawn;
mod wait;

pub use orphans::{adopt_orphans, spare, sweep};
pub use ready::await_event;
pub use record::Step;
pub use spawn::{events_file, spawn, spawn_env, spawn_with, Started};

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};

pub use rustix::process::Signal;
pub use wait::{decode_status, wait_bounded, wait_watched, waitid_nowait};

/// Every child spawned here and not reaped yet: what `kill_all` ends when a run is
/// interrupted along a path that forgot one.
static CHILDREN: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

fn children() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    CHILDREN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Held for reading from fork to `children` listing the child (spawns on several threads go
/// on side by side), and for writing while a sweep lists this process's children: a sweep
/// never meets a child not listed yet.
static SPAWNING: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn spawning() -> std::sync::RwLockReadGuard<'static, ()> {
    SPAWNING.read().unwrap_or_else(|p| p.into_inner())
}

fn sweeping() -> std::sync::RwLockWriteGuard<'static, ()> {
    SPAWNING.write().unwrap_or_else(|p| p.into_inner())
}

/// A child was reaped (its pid may be reused from now on): forget it.
pub fn forget(pid: libc::pid_t) {
    // One entry: another thread may have been given the same pid since this one was reaped.
    let mut live = children();
    if let Some(at) = live.iter().position(|p| *p == pid) {
        live.swap_remove(at);
    }
}

/// The last word of an interrupted run: every child not reaped yet killed (none may outlive
/// the run, even one a path forgot), then `interrupt::finish`.
pub fn interrupted(signal: libc::c_int, partial: Option<&Path>) -> anyhow::Error {
    kill_all();
    // What the killed roles forked, adopted as their orphans: gone before the line is said.
    orphans::sweep_orphans(orphans::INTERRUPTED_BOUND);
    crate::interrupt::finish(signal, partial)
}

/// SIGKILL and reap every child not reaped yet. Called once a run has unwound, on the main
/// thread, when no other thread reaps any more.
pub fn kill_all() {
    let pids: Vec<libc::pid_t> = children().drain(..).collect();
    for pid in pids {
        kill_and_reap(pid);
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended {
    /// Exit code, or 128 + signal for a child killed by a signal (the shell's convention).
    pub exit: i32,
    pub signal: Option<i32>,
    pub wall_ms: f64,
    /// Peak resident memory of the child, from wait4's rusage.
    pub max_rss_kb: i64,
    /// The driver killed it after its timeout.
    pub timed_out: bool,
}

/// Spawn `exe args…` in `cwd`, stdout and stderr into the given files, and wait at most
/// `timeout`; a child still running then is killed with SIGKILL and reported as timed out.
pub fn run(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
) -> Result<Ended> {
    let started = spawn(exe, args, cwd, stdout, stderr)?;
    wait_bounded(started.pid, started.started, timeout)
}

/// As `run`, with environment variables set for the child.
pub fn run_env(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    out: (&Path, &Path),
    env: &[(String, String)],
    timeout: Duration,
) -> Result<Ended> {
    let events = events_file(out.0);
    let started = spawn_env(exe, args, cwd, out.0, out.1, Some(&events), env)?;
    wait_bounded(started.pid, started.started, timeout)
}

/// The environment variable through which a child learns which process it must die with.
pub const PARENT_PID_ENV: &str = "CRASHLAB_PARENT_PID";

/// Make a child die with its parent: no child of a driver, explore, chaos or bench run
/// outlives it, whatever ends it. The child arms PR_SET_PDEATHSIG itself, first thing in
/// `main` (`die_with_parent_if_asked`); a `pre_exec` hook would do the same, but it makes
/// std fork the whole parent instead of spawning, which costs about a millisecond a child.
pub fn die_with_parent(command: &mut Command) {
    command.env(PARENT_PID_ENV, std::process::id().to_string());
}

/// In a child started by `die_with_parent`: SIGKILL when the parent dies, and exit at once
/// if it died before this line (then the parent is no longer the one that started us).
pub fn die_with_parent_if_asked() {
    let Ok(value) = std::env::var(PARENT_PID_ENV) else {
        return;
    };
    let Ok(parent) = value.parse::<libc::pid_t>() else {
        return;
    };
    let armed = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    let parent_now = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if armed.is_err() || parent_now != parent {
        // Not armed, or the parent is already gone: this child must not run unbound.
        std::process::exit(128 + libc::SIGKILL);
    }
}

/// SIGKILL our own child, not reaped yet, and reap it (its status is not wanted).
fn kill_and_reap(pid: libc::pid_t) {
    wait::kill(pid);
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
    }
}

/// SIGKILL a child that is not reaped yet, so its pid is still ours (a later `poll_exit` or
/// `wait_bounded` reaps it): the kill a nemesis or a timeout makes from outside.
pub fn kill(started: &Started) {
    // The pid is unreaped, so it and its process group are still this child's.
    wait::kill(started.pid);
}

/// Has the child ended? Reaps it when it has.
pub fn poll_exit(started: &Started) -> Result<Option<Ended>> {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes only into the two out-parameters we own.
    let r = unsafe { libc::wait4(started.pid, &mut status, libc::WNOHANG, &mut usage) };
    if r == 0 {
        return Ok(None);
    }
    if r != started.pid {
        return Err(std::io::Error::last_os_error()).context("polling a background child");
    }
    forget(started.pid);
    let (exit, signal) = wait::decode_status(status);
    Ok(Some(Ended {
        exit,
        signal,
        wall_ms: started.started.elapsed().as_secs_f64() * 1000.0,
        max_rss_kb: usage.ru_maxrss,
        timed_out: false,
    }))
}

/// Send `signal` to a child that is still ours (not reaped); one that has exited meanwhile
/// takes it without effect.
/// The whole process group takes it (a role runs in its own, `spawn`).
pub fn signal(started: &Started, signal: Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(started.pid) {
        let _ = rustix::process::kill_process_group(pid, signal);
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// End a background child: SIGTERM first when `term`, then wait at most `timeout`, then
/// SIGKILL (reported as timed out).
pub fn stop(started: &Started, term: bool, timeout: Duration) -> Result<Ended> {
    if term {
        // The pid is unreaped, so still ours.
        signal(started, Signal::TERM);
    }
    wait_bounded(started.pid, started.started, timeout)
}

/// Kill and reap every child still listed: the driver's last word on an error path.
pub struct Reaper(pub Vec<libc::pid_t>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in self.0.drain(..) {
            // A wait that was interrupted (SIGINT) has already killed and reaped its child
            // before its error unwound to here: that pid may belong to another process now.
            if !children().contains(&pid) {
                continue;
            }
            kill_and_reap(pid);
            forget(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ready::events_so_far;
    use super::*;
    use crate::events::Event;

    #[test]
    fn the_events_file_sits_beside_the_stdout() {
        assert_eq!(
            events_file(Path::new("dir/s/a.stdout.txt")),
            Path::new("dir/s/a.events.jsonl")
        );
        assert_eq!(
            events_file(Path::new("logs/sender.1.stdout")),
            Path::new("logs/sender.1.events.jsonl")
        );
        assert_eq!(
            events_file(Path::new("out.log")),
            Path::new("out.log.events.jsonl")
        );
    }

    #[test]
    fn only_complete_event_lines_count_while_a_process_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.events.jsonl");
        std::fs::write(
            &path,
            "{\"event\":\"ready\",\"port\":1}\n{\"event\":\"lock-he",
        )
        .unwrap();
        assert_eq!(events_so_far(&path), vec![Event::Ready { port: 1 }]);
        std::fs::write(&path, "READY 1\n{\"event\":\"end\",\"code\":0}\n").unwrap();
        assert_eq!(events_so_far(&path), vec![Event::End { code: 0 }]);
        assert!(events_so_far(&dir.path().join("missing")).is_empty());
    }
}
