//! Typed events: what a role tells the harness, one JSON object per line in
//! `<step>.events.jsonl`. The human lines on stdout stay the contract users grep; the
//! harness, explore, chaos and the audit read these instead, so rewording a stdout line can
//! never change a verdict.
//!
//! A role writes events only when the harness asks for them by naming a file in
//! `CRASHLAB_EVENTS`. Each event is one `write(2)` on a file opened with `O_APPEND`, never
//! buffered: a process killed right after an event has its event on disk, exactly as it has
//! the stdout lines flushed before it (`out::flush` runs before every event that marks a
//! durable fact).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The environment variable that names the events file of a role process.
pub const EVENTS_ENV: &str = "CRASHLAB_EVENTS";

/// An events file larger than this is refused by the reader (a phase writes a few dozen
/// events, a chaos consumer a few per message).
pub const EVENTS_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// One event. The `event` field names the kind; the other fields are fixed per kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Event {
    /// The process started as this role (the subcommand), with its pid.
    Start { role: String, pid: u32 },
    /// A crash point was reached for the `hit`-th time.
    Point { point: String, hit: u32 },
    /// The armed crash fires at this point and hit; `mode` is exit, abort, kill or hang.
    Crash {
        point: String,
        hit: u32,
        mode: String,
    },
    /// The phase ran to its end without reaching its armed point at `hit` (`hits` times).
    NotReached { point: String, hit: u32, hits: u32 },
    /// A transaction on `db` returned from COMMIT; `what` says what it made durable.
    Commit { db: String, what: String },
    /// A server listens on 127.0.0.1:`port`.
    Ready { port: u16 },
    /// A process holds an exclusive lock (lab 13's dispatcher).
    LockHeld { lock: String },
    /// An effect was applied for a business item (a message id, an idempotency key).
    Applied { item: String },
    /// An item that was already applied came again and was absorbed.
    Duplicate { item: String },
    /// An item was refused (a conflicting payload, a malformed one).
    Rejected { item: String, reason: String },
    /// A reply came back for an item (lab 13's dispatcher): the HTTP status.
    Response { item: String, status: u16 },
    /// A server stopped, and why.
    Stopped { why: String },
    /// The process ends by itself with this exit code (a crash or a kill has no `end`).
    End { code: i32 },
    /// The process stops itself (SIGSTOP) at this point and hit, armed with `--pause-at`:
    /// the pause nemesis. The harness continues it with SIGCONT.
    Paused { point: String, hit: u32 },
}

impl Event {
    /// `what` is durable on `db`: a transaction returned from COMMIT.
    pub fn commit(db: &str, what: &str) -> Event {
        Event::Commit {
            db: db.to_string(),
            what: what.to_string(),
        }
    }
}

static FILE: Mutex<Option<File>> = Mutex::new(None);

/// Open the events file named by `CRASHLAB_EVENTS`, if any, at the start of a process.
/// An events file that cannot be opened fails the process: the harness asked for evidence
/// it would otherwise silently lack.
pub fn open_from_env() -> Result<()> {
    let Some(path) = std::env::var_os(EVENTS_ENV) else {
        return Ok(());
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening the events file {}", Path::new(&path).display()))?;
    *FILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
    Ok(())
}

/// Whether this process writes events.
pub fn on() -> bool {
    FILE.lock().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// Write one event (one line, one `write(2)`). A failed write ends the process as a failed
/// stdout write does: events are evidence, and going on without them would lose it.
pub fn emit(event: &Event) {
    let mut guard = FILE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(file) = guard.as_mut() else {
        return;
    };
    let mut line = serde_json::to_vec(event).expect("an event always serialises");
    line.push(b'\n');
    if let Err(error) = file.write_all(&line) {
        crate::out::write_failed_to("the events file", &error);
    }
}

/// Read an events file strictly: every line one known event, nothing else.
pub fn read(path: &Path) -> Result<Vec<Event>> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size > EVENTS_BYTES_MAX {
        bail!(
            "{}: {size} bytes, more than the {EVENTS_BYTES_MAX} an events file may hold",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| path.display().to_string())
}

/// Parse the text of an events file; the error names the line.
pub fn parse(text: &str) -> Result<Vec<Event>> {
    if !text.is_empty() && !text.ends_with('\n') {
        bail!("the last line is cut short (no newline at the end)");
    }
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| anyhow::anyhow!("line {}: {e}", i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_one_per_line() {
        let events = vec![
            Event::Start {
                role: "sender".into(),
                pid: 7,
            },
            Event::Point {
                point: "sender.after-commit".into(),
                hit: 1,
            },
            Event::Commit {
                db: "sender".into(),
                what: "contract R1 message M1 amount 25".into(),
            },
            Event::Ready { port: 4000 },
            Event::Rejected {
                item: "M1".into(),
                reason: "payload conflict".into(),
            },
            Event::End { code: 0 },
        ];
        let text: String = events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap() + "\n")
            .collect();
        assert!(text.starts_with("{\"event\":\"start\",\"role\":\"sender\",\"pid\":7}\n"));
        assert_eq!(parse(&text).unwrap(), events);
    }

    #[test]
    fn the_reader_refuses_what_is_not_an_event() {
        let cut = "{\"event\":\"end\",\"code\":0}\n{\"event\":\"end\"";
        assert!(parse(cut).unwrap_err().to_string().contains("cut short"));
        let unknown = "{\"event\":\"teleport\"}\n";
        assert!(parse(unknown).unwrap_err().to_string().contains("line 1"));
        let extra = "{\"event\":\"end\",\"code\":0,\"x\":1}\n";
        assert!(parse(extra).is_err());
        let prose = "{\"event\":\"end\",\"code\":0}\nCOMMITTED sender x\n";
        assert!(parse(prose).unwrap_err().to_string().contains("line 2"));
        assert_eq!(parse("").unwrap(), vec![]);
    }
}
