//! The evidence of one driver run as the pictures need it: the records the driver wrote
//! (processes.json, results.json, database-files.json), what each process's events say (its
//! commits, its crash) and its last words on stdout and stderr. Loading reads files; everything else is pure.

use std::fs;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::evidence::{self, Process, Processes, Results, StepResult};
use crate::engine::files::FileRow;
use crate::engine::report::text;
use crate::events::Event;

/// The most of one stdout or stderr file read: a run's files are kilobytes; a foreign
/// directory cannot make the page unbounded.
pub const OUTPUT_BYTES_MAX: u64 = 8 << 20;
/// The most commits kept of one process.
pub const COMMITS_MAX: usize = 1000;

pub struct Evidence {
    pub processes: Processes,
    pub results: Results,
    pub files: Vec<FileRow>,
    /// One per process, in the order of `processes.processes`.
    pub outputs: Vec<Output>,
}

/// A commit event (`COMMITTED <db> <what>` on stdout): one transaction a process reported
/// durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The database's role as the line names it: `queue`, `intents`.
    pub db: String,
    pub what: String,
    /// The business identities it names: the word after `message` or `key`.
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    pub commits: Vec<Commit>,
    /// The `CRASH …` line without its first word: `sender.after-commit exit=73`.
    pub crash: Option<String>,
    /// The last line that says what the process did: `PUBLISHED 1 message`.
    pub summary: Option<String>,
    /// The first `crashlab: …` line of stderr.
    pub error: Option<String>,
    /// The bound cut the output short, or a file could not be read.
    pub incomplete: bool,
}

/// What a process did: its commits and its crash from its events, its last words from its
/// stdout and stderr. Pure.
pub fn parse_output(stdout: &str, stderr: &str, events: &[Event]) -> Output {
    let mut out = Output::default();
    for event in events {
        match event {
            Event::Commit { db, what } => {
                if out.commits.len() == COMMITS_MAX {
                    out.incomplete = true;
                    continue;
                }
                out.commits.push(Commit {
                    db: db.clone(),
                    what: what.clone(),
                    ids: ids(what),
                });
            }
            Event::Crash { point, mode, .. } => {
                let line = match crate::engine::nemesis::find(mode) {
                    Ok(nemesis) => nemesis.crash_line(point),
                    Err(_) => format!("CRASH {point} {mode}"),
                };
                out.crash = Some(line.strip_prefix("CRASH ").unwrap_or(&line).to_string());
            }
            _ => {}
        }
    }
    for line in stdout.lines() {
        if !line.trim().is_empty()
            && !line.starts_with("SQL ")
            && !line.starts_with("POINT ")
            && !line.starts_with("COMMITTED ")
            && !line.starts_with("CRASH ")
            && !line.starts_with('{')
        {
            out.summary = Some(line.to_string());
        }
    }
    out.error = stderr
        .lines()
        .find(|l| l.starts_with("crashlab:"))
        .map(str::to_string);
    out
}

/// The events of a process whose stdout is `stdout_rel`: its `.events.jsonl` beside it.
pub fn events_rel(stdout_rel: &str) -> String {
    crate::engine::process::events_file(Path::new(stdout_rel))
        .to_string_lossy()
        .into_owned()
}

/// Events read for a picture: what cannot be parsed draws as no events, and marks the
/// output incomplete (the audit names the file).
pub fn parse_events(text: Option<&str>) -> (Vec<Event>, bool) {
    match text.map(crate::events::parse) {
        Some(Ok(events)) => (events, false),
        _ => (Vec::new(), true),
    }
}

/// The words after `message` and `key`, stripped of punctuation: `M1`, `K1`.
pub fn ids(what: &str) -> Vec<String> {
    let words: Vec<&str> = what.split_whitespace().collect();
    let mut found: Vec<String> = Vec::new();
    for pair in words.windows(2) {
        if pair[0] == "message" || pair[0] == "key" {
            let id = pair[1].trim_matches(|c: char| !c.is_alphanumeric());
            if !id.is_empty() && !found.iter().any(|f| f == id) {
                found.push(id.to_string());
            }
        }
    }
    found
}

fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<T> {
    let path = dir.join(name);
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// A stdout or stderr file of the run, at most `OUTPUT_BYTES_MAX`; `None` when its recorded
/// path leaves the directory or it cannot be read.
/// What every process printed and said, read through `read` (a run directory, or the
/// audit's snapshot of one): `(text, cut short)` per file, None when it cannot be read.
pub fn outputs_of(
    processes: &Processes,
    read: impl Fn(&str) -> Option<(String, bool)>,
) -> Vec<Output> {
    processes
        .processes
        .iter()
        .map(|p| {
            let stdout = read(&p.stdout);
            let stderr = read(&p.stderr);
            let events = read(&events_rel(&p.stdout));
            let (said, unread) = parse_events(events.as_ref().map(|e| e.0.as_str()));
            let mut out = parse_output(
                stdout.as_ref().map_or("", |s| s.0.as_str()),
                stderr.as_ref().map_or("", |s| s.0.as_str()),
                &said,
            );
            out.incomplete |= stdout.is_none_or(|s| s.1) || stderr.is_none_or(|s| s.1);
            out.incomplete |= unread || events.is_none_or(|e| e.1);
            out
        })
        .collect()
}

fn read_output(dir: &Path, rel: &str) -> Option<(String, bool)> {
    if !text::linkable(rel) {
        return None;
    }
    let file = fs::File::open(dir.join(rel)).ok()?;
    let mut bytes = Vec::new();
    file.take(OUTPUT_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cut = bytes.len() as u64 > OUTPUT_BYTES_MAX;
    bytes.truncate(OUTPUT_BYTES_MAX as usize);
    Some((String::from_utf8_lossy(&bytes).into_owned(), cut))
}

/// Read a run directory's records and outputs.
pub fn load(dir: &Path) -> Result<Evidence> {
    let processes: Processes = read_json(dir, evidence::PROCESSES)?;
    let results: Results = read_json(dir, evidence::RESULTS)?;
    let files: Vec<FileRow> = read_json(dir, evidence::DATABASE_FILES)?;
    anyhow::ensure!(
        processes.processes.len() == results.steps.len(),
        "{} records {} processes but {} records {} steps",
        evidence::PROCESSES,
        processes.processes.len(),
        evidence::RESULTS,
        results.steps.len()
    );
    let outputs = outputs_of(&processes, |rel| read_output(dir, rel));
    Ok(Evidence {
        processes,
        results,
        files,
        outputs,
    })
}

/// The directory of a process's output files, relative to the run: `""` or `key-conflict`.
/// Each such directory gets its own timeline.
pub fn group_of(process: &Process) -> String {
    match process.stdout.rsplit_once('/') {
        Some((dir, _)) if text::linkable(dir) => dir.to_string(),
        _ => String::new(),
    }
}

/// The role a process plays: its subcommand (`publisher`, `receiver`), or its step name.
pub fn role_of(process: &Process) -> String {
    process
        .argv
        .get(1)
        .filter(|a| !a.starts_with('-'))
        .unwrap_or(&process.step)
        .clone()
}

/// One checked field of a readback: `receiver.effects`, expected 1, observed 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub path: String,
    pub expected: Option<i64>,
    pub observed: Option<i64>,
}

impl Field {
    /// `effects`: the part after the last dot.
    pub fn short(&self) -> &str {
        self.path.rsplit('.').next().unwrap_or(&self.path)
    }

    /// `receiver`: the part before the first dot, the database's role.
    pub fn role(&self) -> &str {
        self.path.split('.').next().unwrap_or(&self.path)
    }

    pub fn holds(&self) -> bool {
        self.expected.is_some() && self.expected == self.observed
    }

    /// `effects 1`, `effects 2 (expected 1)`, `effects ? (expected 1)`.
    pub fn describe(&self) -> String {
        let observed = self.observed.map_or("?".to_string(), |v| v.to_string());
        match self.expected {
            Some(_) if self.holds() => format!("{} {observed}", self.short()),
            Some(e) => format!("{} {observed} (expected {e})", self.short()),
            None => format!("{} {observed}", self.short()),
        }
    }
}

/// The fields a readback step's stage checks, with what the readback showed; empty for a
/// step that is not a readback.
pub fn readback_fields(result: &StepResult) -> Vec<Field> {
    let Some(fields) = result.expected["stage"]["fields"].as_object() else {
        return Vec::new();
    };
    let readback = &result.observed["readback"];
    fields
        .iter()
        .map(|(path, expected)| Field {
            path: path.clone(),
            expected: expected.as_i64(),
            observed: crate::role::lookup(readback, path).and_then(Value::as_i64),
        })
        .collect()
}

/// The stage's name of a readback step.
pub fn stage_name(result: &StepResult) -> Option<&str> {
    result.expected["stage"]["name"].as_str()
}

/// What a step showed, in the words of the driver's table: the readback's fields, the
/// crash, the output it had to hold; empty for a step judged by its exit alone.
pub fn state(process: &Process, result: &StepResult) -> String {
    let fields = readback_fields(result);
    if !fields.is_empty() {
        return fields
            .iter()
            .map(Field::describe)
            .collect::<Vec<_>>()
            .join(", ");
    }
    if let Some(line) = result.expected.get("crash_line") {
        let point = process.crash_point.as_deref().unwrap_or("");
        let point = point.split('@').next().unwrap_or(point);
        return match (line.is_null(), result.observed["crash_line"] == true) {
            (true, _) => "no crash (moved away)".to_string(),
            (false, true) => format!("CRASH {point}"),
            (false, false) => format!("no CRASH line (armed {point})"),
        };
    }
    if let Some(text) = result.expected["output"].as_str() {
        return if result.observed["output"] == true {
            format!("'{text}'")
        } else {
            format!("no '{text}' in the output")
        };
    }
    String::new()
}
