//! The one shape of every wait for a server process to be ready: poll until it answers, it
//! exits, a signal arrives or the bound passes, whichever comes first.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::Result;

/// How a wait for readiness ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// `ready` said yes.
    Ready,
    /// The process ended first.
    Exited(ExitStatus),
    /// SIGINT or SIGTERM arrived (only when the wait watches for them).
    Interrupted(libc::c_int),
    /// `limit_ms` passed.
    TimedOut,
}

/// Poll `ready` every `every_ms` until it answers yes, `child` exits, (with `signals`) a
/// signal arrives, or `limit_ms` passes. The caller decides what each ending means.
pub fn wait(
    child: &mut Child,
    limit_ms: u64,
    every_ms: u64,
    signals: bool,
    mut ready: impl FnMut() -> bool,
) -> Result<Waited> {
    assert!(limit_ms > 0 && every_ms > 0 && every_ms <= limit_ms);
    let deadline = Instant::now() + Duration::from_millis(limit_ms);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Waited::Exited(status));
        }
        if ready() {
            return Ok(Waited::Ready);
        }
        if signals {
            if let Some(signal) = crate::interrupt::caught() {
                return Ok(Waited::Interrupted(signal));
            }
        }
        if Instant::now() >= deadline {
            return Ok(Waited::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(every_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("5")
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    }

    #[test]
    fn each_ending_is_told_apart() {
        let mut child = sleeper();
        assert_eq!(
            wait(&mut child, 1_000, 10, false, || true).unwrap(),
            Waited::Ready
        );
        assert_eq!(
            wait(&mut child, 50, 10, false, || false).unwrap(),
            Waited::TimedOut
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(matches!(
            wait(&mut child, 1_000, 10, false, || false).unwrap(),
            Waited::Exited(_)
        ));
        let mut looks = 0;
        let mut child = sleeper();
        assert_eq!(
            wait(&mut child, 5_000, 1, false, || {
                looks += 1;
                looks == 3
            })
            .unwrap(),
            Waited::Ready
        );
        assert_eq!(looks, 3);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
