//! Freeze the background processes of a scenario while its files are read.
//!
//! A snapshot of database files is only true if nothing writes them while they are read: a
//! background process (lab 13's receiver, a dispatcher holding its lock) may be creating a
//! file, appending WAL frames or checkpointing at that moment, and a digest taken then
//! describes no state the file was ever in. So the driver stops every live background child
//! with SIGSTOP, waits until the kernel reports each one stopped, reads the files, and sends
//! SIGCONT. A stopped process cannot be in the middle of a `write(2)`: the signal takes
//! effect when the call returns, so each file is in a state the process left it in, and
//! uncommitted WAL frames are ignored by any reader, as after a crash at that instant.
//!
//! The children are unreaped, so their pids cannot have been recycled while we signal them;
//! and each child dies with the driver (PR_SET_PDEATHSIG), stopped or not.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::engine::process;

/// How long a child may take to report itself stopped. SIGSTOP cannot be caught or ignored;
/// only a child in uninterruptible sleep (an fsync on a slow disk) delays it.
pub const STOP_WAIT_MS_MAX: u64 = 10_000;

/// Children stopped for a snapshot; dropping this sends SIGCONT to each, also on an error
/// path, so a failed snapshot never leaves a child stopped.
pub struct Frozen {
    pids: Vec<libc::pid_t>,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for &pid in &self.pids {
            // SAFETY: kill has no memory effects; the pid is an unreaped child of ours.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    }
}

/// Stop every pid (each an unreaped child of this process) and return once each is stopped
/// or has exited. An empty list costs nothing.
pub fn freeze(pids: &[libc::pid_t]) -> Result<Frozen> {
    let frozen = Frozen {
        pids: pids.to_vec(),
    };
    for &pid in pids {
        // SAFETY: as in Drop.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
    }
    let deadline = Instant::now() + Duration::from_millis(STOP_WAIT_MS_MAX);
    for &pid in pids {
        // Bounded: one poll a 200 µs at most until the deadline.
        loop {
            match stopped_or_exited(pid) {
                Ok(true) => break,
                Ok(false) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(200));
                }
                Ok(false) => bail!(
                    "a background process (pid {pid}) did not stop within {STOP_WAIT_MS_MAX} ms for a snapshot"
                ),
                Err(e) => bail!("waiting for pid {pid} to stop for a snapshot: {e}"),
            }
        }
    }
    Ok(frozen)
}

/// Whether the child is stopped or has exited, without consuming either state (WNOWAIT):
/// the driver's own wait reaps it later, and a stop is never reported to a plain wait4.
fn stopped_or_exited(pid: libc::pid_t) -> std::io::Result<bool> {
    process::waitid_nowait(pid, libc::WSTOPPED | libc::WEXITED | libc::WNOHANG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_child_is_stopped_and_continued() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let frozen = freeze(&[pid]).unwrap();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        assert!(
            state.rsplit(") ").next().unwrap().starts_with('T'),
            "stopped while frozen: {state}"
        );
        drop(frozen);
        // Continued: the state leaves T within a bound.
        let mut running = false;
        for _ in 0..1000 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if !state.rsplit(") ").next().unwrap().starts_with('T') {
                running = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(running, "SIGCONT resumed the child");
    }

    #[test]
    fn an_exited_child_counts_as_frozen() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        std::thread::sleep(Duration::from_millis(50));
        drop(freeze(&[pid]).unwrap());
        assert!(child.wait().unwrap().success(), "still reapable after");
    }
}
