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
    let out = File::create(stdout).with_context(|| format!("creating {}", stdout.display()))?;
    let err = File::create(stderr).with_context(|| format!("creating {}", stderr.display()))?;
    let started = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .with_context(|| format!("starting {}", args.first().map_or("", |a| a.as_str())))?;
    let ended = wait_bounded(child.id() as libc::pid_t, started, timeout)?;
    // The child was reaped by wait4; dropping the handle neither waits nor kills.
    drop(child);
    Ok(ended)
}

/// Wait for an already spawned child with a bound, killing it when the bound passes.
pub fn wait_bounded(pid: libc::pid_t, started: Instant, timeout: Duration) -> Result<Ended> {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let result = wait4(pid);
        let _ = tx.send((result, started.elapsed()));
    });
    let (result, elapsed, timed_out) = match rx.recv_timeout(timeout) {
        Ok((result, elapsed)) => (result, elapsed, false),
        Err(_) => {
            // Still running past its bound. The waiter has not reaped it (it would have sent),
            // so the pid is still ours to signal.
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let (result, elapsed) = rx
                .recv_timeout(Duration::from_secs(10))
                .context("a child killed with SIGKILL was not reaped within 10 s")?;
            (result, elapsed, true)
        }
    };
    let _ = waiter.join();
    let (exit, signal, max_rss_kb) = result.context("waiting for a child")?;
    Ok(Ended {
        exit,
        signal,
        wall_ms: elapsed.as_secs_f64() * 1000.0,
        max_rss_kb,
        timed_out,
    })
}
