//! What a process said about its own transactions, against what the replay shows they did:
//! `COMMITTED` lines against the traced commits, and statements that failed.
//!
//! What can be proven: a role prints `COMMITTED <db> …` right after its COMMIT returned, from
//! the same thread, before anything else (and flushes it). So in a single-threaded role a
//! `COMMITTED` line directly follows the `COMMIT` line of its database, and a completed
//! commit (of content, not of a schema being created) whose next line is anything else was
//! not reported although the process went on. A process that died right after a commit may
//! not have printed its report: that is no problem. In a role with several worker threads
//! (lab 13's receiver) other threads' lines may come between, so reports are matched to
//! commits in order per database, and a commit without one is a problem only when the
//! process ended by itself with exit 0 (every thread had finished).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::engine::{self, End, Store, Unit};
use super::trace::{self, Kind, Line};
use super::walk::Proc;
use super::Problems;

pub fn clean_exit(p: &Proc<'_>) -> bool {
    p.record.exit == 0 && p.record.signal.is_none()
}

fn sql_at<'a>(p: &'a Proc<'_>, line: usize) -> &'a str {
    match &p.lines[line] {
        Line::Sql { sql, .. } => sql,
        _ => "",
    }
}

fn show(line: &Line) -> String {
    match line {
        Line::Sql { db, sql } => format!("SQL {db} {sql}"),
        Line::Committed { db, text } => format!("COMMITTED {db} {text}"),
        Line::Other(text) => text.clone(),
    }
}

/// Every value a unit wrote, read or touched, as text: its statements' literals, the rows
/// they returned, the rows it left changed (with their rowids), and its counts.
pub fn values(p: &Proc<'_>, unit: &Unit) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let add = |v: String, out: &mut BTreeSet<String>| {
        out.extend(trace::tokens(&v));
        out.insert(v);
    };
    let mut total = 0;
    for line in &unit.statements {
        for literal in trace::literals(sql_at(p, *line)) {
            add(literal, &mut out);
        }
        if let Some(o) = p.session.outcomes.get(line) {
            total += o.changes;
            out.insert(o.changes.to_string());
            if let Some(id) = o.rowid {
                out.insert(id.to_string());
            }
            for v in o.rows.iter().flatten() {
                add(engine::text(v), &mut out);
            }
        }
    }
    out.insert(total.to_string());
    let mut per_table: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &unit.touched {
        *per_table.entry(t.table.as_str()).or_default() += 1;
        out.insert(t.rowid.to_string());
        for v in t.row.iter().flatten() {
            add(engine::text(v), &mut out);
        }
    }
    out.insert(unit.touched.len().to_string());
    out.extend(per_table.values().map(|n| n.to_string()));
    out
}

/// Each value a `COMMITTED` line names must be among the values of the unit it reports.
fn names_what_it_did(
    scenario: &str,
    p: &Proc<'_>,
    line: usize,
    text: &str,
    unit: &Unit,
    problems: &mut Problems,
) {
    let known = values(p, unit);
    for named in trace::named_values(text) {
        if !known.contains(&named) {
            problems.push((
                p.record.stdout.clone(),
                format!(
                    "{scenario}/{} line {}: '{}' names {named}, which the transaction it reports (lines {}-{}) neither wrote nor touched in the replay",
                    p.step.name,
                    line + 1,
                    show(&p.lines[line]),
                    unit.begin.map_or(unit.end_line, |b| b) + 1,
                    unit.end_line + 1
                ),
            ));
        }
    }
}

/// What a read of a threaded process returned is certain only when it ran outside any
/// transaction (no other thread's open transaction took it in, in the replay) and every
/// commit of the process before it was already reported (a COMMIT line is traced when the
/// commit starts; another thread may read before it completes, and the report comes after).
pub fn certain_read(p: &Proc<'_>, line: usize) -> bool {
    let buffered = p
        .session
        .units
        .iter()
        .any(|u| u.begin.is_some() && u.statements.contains(&line));
    if buffered {
        return false;
    }
    let mut units: Vec<&Unit> = p
        .session
        .units
        .iter()
        .filter(|u| reportable(u) && u.end_line < line)
        .collect();
    units.sort_by_key(|u| u.end_line);
    let reports = p.lines[..line]
        .iter()
        .filter(|l| matches!(l, Line::Committed { .. }))
        .count();
    units.len() <= reports
}

/// A committed transaction of content, which its role reports with a `COMMITTED` line.
fn reportable(unit: &Unit) -> bool {
    unit.end == End::Committed && unit.begin.is_some() && unit.writes && !unit.schema
}

pub fn check(scenario: &str, p: &Proc<'_>, end: &Store, problems: &mut Problems) {
    let at = |line: usize| format!("{scenario}/{} line {}", p.step.name, line + 1);
    let stdout = p.record.stdout.clone();
    let threaded = p.threaded;
    let mut units: Vec<&Unit> = p.session.units.iter().filter(|u| reportable(u)).collect();
    units.sort_by_key(|u| u.end_line);
    let by_end: BTreeMap<usize, &Unit> = units.iter().map(|u| (u.end_line, *u)).collect();
    // Any completed COMMIT may carry a report (a schema's too), though only content's must.
    let commits: BTreeMap<usize, &Unit> = p
        .session
        .units
        .iter()
        .filter(|u| u.end == End::Committed && u.begin.is_some())
        .map(|u| (u.end_line, u))
        .collect();
    if threaded {
        let mut pending: BTreeMap<&str, VecDeque<&Unit>> = BTreeMap::new();
        for (j, line) in p.lines.iter().enumerate() {
            if let Some(unit) = by_end.get(&j) {
                pending
                    .entry(unit.file.as_str())
                    .or_default()
                    .push_back(unit);
            }
            let Line::Committed { text, .. } = line else {
                continue;
            };
            let unit = p.line_files[j]
                .as_deref()
                .and_then(|f| pending.get_mut(f))
                .and_then(VecDeque::pop_front);
            match unit {
                Some(unit) => names_what_it_did(scenario, p, j, text, unit, problems),
                None => problems.push((
                    stdout.clone(),
                    format!(
                        "{}: '{}' reports no completed commit of its database before it",
                        at(j),
                        show(line)
                    ),
                )),
            }
        }
        if clean_exit(p) {
            for unit in pending.values().flatten() {
                problems.push((
                    stdout.clone(),
                    format!("{}: the COMMIT of {} completed, but no COMMITTED line reports it, and the process ended by itself", at(unit.end_line), unit.file),
                ));
            }
        }
    } else {
        for (j, line) in p.lines.iter().enumerate() {
            let Line::Committed { text, .. } = line else {
                continue;
            };
            let commit = j
                .checked_sub(1)
                .filter(|i| p.line_files[*i] == p.line_files[j] && p.line_files[j].is_some())
                .and_then(|i| commits.get(&i).copied())
                .filter(|_| trace::classify(sql_at(p, j - 1)) == Kind::Commit);
            match commit {
                Some(unit) => names_what_it_did(scenario, p, j, text, unit, problems),
                None => problems.push((
                    stdout.clone(),
                    format!(
                        "{}: '{}' follows no completed COMMIT of its database (the line before: '{}')",
                        at(j),
                        show(line),
                        j.checked_sub(1).map_or(String::new(), |i| show(&p.lines[i]))
                    ),
                )),
            }
        }
        for unit in &units {
            let next = unit.end_line + 1;
            let reported = matches!(p.lines.get(next), Some(Line::Committed { .. }))
                && p.line_files[next].as_deref() == Some(unit.file.as_str());
            match p.lines.get(next) {
                _ if reported => {}
                Some(other) => problems.push((
                    stdout.clone(),
                    format!(
                        "{}: the COMMIT of {} completed, but no COMMITTED line reports it, and the process went on (next: '{}')",
                        at(unit.end_line),
                        unit.file,
                        show(other)
                    ),
                )),
                None if clean_exit(p) => problems.push((
                    stdout.clone(),
                    format!(
                        "{}: the COMMIT of {} completed, but no COMMITTED line reports it, and the process ended with exit 0",
                        at(unit.end_line),
                        unit.file
                    ),
                )),
                None => {}
            }
        }
        for line in &p.session.interleaved {
            problems.push((
                stdout.clone(),
                format!("{}: BEGIN inside a transaction this process holds on the same file; one connection cannot do that", at(*line)),
            ));
        }
    }
    failures(scenario, p, end, problems);
}

/// The failed statement at `line` was rolled back (lines `line + 1 .. k`) and the role's next
/// line, `k`, quotes the error: it saw the failure and handled it.
fn handled(p: &Proc<'_>, line: usize, k: usize, error: &str) -> bool {
    k > line + 1
        && !error.is_empty()
        && matches!(&p.lines[k], Line::Other(text) if text.contains(error))
}

/// A statement that fails in the replay failed in the run only if the role then rolled back
/// or ended with an error, or rolled back and said so: a role that handles a refusal (a
/// receiver's CHECK constraint) and goes on rolls back at once and prints a line quoting the
/// very error the replay finds. One that the run rolled back right after it changed rows
/// failed in the run (the roles roll back only after a failed statement or one that changed
/// nothing).
fn failures(scenario: &str, p: &Proc<'_>, end: &Store, problems: &mut Problems) {
    let at = |line: usize| format!("{scenario}/{} line {}", p.step.name, line + 1);
    for (line, outcome) in &p.session.outcomes {
        let Some(error) = &outcome.error else {
            continue;
        };
        let file = &p.line_files[*line];
        // A read of a file another running process was writing may have failed only in the
        // replay, which may lag that process (a table not created yet): it is judged only
        // if it fails on the scenario's final state too (tables are never dropped).
        if let Some(f) = file.as_ref().filter(|f| p.unjudged.contains(*f)) {
            let fails_at_end = end
                .conn(f)
                .is_none_or(|c| engine::run(c, sql_at(p, *line)).error.is_some());
            if !fails_at_end {
                continue;
            }
        }
        let sql = sql_at(p, *line);
        let rollback = |k: &usize| {
            matches!(p.lines[*k], Line::Sql { .. })
                && p.line_files[*k] == *file
                && trace::classify(sql_at(p, *k)) == Kind::Rollback
        };
        let went_on = if p.threaded {
            // Other workers' reads and waiting BEGINs may come between a failed statement
            // and its worker's ROLLBACK (it holds the write lock meanwhile); the worker
            // answers the request and the process goes on.
            (line + 1..p.lines.len())
                .find(|k| {
                    matches!(p.lines[*k], Line::Sql { .. })
                        && p.line_files[*k] == *file
                        && !matches!(trace::classify(sql_at(p, *k)), Kind::Read | Kind::Begin)
                })
                .filter(|k| !rollback(k))
        } else {
            // Every other role stops at an error (at most its ROLLBACK of that file follows,
            // and the process ends with an error), or rolls back and says it was refused.
            let next = (line + 1..p.lines.len()).find(|k| !rollback(k));
            if next.is_some_and(|k| handled(p, *line, k, error)) {
                continue;
            }
            next
        };
        match went_on {
            Some(k) => problems.push((
                p.record.stdout.clone(),
                format!(
                    "{}: `{sql}` fails in the replay ({error}), but the process went on as if it had not (line {}: '{}')",
                    at(*line),
                    k + 1,
                    show(&p.lines[k])
                ),
            )),
            None if clean_exit(p) && !p.threaded => problems.push((
                p.record.stdout.clone(),
                format!("{}: `{sql}` fails in the replay ({error}), but the process ended with exit 0", at(*line)),
            )),
            None => {}
        }
    }
    // In a threaded role the last statement before a ROLLBACK may be another worker's.
    if p.threaded {
        return;
    }
    for unit in p.session.units.iter().filter(|u| u.end == End::RolledBack) {
        let Some(last) = unit.statements.last() else {
            continue;
        };
        let sql = sql_at(p, *last);
        let first = trace::tokens(sql).first().map(|w| w.to_ascii_uppercase());
        let dml = matches!(
            first.as_deref(),
            Some("INSERT" | "UPDATE" | "DELETE" | "REPLACE")
        );
        let changed = p
            .session
            .outcomes
            .get(last)
            .filter(|o| o.error.is_none())
            .map_or(0, |o| o.changes);
        if dml && changed > 0 {
            problems.push((
                p.record.stdout.clone(),
                format!(
                    "{}: `{sql}` changes {changed} rows in the replay, yet the run rolled back right after it, which the roles do only after a statement that failed or changed nothing",
                    at(*last)
                ),
            ));
        }
    }
}
