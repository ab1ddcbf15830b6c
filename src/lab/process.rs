//! Run one child process with a bound: stdout and stderr straight into evidence files, wall
//! time, peak memory, and a SIGKILL when it runs past its timeout or the run is interrupted
//! (SIGINT, SIGTERM: every wait here wakes on `interrupt`'s self-pipe).

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::interrupt;

/// Every child spawned here and not reaped yet: what `kill_all` ends when a run is
/// interrupted along a path that forgot one.
static CHILDREN: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

fn children() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    CHILDREN.lock().unwrap_or_else(|p| p.into_inner())
}

/// A child was reaped (its pid may be reused from now on): forget it.
pub fn forget(pid: libc::pid_t) {
    children().retain(|p| *p != pid);
}

/// A child was spawned by another module (the load pipeline): remember it.
pub fn remember(pid: libc::pid_t) {
    children().push(pid);
}

/// SIGKILL and reap every child not reaped yet. Called once a run has unwound, on the main
/// thread, when no other thread reaps any more.
pub fn kill_all() {
    let pids: Vec<libc::pid_t> = children().drain(..).collect();
    for pid in pids {
        // SAFETY: kill and waitpid on our own unreaped child have no memory effects.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
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

/// Wait for `pid` and collect its status and rusage.
fn wait4(pid: libc::pid_t) -> std::io::Result<(i32, Option<i32>, i64)> {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes only into the two out-parameters we own.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            forget(pid);
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let (exit, signal) = if libc::WIFEXITED(status) {
        (libc::WEXITSTATUS(status), None)
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        (128 + sig, Some(sig))
    } else {
        (-1, None)
    };
    Ok((exit, signal, usage.ru_maxrss))
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

/// Block until `pid` has exited, without reaping it: the zombie keeps the pid ours, so a
/// SIGKILL sent after a timeout can never reach a recycled pid.
fn wait_exited(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only into `info`, which we own.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// How a bounded wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waited {
    Exited,
    TimedOut,
    /// SIGINT or SIGTERM reached the run first.
    Interrupted(libc::c_int),
}

/// Wait for an already spawned child with a bound, killing it when the bound passes. When
/// the run is interrupted the child is killed and reaped, and the error is `Interrupted`.
pub fn wait_bounded(pid: libc::pid_t, started: Instant, timeout: Duration) -> Result<Ended> {
    let waited = match exited_within(pid, timeout) {
        Some(waited) => waited,
        None => wait_with_thread(pid, timeout)?,
    };
    let elapsed = started.elapsed();
    if waited != Waited::Exited {
        // Still running, and not reaped (only wait4 below reaps), so the pid is still this
        // child's.
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let (exit, signal, max_rss_kb) = wait4(pid).context("reaping a child")?;
    if let Waited::Interrupted(signal) = waited {
        return Err(anyhow::Error::new(interrupt::Interrupted(signal)));
    }
    let timed_out = waited == Waited::TimedOut;
    Ok(Ended {
        exit,
        signal,
        wall_ms: elapsed.as_secs_f64() * 1000.0,
        max_rss_kb,
        timed_out,
    })
}

/// The longest a wait sleeps before it looks at the interrupt flag again, should the
/// self-pipe be missing (no handler installed): the bound on noticing a signal late.
const WAKE_SLICE: Duration = Duration::from_millis(100);

/// Whether `pid` exits within `timeout`, by polling its pidfd and the interrupt self-pipe (no
/// thread, no reaping); `None` when the kernel has no pidfd_open.
fn exited_within(pid: libc::pid_t, timeout: Duration) -> Option<Waited> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        return None;
    }
    let deadline = Instant::now() + timeout;
    let wake = interrupt::wake_fd().unwrap_or(-1);
    let waited = loop {
        if let Some(signal) = interrupt::caught() {
            break Waited::Interrupted(signal);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Waited::TimedOut;
        }
        // A negative fd is ignored by poll: without a handler only the pidfd counts.
        let mut polls = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let slice_ms = left.min(WAKE_SLICE).as_millis().max(1) as libc::c_int;
        // SAFETY: poll reads and writes only the two pollfds we own.
        let r = unsafe { libc::poll(polls.as_mut_ptr(), 2, slice_ms) };
        if r > 0 && polls[0].revents != 0 {
            break Waited::Exited;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // poll itself failed: count it as the bound passing, never as an exit.
            break Waited::TimedOut;
        }
        // r == 0 (a slice passed), EINTR (a signal: the flag says which), or the self-pipe:
        // look at the flag and the deadline again.
    };
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    Some(waited)
}

/// The same wait on a kernel without pidfds: a thread blocks in waitid (without reaping),
/// the caller looks at the interrupt flag between slices.
fn wait_with_thread(pid: libc::pid_t, timeout: Duration) -> Result<Waited> {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(wait_exited(pid));
    });
    let deadline = Instant::now() + timeout;
    let slices_max = timeout.as_millis() / WAKE_SLICE.as_millis() + 2;
    let mut waited = Waited::TimedOut;
    for _ in 0..slices_max {
        if let Some(signal) = interrupt::caught() {
            waited = Waited::Interrupted(signal);
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match rx.recv_timeout(left.min(WAKE_SLICE)) {
            Ok(result) => {
                result.context("waiting for a child")?;
                let _ = waiter.join();
                return Ok(Waited::Exited);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the thread waiting for child {pid} ended without a word")
            }
        }
    }
    // Timed out or interrupted: kill it (unreaped, so the pid is still this child's) and let
    // the waiting thread see it exit.
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    rx.recv_timeout(Duration::from_secs(10))
        .context("a child killed with SIGKILL did not exit within 10 s")?
        .context("waiting for a child")?;
    let _ = waiter.join();
    Ok(waited)
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
    // SAFETY: prctl and getppid have no memory effects.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(128 + libc::SIGKILL);
        }
    }
}

/// A child started in the background: its pid (still ours to reap) and when it started.
#[derive(Debug)]
pub struct Started {
    pub pid: libc::pid_t,
    pub started: Instant,
}

/// Spawn `exe args…` in `cwd` without waiting, stdout and stderr into the given files. The
/// child gets SIGKILL should the driver die first (PR_SET_PDEATHSIG), so none outlives a run.
pub fn spawn(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
) -> Result<Started> {
    // No new child once the run is interrupted.
    interrupt::check()?;
    let out = File::create(stdout).with_context(|| format!("creating {}", stdout.display()))?;
    let err = File::create(stderr).with_context(|| format!("creating {}", stderr.display()))?;
    let started = Instant::now();
    let mut command = Command::new(exe);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    die_with_parent(&mut command);
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", args.first().map_or("", |a| a.as_str())))?;
    let pid = child.id() as libc::pid_t;
    remember(pid);
    // Reaped later with wait4; dropping the handle neither waits nor kills.
    drop(child);
    Ok(Started { pid, started })
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
    let (exit, signal) = if libc::WIFEXITED(status) {
        (libc::WEXITSTATUS(status), None)
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        (128 + sig, Some(sig))
    } else {
        (-1, None)
    };
    Ok(Some(Ended {
        exit,
        signal,
        wall_ms: started.started.elapsed().as_secs_f64() * 1000.0,
        max_rss_kb: usage.ru_maxrss,
        timed_out: false,
    }))
}

/// Wait (bounded) until the child's stdout file holds a line starting with `ready`, or the
/// child ends. Returns the end when it ended first; Ok(None) when it is ready.
pub fn await_ready(
    started: &Started,
    stdout: &Path,
    ready: &str,
    timeout: Duration,
) -> Result<Result<(), Option<Ended>>> {
    const POLL_MS: u64 = 10;
    let rounds = timeout.as_millis() as u64 / POLL_MS + 1;
    for _ in 0..rounds {
        // Interrupted: the caller's reaper kills the child on the way out.
        interrupt::check()?;
        let text = std::fs::read_to_string(stdout).unwrap_or_default();
        if text.lines().any(|l| l.starts_with(ready)) {
            return Ok(Ok(()));
        }
        if let Some(ended) = poll_exit(started)? {
            return Ok(Err(Some(ended)));
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    Ok(Err(None))
}

/// End a background child: SIGTERM first when `term`, then wait at most `timeout`, then
/// SIGKILL (reported as timed out).
pub fn stop(started: &Started, term: bool, timeout: Duration) -> Result<Ended> {
    if term {
        // SAFETY: kill has no memory effects; the pid is unreaped, so still ours.
        unsafe { libc::kill(started.pid, libc::SIGTERM) };
    }
    wait_bounded(started.pid, started.started, timeout)
}

/// Kill and reap every child still listed: the driver's last word on an error path.
pub struct Reaper(pub Vec<libc::pid_t>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in self.0.drain(..) {
            // SAFETY: kill and waitpid on our own unreaped child have no memory effects.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            forget(pid);
        }
    }
}
