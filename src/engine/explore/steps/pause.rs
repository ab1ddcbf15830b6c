//! A case's step under the pause nemesis: a role that stops itself at its point
//! (`--pause-at`, SIGSTOP) while the case goes on without it, then is continued. As the
//! driver's `Ready::Paused` step: ready once its `paused` event is written and the kernel
//! reports it stopped; ended by SIGCONT and a wait bounded by the step timeout.

use std::time::Duration;

use anyhow::Result;

use super::{Background, Steps, READY_POLL};
use crate::engine::nemesis::PAUSE;
use crate::engine::process;
use crate::events::Event;

impl Steps<'_> {
    /// Start a role in the background that pauses itself, and wait (bounded by the step
    /// timeout) until it is stopped at its point. When it ends, or does not stop in time, it
    /// is recorded and None comes back.
    pub fn start_paused(&mut self, what: &str, argv: Vec<String>) -> Result<Option<Background>> {
        let role = argv.first().cloned().unwrap_or_default();
        let name = self.name(&role, what);
        let (argv, armed) = self.arm(argv);
        self.fork.unreplayable("a paused step")?;
        let started = self.spawn(&name, &argv)?;
        let rounds = self.env.timeout.as_millis() / READY_POLL.as_millis() + 1;
        for _ in 0..rounds {
            // Interrupted: the reaper kills the child on the way out.
            crate::interrupt::check()?;
            let paused = self
                .events_now(&name)
                .iter()
                .any(|e| matches!(e, Event::Paused { .. }));
            if paused && PAUSE.await_stopped(started.pid, self.env.timeout)? {
                return Ok(Some(self.ready(name, argv, armed, Some(started))));
            }
            if paused {
                // It said it paused, yet ended or never stopped: ended and recorded below.
                break;
            }
            if let Some(ended) = process::poll_exit(&started)? {
                self.reaper.0.retain(|p| *p != started.pid);
                self.record(name, argv, armed, ended);
                return Ok(None);
            }
            std::thread::sleep(READY_POLL);
        }
        let mut ended = process::stop(&started, false, Duration::from_millis(1))?;
        ended.timed_out = ended.signal.is_some();
        self.reaper.0.retain(|p| *p != started.pid);
        self.record(name, argv, armed, ended);
        Ok(None)
    }

    /// Continue a paused step (SIGCONT) and wait for it to end by itself, bounded by the step
    /// timeout (then SIGKILL, recorded as timed out); then record it.
    pub fn resume(&mut self, background: Background) -> Result<()> {
        let started = background
            .started
            .as_ref()
            .expect("a paused step is never replayed (start_paused refuses it)");
        PAUSE.resume(started.pid);
        let ended = process::stop(started, false, self.env.timeout)?;
        self.reaper.0.retain(|p| *p != started.pid);
        let armed = background.armed;
        self.record(background.name, background.argv, armed, ended);
        self.after_crash(armed)?;
        Ok(())
    }
}
