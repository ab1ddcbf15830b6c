//! SIGINT, SIGTERM and SIGHUP for the commands that run children (driver, explore, chaos,
//! bench, audit --rerun).
//!
//! The handlers (signal-hook) only record the signal and write a byte to a self-pipe; the
//! byte is never read, so the pipe stays readable and every wait that polls it (a child's
//! pidfd beside it) wakes at once, on every thread. The waits then return an `Interrupted`
//! error that unwinds the run like any other: each wait kills and reaps its own child, the
//! work directories are removed as they go out of scope, and the command removes its
//! `.partial` directory and ends with one line and exit 130.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use anyhow::Result;

use crate::fail;

/// The signal that arrived (0: none yet).
static CAUGHT: AtomicUsize = AtomicUsize::new(0);
/// The self-pipe's read end; never read.
static WAKE: OnceLock<UnixStream> = OnceLock::new();

/// The signals a run turns into a clean stop. SIGHUP is a closed terminal or a dropped ssh
/// session: without it the run dies and its work directories (RAM, under /dev/shm) stay.
pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Is `signal` ignored as this process inherited it? `nohup` ignores SIGHUP so that a run
/// outlives its terminal: a handler must not undo that.
fn inherited_ignored(signal: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only reads.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Catch SIGINT, SIGTERM and SIGHUP for the rest of this process (idempotent); SIGHUP only
/// when it was not inherited as ignored.
pub fn catch() -> Result<()> {
    if WAKE.get().is_some() {
        return Ok(());
    }
    let (read, write) = UnixStream::pair()?;
    read.set_nonblocking(true)?;
    for signal in SIGNALS {
        if signal == libc::SIGHUP && inherited_ignored(signal) {
            continue;
        }
        signal_hook::flag::register_usize(signal, &CAUGHT, signal as usize)?;
        signal_hook::low_level::pipe::register(signal, write.try_clone()?)?;
    }
    // A second call raced us: its pipe serves as well; ours is closed with `read`.
    let _ = WAKE.set(read);
    Ok(())
}

/// The signal caught so far, if any.
pub fn caught() -> Option<libc::c_int> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal as libc::c_int),
    }
}

/// The descriptor that becomes readable when a signal was caught (poll it beside a pidfd).
pub fn wake_fd() -> Option<RawFd> {
    WAKE.get().map(AsRawFd::as_raw_fd)
}

/// `SIGINT`, `SIGTERM`, `SIGHUP`.
pub fn name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The error a wait returns once a signal was caught: the run unwinds and cleans up.
#[derive(Debug)]
pub struct Interrupted(pub libc::c_int);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", name(self.0))
    }
}

impl std::error::Error for Interrupted {}

/// Err(Interrupted) once a signal was caught: for the loops between waits.
pub fn check() -> Result<()> {
    match caught() {
        Some(signal) => Err(anyhow::Error::new(Interrupted(signal))),
        None => Ok(()),
    }
}

/// The last word of an interrupted run, once its children are dead and its work directories
/// gone: remove what it wrote (`partial`) and return the one-line failure (exit 130). A run
/// calls it through `engine::process::interrupted`, which kills the children first.
pub fn finish(signal: libc::c_int, partial: Option<&std::path::Path>) -> anyhow::Error {
    let removed = match partial {
        Some(dir) => match std::fs::remove_dir_all(dir) {
            Ok(()) => format!("removed {} and the work directories", dir.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "nothing to remove".to_string(),
            Err(e) => format!("could not remove {}: {e}", dir.display()),
        },
        None => "removed its work directories".to_string(),
    };
    anyhow::Error::new(fail::Failure {
        code: fail::EXIT_INTERRUPTED,
        message: format!("interrupted by {}; {removed}", name(signal)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_and_an_interruption_exits_130() {
        assert_eq!(name(libc::SIGINT), "SIGINT");
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
        let dir = tempfile::tempdir().unwrap();
        let partial = dir.path().join("x.partial");
        std::fs::create_dir(&partial).unwrap();
        std::fs::write(partial.join("a"), "a").unwrap();
        let e = finish(libc::SIGINT, Some(&partial));
        assert_eq!(fail::exit_code(&e), 130);
        assert!(!partial.exists());
        assert_eq!(
            fail::one_line(&e),
            format!(
                "interrupted by SIGINT; removed {} and the work directories",
                partial.display()
            )
        );
    }
}
