//! Waiting, bounded, for a background child to say it is ready: an event, never a line.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::{poll_exit, Ended, Started};
use crate::events::{self, Event};
use crate::interrupt;

/// Wait (bounded) until the child's events file holds an event `ready` accepts, or the child
/// ends. Returns the end when it ended first (None: it did neither within `timeout`).
pub fn await_event(
    started: &Started,
    events: &Path,
    ready: impl Fn(&Event) -> bool,
    timeout: Duration,
) -> Result<Result<(), Option<Ended>>> {
    const POLL_MS: u64 = 10;
    let rounds = timeout.as_millis() as u64 / POLL_MS + 1;
    for _ in 0..rounds {
        // Interrupted: the caller's reaper kills the child on the way out.
        interrupt::check()?;
        if events_so_far(events).iter().any(&ready) {
            return Ok(Ok(()));
        }
        if let Some(ended) = poll_exit(started)? {
            return Ok(Err(Some(ended)));
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    Ok(Err(None))
}

/// The complete events of a live process's file: a line still being written (no newline
/// yet) is left for the next look; one that is not an event counts as none (the audit says
/// so once the process has ended).
pub(super) fn events_so_far(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |at| &text[..=at]);
    complete
        .lines()
        .filter_map(|line| events::parse(&format!("{line}\n")).ok())
        .flatten()
        .collect()
}
