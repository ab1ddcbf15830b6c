//! Lines the replay cannot use are named, not skipped: a line no role prints (an `SQL` line
//! whose prefix was altered would silently drop its statement from the replay), a database
//! name the process's argv does not give, a pragma SQLite does not know (SQLite ignores an
//! unknown pragma, so the replay could not notice it otherwise), a connection pragma set to
//! another value than the one every connection pins, a crash point the lab does not have or
//! whose hits do not count 1, 2, 3.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use rusqlite::Connection;

use super::trace::{self, Kind, Line};
use super::walk::Proc;
use super::Problems;
use crate::store::PRAGMAS;

/// The first word of the lines every role may print (crash.rs, pause.rs), besides `SQL`,
/// `COMMITTED` and a readback's JSON; each lab names the others its roles print
/// (`LabReplay::lines`).
pub const KINDS: &[&str] = &["POINT", "CRASH", "NOT-REACHED", "PAUSED", "RESUMED"];

/// The first word of a broker operation's trace line (`AMQP publish|confirm|deliver|ack|nack
/// …`): known for every lab whose stack has a queue. The queue is not replayed.
pub const AMQP: &str = "AMQP";

/// Is `word` the first word of a line a role of `lab` prints (besides `SQL` and `COMMITTED`)?
pub fn known(lab: &crate::engine::LabStack, word: &str) -> bool {
    KINDS.contains(&word)
        || lab.replay.lines.iter().any(|l| l.contains(&word))
        || (word == AMQP && lab.stack.is_some_and(|s| !s.queues.is_empty()))
}

fn pragmas() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let names = || -> rusqlite::Result<BTreeSet<String>> {
            let conn = Connection::open_in_memory()?;
            let mut stmt = conn.prepare("SELECT name FROM pragma_pragma_list")?;
            let names = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(names)
        };
        names().unwrap_or_default()
    })
}

/// The pragma a statement runs, if it is one (`PRAGMA main.user_version=3` → `user_version`).
fn pragma_name(sql: &str) -> Option<String> {
    let rest = sql.trim_start();
    let head = rest.get(..6)?;
    if !head.eq_ignore_ascii_case("PRAGMA") {
        return None;
    }
    let name: String = rest[6..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    Some(name.rsplit('.').next().unwrap_or("").to_ascii_lowercase())
}

pub fn check(
    scenario: &str,
    p: &Proc<'_>,
    lab: &crate::engine::LabStack,
    recorded: &BTreeMap<String, String>,
    problems: &mut Problems,
) {
    let points = lab.points;
    let mut say = |line: usize, what: String| {
        problems.push((
            p.record.stdout.clone(),
            format!("{scenario}/{} line {}: {what}", p.step.name, line + 1),
        ));
    };
    let mut reply = false;
    let mut hits: BTreeMap<&str, Vec<(usize, u32)>> = BTreeMap::new();
    for (j, line) in p.lines.iter().enumerate() {
        match line {
            Line::Sql { db, sql } => {
                if p.line_files[j].is_none() {
                    say(
                        j,
                        format!("database '{db}' is none of the files its argv names"),
                    );
                }
                if let Some(name) = pragma_name(sql) {
                    if !pragmas().contains(&name) {
                        say(j, format!("`{sql}` runs a pragma SQLite does not know"));
                    }
                    if let Some(pinned) = pinned(&name, sql, recorded) {
                        say(j, format!("`{sql}`: every connection sets {name}={pinned}"));
                    }
                }
            }
            Line::Committed { db, .. } => {
                if p.line_files[j].is_none() {
                    say(
                        j,
                        format!("database '{db}' is none of the files its argv names"),
                    );
                }
            }
            Line::Other(text) => {
                if reply || text.starts_with('{') {
                    continue;
                }
                let first = text.split_whitespace().next().unwrap_or("");
                if first == "POINT" {
                    let mut words = text.split_whitespace().skip(1);
                    let name = words.next().unwrap_or("");
                    let hit = words
                        .next()
                        .and_then(|h| h.strip_prefix('#')?.parse::<u32>().ok());
                    match (points.iter().find(|d| d.name == name), hit) {
                        (Some(_), Some(hit)) => hits.entry(name).or_default().push((j, hit)),
                        _ => say(j, format!("'{text}' names no crash point of the lab")),
                    }
                    continue;
                }
                if p.raw_reply && first == "STATUS" {
                    reply = true;
                    continue;
                }
                if !known(lab, first) {
                    say(j, format!("'{text}' is no line a crashlab role prints"));
                }
            }
        }
    }
    pauses(&p.lines, &mut say);
    // A point counts its hits 1, 2, 3; several workers may print theirs out of order.
    let threaded = p.threaded;
    for (name, mut seen) in hits {
        if threaded {
            seen.sort_by_key(|(_, hit)| *hit);
        }
        for (n, (j, hit)) in seen.into_iter().enumerate() {
            if hit as usize != n + 1 {
                say(
                    j,
                    format!("POINT {name} #{hit}, but this is its hit number {}", n + 1),
                );
                break;
            }
        }
    }
}

/// A role stops itself right after its `PAUSED` line and prints `RESUMED` first thing once
/// continued (pause.rs): the line after a `PAUSED` line is its `RESUMED` line (or there is
/// none: it was killed while stopped), and a `RESUMED` line follows its `PAUSED` line.
fn pauses(lines: &[Line], say: &mut dyn FnMut(usize, String)) {
    let other = |j: usize| match lines.get(j) {
        Some(Line::Other(t)) => Some(t.as_str()),
        _ => None,
    };
    for j in 0..lines.len() {
        let text = other(j).unwrap_or("");
        if let Some(rest) = text.strip_prefix("PAUSED ") {
            let point = rest.split_whitespace().next().unwrap_or("");
            let want = crate::pause::resumed_line(point);
            if j + 1 < lines.len() && other(j + 1) != Some(want.as_str()) {
                say(
                    j + 1,
                    format!("'{text}' is followed by another line than '{want}'"),
                );
            }
        } else if let Some(point) = text.strip_prefix("RESUMED ") {
            let before = j.checked_sub(1).and_then(other).unwrap_or("");
            let paused = before
                .strip_prefix("PAUSED ")
                .and_then(|r| r.split_whitespace().next());
            if paused != Some(point) {
                say(j, format!("'{text}' follows no PAUSED line of its point"));
            }
        }
    }
}

/// The pinned value when a traced connection pragma sets another (`None`: it agrees, or it
/// is no pinned pragma). Readers set `query_only=ON` instead of the journal mode.
fn pinned(name: &str, sql: &str, recorded: &BTreeMap<String, String>) -> Option<String> {
    let value = sql.split_once('=')?.1.trim().trim_end_matches(';').trim();
    let want = PRAGMAS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .or((name == "query_only").then_some("on"))?;
    debug_assert!(matches!(
        trace::classify(sql),
        Kind::Connection | Kind::ForeignKeys(_)
    ));
    // A store profile pins its own journal mode and synchronous setting: the run's recorded
    // pragmas (held by the audit to the profile its command names) say which.
    let want = recorded.get(name).map_or(want, String::as_str);
    (!value.eq_ignore_ascii_case(want)).then(|| want.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragma_names_are_read_and_known() {
        assert_eq!(
            pragma_name(" PRAGMA user_version=1401").as_deref(),
            Some("user_version")
        );
        assert_eq!(
            pragma_name("PRAGMA main.journal_mode=wal").as_deref(),
            Some("journal_mode")
        );
        assert_eq!(pragma_name("SELECT 1"), None);
        for known in [
            "journal_mode",
            "user_version",
            "application_id",
            "quick_check",
        ] {
            assert!(pragmas().contains(known), "{known}");
        }
        assert!(!pragmas().contains("user_vession"));
    }

    #[test]
    fn a_paused_line_is_followed_by_its_resumed_line_or_ends_the_trace() {
        let lines = |texts: &[&str]| -> Vec<Line> {
            texts.iter().map(|t| Line::Other(t.to_string())).collect()
        };
        let said = |texts: &[&str]| {
            let mut out = Vec::new();
            pauses(&lines(texts), &mut |j, what| out.push((j, what)));
            out
        };
        assert!(said(&["PAUSED c.p #1", "RESUMED c.p", "ACKED"]).is_empty());
        assert!(said(&["POINT c.p #1", "PAUSED c.p #1"]).is_empty());
        let dropped = said(&["PAUSED c.p #1", "ACKED"]);
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert_eq!(dropped[0].0, 1);
        let alone = said(&["ACKED", "RESUMED c.p"]);
        assert_eq!(alone.len(), 1, "{alone:?}");
        assert!(alone[0].1.contains("follows no PAUSED line"), "{alone:?}");
        assert_eq!(said(&["PAUSED c.p #1", "RESUMED c.q"]).len(), 2);
    }
}
