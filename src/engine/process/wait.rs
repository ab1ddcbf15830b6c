//! Waiting for a child with a bound: its pidfd polled beside the interrupt self-pipe (rustix's
//! pidfd_open and poll; a thread in waitid on a kernel without pidfds), then one wait4 that
//! reaps it and reads its rusage (wait4 with rusage is the one call rustix does not cover). A child is never reaped before it is known to have exited, so a SIGKILL sent after
//! a timeout or an interruption can never reach a recycled pid.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::process::{kill_process, kill_process_group, pidfd_open, Pid, PidfdFlags, Signal};

use super::{forget, Ended};
use crate::interrupt;

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
    let (exit, signal) = decode_status(status);
    Ok((exit, signal, usage.ru_maxrss))
}

/// Block until `pid` has exited, without reaping it: the zombie keeps the pid ours, so a
/// SIGKILL sent after a timeout can never reach a recycled pid.
fn wait_exited(pid: libc::pid_t) -> std::io::Result<()> {
    waitid_nowait(pid, libc::WEXITED).map(|_| ())
}

/// `waitid` on one child without consuming its state (WNOWAIT), retried on EINTR: whether it
/// has a state among `flags` to report (always, once it returns, unless WNOHANG is given).
/// The child stays unreaped, so its pid stays ours.
pub fn waitid_nowait(pid: libc::pid_t, flags: libc::c_int) -> std::io::Result<bool> {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    let pid = Pid::from_raw(pid).ok_or_else(|| std::io::Error::from_raw_os_error(libc::ECHILD))?;
    let options = WaitIdOptions::from_bits_retain(flags as u32) | WaitIdOptions::NOWAIT;
    loop {
        match waitid(WaitId::Pid(pid), options) {
            // With NOHANG, a child with nothing to report gives no status.
            Ok(status) => return Ok(status.is_some()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A wait status in the shell's convention: the exit code, or 128 + the signal that ended
/// the child (with the signal); -1 for a status that is neither.
pub fn decode_status(status: libc::c_int) -> (i32, Option<i32>) {
    if libc::WIFEXITED(status) {
        (libc::WEXITSTATUS(status), None)
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        (128 + sig, Some(sig))
    } else {
        (-1, None)
    }
}

/// How a bounded wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waited {
    Exited,
    TimedOut,
    /// The caller's watch said stop (a role flooding its output past a bound).
    Stopped,
    /// SIGINT or SIGTERM reached the run first.
    Interrupted(libc::c_int),
}

/// Wait for an already spawned child with a bound, killing it when the bound passes. When
/// the run is interrupted the child is killed and reaped, and the error is `Interrupted`.
pub fn wait_bounded(pid: libc::pid_t, started: Instant, timeout: Duration) -> Result<Ended> {
    wait_inner(pid, started, timeout, None).map(|(ended, _)| ended)
}

/// How often a watched wait asks its watch: a role writing at disk speed writes at most this
/// long past the bound the watch checks, and a chaos kill lands at most this late.
const WATCH_SLICE: Duration = Duration::from_millis(5);

/// `wait_bounded`, asking `stop` every WATCH_SLICE while the child runs; when it says stop, the
/// child and its group are killed as on a timeout, and the second value is true.
pub fn wait_watched(
    pid: libc::pid_t,
    started: Instant,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(Ended, bool)> {
    wait_inner(pid, started, timeout, Some(stop))
}

/// A watch, and how often it is asked; none: the wait wakes only to look at the interrupt
/// flag.
type Watch<'a> = Option<&'a dyn Fn() -> bool>;

fn slice_of(stop: Watch<'_>) -> Duration {
    match stop {
        Some(_) => WATCH_SLICE,
        None => WAKE_SLICE,
    }
}

fn wait_inner(
    pid: libc::pid_t,
    started: Instant,
    timeout: Duration,
    stop: Watch<'_>,
) -> Result<(Ended, bool)> {
    let waited = match exited_within(pid, timeout, stop) {
        Some(waited) => waited,
        None => wait_with_thread(pid, timeout, stop)?,
    };
    let elapsed = started.elapsed();
    // Still running or a zombie, and not reaped (only wait4 below reaps), so the pid and its
    // process group are still this child's: whatever it forked dies with it.
    kill(pid);
    let (exit, signal, max_rss_kb) = wait4(pid).context("reaping a child")?;
    if let Waited::Interrupted(signal) = waited {
        return Err(anyhow::Error::new(interrupt::Interrupted(signal)));
    }
    let timed_out = waited == Waited::TimedOut;
    let ended = Ended {
        exit,
        signal,
        wall_ms: elapsed.as_secs_f64() * 1000.0,
        max_rss_kb,
        timed_out,
    };
    Ok((ended, waited == Waited::Stopped))
}

/// The longest a wait sleeps before it looks at the interrupt flag again, should the
/// self-pipe be missing (no handler installed): the bound on noticing a signal late.
const WAKE_SLICE: Duration = Duration::from_millis(100);

/// Whether `pid` exits within `timeout`, by polling its pidfd and the interrupt self-pipe (no
/// thread, no reaping); `None` when the kernel has no pidfd_open.
fn exited_within(pid: libc::pid_t, timeout: Duration, stop: Watch<'_>) -> Option<Waited> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let fd = pidfd_open(Pid::from_raw(pid)?, PidfdFlags::empty()).ok()?;
    // SAFETY: the self-pipe is opened once and never closed while the process runs.
    let wake = interrupt::wake_fd().map(|w| unsafe { std::os::fd::BorrowedFd::borrow_raw(w) });
    let deadline = Instant::now() + timeout;
    let waited = loop {
        if let Some(signal) = interrupt::caught() {
            break Waited::Interrupted(signal);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Waited::TimedOut;
        }
        if stop.is_some_and(|stop| stop()) {
            break Waited::Stopped;
        }
        // Without a handler only the pidfd counts.
        let mut polls = vec![PollFd::new(&fd, PollFlags::IN)];
        polls.extend(wake.as_ref().map(|w| PollFd::new(w, PollFlags::IN)));
        let slice = left.min(slice_of(stop)).max(Duration::from_millis(1));
        let slice = Timespec {
            tv_sec: slice.as_secs() as i64,
            tv_nsec: i64::from(slice.subsec_nanos()),
        };
        match poll(&mut polls, Some(&slice)) {
            Ok(n) if n > 0 && !polls[0].revents().is_empty() => break Waited::Exited,
            // A slice passed, or the self-pipe woke us: look at the flag and the deadline.
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // poll itself failed: count it as the bound passing, never as an exit.
            Err(_) => break Waited::TimedOut,
        }
    };
    // The pidfd closes as it drops.
    Some(waited)
}

/// SIGKILL to a child not reaped yet (so the pid is still this child's) and to its process
/// group, every process it forked. A child that has exited meanwhile (a zombie) takes it
/// without effect; its group, while the zombie keeps the id, still takes it.
pub(super) fn kill(pid: libc::pid_t) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = kill_process_group(pid, Signal::KILL);
        let _ = kill_process(pid, Signal::KILL);
    }
}

/// The same wait on a kernel without pidfds: a thread blocks in waitid (without reaping),
/// the caller looks at the interrupt flag between slices.
fn wait_with_thread(pid: libc::pid_t, timeout: Duration, stop: Watch<'_>) -> Result<Waited> {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(wait_exited(pid));
    });
    let deadline = Instant::now() + timeout;
    let slices_max = timeout.as_millis() / slice_of(stop).as_millis() + 2;
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
        if stop.is_some_and(|stop| stop()) {
            waited = Waited::Stopped;
            break;
        }
        match rx.recv_timeout(left.min(slice_of(stop))) {
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
    kill(pid);
    rx.recv_timeout(Duration::from_secs(10))
        .context("a child killed with SIGKILL did not exit within 10 s")?
        .context("waiting for a child")?;
    let _ = waiter.join();
    Ok(waited)
}
