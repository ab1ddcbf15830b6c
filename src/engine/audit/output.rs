//! What binds a process's raw stdout and stderr to that process, and its recorded ending to
//! what the files show. Checked for every process of a driver run and of a chaos run:
//!
//! - its `POINT` lines are its own phase's, counted 1, 2, 3… per name;
//! - its `SQL <db>` lines touch only the databases its argv names;
//! - every pinned pragma it traced has the value processes.json records, and each database
//!   had them all set before its first statement on data;
//! - a `CRASH` line only where argv armed one, naming that point and mode, after the armed
//!   hit, as the last line; and then the exit and signal that mode gives; a `NOT-REACHED`
//!   line names the armed point, reached fewer times than armed, and goes with exit 78;
//! - stderr is empty when the process ended well, by a crash or by a signal, and one
//!   `crashlab: …` line when it ended on an error (the only thing a role prints there);
//! - arguments it echoes (`--mode` in `READY`, `--consumer-id` in its claims) are its own.

use std::collections::{BTreeMap, BTreeSet};

use crate::crash::{self, Mode, PointDef};
use crate::events::Event;
use crate::fail;

use super::output_sql::{echo_consumer, is_data, pinned_pragma};

/// The pragmas every connection pins; each must be traced before a database's first data
/// statement. (journal_mode is set by writers only: a reader keeps the file's own.)
const PINNED_BY_EVERY_CONNECTION: &[&str] = &["synchronous", "foreign_keys", "busy_timeout"];

/// One process as recorded, with its raw output.
pub struct Ran<'a> {
    /// `crashlab PHASE ARGS…`
    pub argv: &'a [String],
    pub exit: i32,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: &'a str,
    pub stderr: &'a str,
    /// The stores of a lab on servers (`engine::stack`), named in argv by logical name
    /// (`--sender sender`); none for a lab on SQLite files.
    pub server_stores: &'a [&'a str],
}

/// The crash argv armed: point, hit and mode.
pub struct Armed {
    pub point: String,
    pub hit: u32,
    pub mode: Mode,
}

impl Ran<'_> {
    /// The phase: the first argument after `crashlab` and its global flags.
    pub fn phase(&self) -> &str {
        self.argv
            .iter()
            .skip(1)
            .find(|a| !a.starts_with("--"))
            .map_or("", String::as_str)
    }

    pub fn arg(&self, flag: &str) -> Option<&str> {
        self.argv
            .iter()
            .position(|a| a == flag)
            .and_then(|i| self.argv.get(i + 1))
            .map(String::as_str)
    }

    /// `sender` for `--db sender.db`: the short names its traces may use.
    pub fn databases(&self) -> BTreeSet<&str> {
        // A store on servers: its logical name (`--db sender`, traced `SQL sender`) and the
        // flag that names it (`--queue messages`: the readback's `queue`).
        let servers = self.argv.windows(2).flat_map(|w| {
            let named = self.server_stores.contains(&w[1].as_str());
            let flag = w[0].strip_prefix("--").filter(|f| named && *f != "db");
            named.then_some(w[1].as_str()).into_iter().chain(flag)
        });
        self.argv
            .iter()
            .filter_map(|a| a.strip_suffix(".db"))
            .filter(|stem| !stem.starts_with('-'))
            .chain(servers)
            .collect()
    }

    pub fn armed(&self) -> Result<Option<Armed>, String> {
        let Some(spec) = self.arg("--crash-at") else {
            return Ok(None);
        };
        let (point, hit) = match spec.split_once('@') {
            None => (spec, 1),
            Some((p, n)) => (p, n.parse().map_err(|_| format!("--crash-at {spec}"))?),
        };
        let mode = match self.arg("--crash-mode") {
            None => Mode::Exit,
            Some(name) => {
                super::command::mode_named(name).ok_or_else(|| format!("--crash-mode {name}"))?
            }
        };
        Ok(Some(Armed {
            point: point.to_string(),
            hit,
            mode,
        }))
    }
}

/// Every way the raw output and the recorded ending of one process disagree with each other
/// and with its argv: (which file, what) pairs, `Stdout`, `Stderr` or `Record`. The crash,
/// an armed point not reached and the claims are read from stdout's lines (a chaos run's
/// roles); `check_events` reads them from the process's events.
pub fn check(
    ran: &Ran<'_>,
    points: &[PointDef],
    pragmas: &BTreeMap<String, String>,
) -> Vec<(Which, String)> {
    check_with(ran, None, points, pragmas)
}

/// `check`, with what happened read from the process's events (a driver run), which
/// audit/events.rs holds to its stdout line by line.
pub fn check_events(
    ran: &Ran<'_>,
    events: &[Event],
    points: &[PointDef],
    pragmas: &BTreeMap<String, String>,
) -> Vec<(Which, String)> {
    check_with(ran, Some(events), points, pragmas)
}

fn check_with(
    ran: &Ran<'_>,
    events: Option<&[Event]>,
    points: &[PointDef],
    pragmas: &BTreeMap<String, String>,
) -> Vec<(Which, String)> {
    let mut problems = Vec::new();
    let mut say = |which: Which, text: String| problems.push((which, text));
    let phase = ran.phase();
    let databases = ran.databases();
    let armed = match ran.armed() {
        Ok(a) => a,
        Err(bad) => {
            say(Which::Record, format!("argv has a malformed {bad}"));
            None
        }
    };
    let lines: Vec<&str> = ran.stdout.lines().collect();
    let mut hits: BTreeMap<&str, u32> = BTreeMap::new();
    let mut pinned: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut data_seen: BTreeSet<&str> = BTreeSet::new();
    let mut quick_checked: BTreeSet<&str> = BTreeSet::new();
    let mut crash_lines = 0;
    let mut not_reached = false;
    for (index, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("POINT ") {
            let (name, hit) = rest.split_once(" #").unwrap_or((rest, ""));
            match points.iter().find(|p| p.name == name) {
                Some(p) if p.phase() == phase => {}
                Some(_) => say(
                    Which::Stdout,
                    format!(
                        "line {}: point {name} is not one of phase {phase}",
                        index + 1
                    ),
                ),
                None => say(
                    Which::Stdout,
                    format!("line {}: unknown point {name}", index + 1),
                ),
            }
            let count = hits.entry(name).or_insert(0);
            *count += 1;
            if hit.parse::<u32>().ok() != Some(*count) {
                say(
                    Which::Stdout,
                    format!(
                        "line {}: hit '#{hit}' of {name}, but this is its hit {count}",
                        index + 1
                    ),
                );
            }
        } else if let Some(rest) = line.strip_prefix("CRASH ") {
            crash_lines += 1;
            if index + 1 != lines.len() {
                say(
                    Which::Stdout,
                    format!("line {}: lines follow the crash", index + 1),
                );
            }
            if events.is_some() {
                continue;
            }
            let Some(armed) = &armed else {
                say(
                    Which::Stdout,
                    format!("line {}: '{line}', but argv armed no crash", index + 1),
                );
                continue;
            };
            let expected = crash::crash_line(&armed.point, armed.mode);
            if *line != expected {
                say(
                    Which::Stdout,
                    format!("line {}: '{line}', argv armed '{expected}'", index + 1),
                );
            }
            let point = rest.split(' ').next().unwrap_or("");
            if hits.get(point).copied() != Some(armed.hit) {
                say(
                    Which::Stdout,
                    format!(
                        "line {}: the crash came at hit {} of {point}, argv armed hit {}",
                        index + 1,
                        hits.get(point).copied().unwrap_or(0),
                        armed.hit
                    ),
                );
            }
        } else if let Some(rest) = line.strip_prefix("SQL ") {
            let (db, statement) = rest.split_once(' ').unwrap_or((rest, ""));
            if !databases.contains(db) {
                say(
                    Which::Stdout,
                    format!(
                        "line {}: a statement on {db}, a database argv does not name",
                        index + 1
                    ),
                );
                continue;
            }
            if let Some((name, value)) = pinned_pragma(statement) {
                pinned.entry(db).or_default().insert(name);
                let recorded = pragmas.get(name).map(String::as_str);
                if recorded != Some(value.to_ascii_lowercase().as_str()) {
                    say(
                        Which::Stdout,
                        format!(
                            "line {}: traced PRAGMA {name}={value}, processes.json pragmas say {}",
                            index + 1,
                            recorded.unwrap_or("nothing")
                        ),
                    );
                }
            } else if statement.starts_with("PRAGMA quick_check") {
                quick_checked.insert(db);
            } else if is_data(statement)
                && !ran.server_stores.contains(&db)
                && data_seen.insert(db)
                // A reader that found the file holding nothing (no quick_check: the store
                // checks every file with content) reads an empty database of its kind, in
                // memory, which pins nothing; the replay holds it to an empty file.
                && quick_checked.contains(db)
            {
                let set = pinned.get(db).cloned().unwrap_or_default();
                for name in PINNED_BY_EVERY_CONNECTION {
                    if !set.contains(name) {
                        say(
                            Which::Stdout,
                            format!(
                                "line {}: the first statement on {db} before its PRAGMA {name} was set",
                                index + 1
                            ),
                        );
                    }
                }
            }
            echo_consumer(ran, statement, index, &mut say);
        } else if let Some(spec) = line.strip_prefix("NOT-REACHED ") {
            if events.is_some() {
                continue;
            }
            not_reached = true;
            let armed_spec = ran.arg("--crash-at").unwrap_or("");
            let full = |spec: &str| {
                if spec.contains('@') {
                    spec.to_string()
                } else {
                    format!("{spec}@1")
                }
            };
            let (point, hit) = spec.split_once('@').unwrap_or((spec, "1"));
            let seen = hits.get(point).copied().unwrap_or(0);
            if full(spec) != full(armed_spec) {
                say(
                    Which::Stdout,
                    format!(
                        "line {}: '{line}', but argv armed '{armed_spec}'",
                        index + 1
                    ),
                );
            } else if hit.parse::<u32>().map_or(true, |h| seen >= h) {
                say(
                    Which::Stdout,
                    format!(
                        "line {}: '{line}', yet {point} was reached {}",
                        index + 1,
                        crate::out::plural(seen, "time", "times")
                    ),
                );
            }
        } else if line.starts_with("READY ") {
            if let Some(mode) = ran.arg("--mode") {
                if !line.split(' ').any(|w| w == format!("mode={mode}")) {
                    say(
                        Which::Stdout,
                        format!(
                            "line {}: '{line}' is not a receiver run with --mode {mode}",
                            index + 1
                        ),
                    );
                }
            }
        } else if line.starts_with("COMMITTED queue claim ") && events.is_none() {
            if let Some(id) = ran.arg("--consumer-id") {
                if !line.ends_with(&format!(" by {id}")) {
                    say(
                        Which::Stdout,
                        format!(
                            "line {}: a claim not by this process's consumer id {id}",
                            index + 1
                        ),
                    );
                }
            }
        }
    }
    if crash_lines > 1 {
        say(
            Which::Stdout,
            format!("{crash_lines} CRASH lines; a process crashes once"),
        );
    }
    let mut crashed = crash_lines > 0;
    if let Some(events) = events {
        let facts = super::output_events::check(ran, events, armed.as_ref(), &mut say);
        crashed = facts.crashed;
        not_reached = facts.not_reached;
    }
    if not_reached != (ran.exit == fail::EXIT_NOT_REACHED) {
        say(
            Which::Record,
            format!(
                "exit {}, {} NOT-REACHED line in stdout (the two go together)",
                ran.exit,
                if not_reached { "with a" } else { "without a" }
            ),
        );
    }
    super::ending::check(ran, armed.as_ref(), crashed, &mut say);
    problems
}

/// Which file a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Stdout,
    Stderr,
    /// The process's record in processes.json.
    Record,
    /// Its events file.
    Events,
}

impl Which {
    /// The evidence file a problem of this kind is reported under, given the process's own
    /// files (relative to the run directory).
    pub fn file<'a>(self, stdout: &'a str, stderr: &'a str, events: &'a str) -> &'a str {
        match self {
            Which::Stdout => stdout,
            Which::Stderr => stderr,
            Which::Record => crate::engine::evidence::PROCESSES,
            Which::Events => events,
        }
    }
}
