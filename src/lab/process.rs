//! Run one child process with a bound: stdout and stderr straight into evidence files, wall
//! time, peak memory, and a SIGKILL when it runs past its timeout.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

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

/// Wait for an already spawned child with a bound, killing it when the bound passes.
pub fn wait_bounded(pid: libc::pid_t, started: Instant, timeout: Duration) -> Result<Ended> {
    let (elapsed, timed_out) = match exited_within(pid, timeout) {
        Some(true) => (started.elapsed(), false),
        Some(false) => {
            // Still running past its bound, and not reaped (only wait4 below reaps), so the
            // pid is still this child's.
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            (started.elapsed(), true)
        }
        None => wait_with_thread(pid, started, timeout)?,
    };
    let (exit, signal, max_rss_kb) = wait4(pid).context("reaping a child")?;
    Ok(Ended {
        exit,
        signal,
        wall_ms: elapsed.as_secs_f64() * 1000.0,
        max_rss_kb,
        timed_out,
    })
}

/// Whether `pid` exits within `timeout`, by polling its pidfd (no thread, no reaping);
/// `None` when the kernel has no pidfd_open.
fn exited_within(pid: libc::pid_t, timeout: Duration) -> Option<bool> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        return None;
    }
    let deadline = Instant::now() + timeout;
    let exited = loop {
        let left_ms = deadline
            .saturating_duration_since(Instant::now())
            .as_millis();
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes only the one pollfd we own.
        let r = unsafe { libc::poll(&mut poll, 1, left_ms.min(i32::MAX as u128) as libc::c_int) };
        if r > 0 {
            break true;
        }
        if r == 0 {
            break false;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break false;
        }
    };
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    Some(exited)
}

/// The same wait on a kernel without pidfds: a thread blocks in waitid (without reaping).
fn wait_with_thread(
    pid: libc::pid_t,
    started: Instant,
    timeout: Duration,
) -> Result<(Duration, bool)> {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let result = wait_exited(pid);
        let _ = tx.send((result, started.elapsed()));
    });
    let (exited, elapsed, timed_out) = match rx.recv_timeout(timeout) {
        Ok((result, elapsed)) => (result, elapsed, false),
        Err(_) => {
            // SAFETY: kill has no memory effects; the pid is unreaped, so still this child's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let (result, elapsed) = rx
                .recv_timeout(Duration::from_secs(10))
                .context("a child killed with SIGKILL did not exit within 10 s")?;
            (result, elapsed, true)
        }
    };
    let _ = waiter.join();
    exited.context("waiting for a child")?;
    Ok((elapsed, timed_out))
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
        }
    }
}
