//! What a lab's own replay checks read (`Lab::replay`): one process of a replayed
//! scenario, with what each of its traced statements did, the other processes of the scene
//! and the replayed files at its end. Each lab checks its roles' printed claims (counts,
//! DUPLICATE lines, replies) against them in its own folder; the engine only calls it.

use rusqlite::types::Value;

use super::trace::Line;
use super::Problems;

pub use super::commits::{certain_read, clean_exit};
pub use super::engine::{End, Outcome, Session, Store, Touched};
pub use super::trace::literals;
pub use super::walk::Proc;

/// What the replay needs to know of a lab's roles, by phase.
pub struct LabReplay {
    /// Phases that serve on several threads, each with its own connection, into one stdout
    /// (and one events file): their lines and events may interleave.
    pub threaded: &'static [&'static str],
    /// Phases that print a reply's status line `STATUS <code>`, then its headers and body as
    /// they came (no line of a role).
    pub raw_replies: &'static [&'static str],
    /// The first word of each line its roles print, besides `SQL`, `COMMITTED`, a
    /// readback's JSON and the crash lines (`POINT`, `CRASH`, `NOT-REACHED`). A role that
    /// prints a new kind of line adds it here; the audit names any other line. In lists, so
    /// that a lab running another lab's roles names their lines by that lab's own list.
    pub lines: &'static [&'static [&'static str]],
    /// Its roles' printed claims (counts, DUPLICATE lines, replies) against what their
    /// replayed statements did: called for each process of a replayed scenario, reports
    /// through `RoleClaims::say` (`none`: nothing to check).
    pub claims: fn(&mut RoleClaims<'_>),
}

/// One process's claims to check, once its scenario has been replayed to the end.
pub struct RoleClaims<'a> {
    pub scenario: &'a str,
    /// The process whose lines are checked.
    pub proc: &'a Proc<'a>,
    /// Every process of the scenario, `proc` among them.
    pub procs: &'a [Proc<'a>],
    /// The replayed files at the scenario's end.
    pub store: &'a Store,
    pub problems: &'a mut Problems,
}

impl<'a> RoleClaims<'a> {
    /// Report a problem at line `line` (0-based) of the process's stdout.
    pub fn say(&mut self, line: usize, what: String) {
        self.problems.push((
            self.proc.record.stdout.clone(),
            format!(
                "{}/{} line {}: {what}",
                self.scenario,
                self.proc.step.name,
                line + 1
            ),
        ));
    }

    /// The replayed file at the scenario's end that a process of phase `phase` names with
    /// `--<flag>` (None: no such process, flag or file).
    pub fn file_of(&self, phase: &str, flag: &str) -> Option<&'a rusqlite::Connection> {
        self.procs
            .iter()
            .find(|p| p.step.phase == phase)
            .and_then(|p| p.files.get(flag))
            .and_then(|f| self.store.conn(f))
    }
}

/// A lab without role claims to check.
pub fn none(_: &mut RoleClaims<'_>) {}

/// The SQL of line `line` (empty when it is no SQL line).
pub fn sql_at<'a>(p: &'a Proc<'_>, line: usize) -> &'a str {
    match &p.lines[line] {
        Line::Sql { sql, .. } => sql,
        _ => "",
    }
}

/// Statements of this process that start with `prefix`, with their outcomes, in line order.
pub fn statements<'a>(
    p: &'a Proc<'_>,
    prefix: &'a str,
) -> impl Iterator<Item = (usize, &'a str, &'a Outcome)> + 'a {
    p.session.outcomes.iter().filter_map(move |(line, o)| {
        let sql = sql_at(p, *line);
        sql.trim_start()
            .starts_with(prefix)
            .then_some((*line, sql, o))
    })
}

/// Rows of `table` left changed by this process's committed transactions, with the line of
/// the commit, in commit order.
pub fn committed_rows<'a>(
    p: &'a Proc<'_>,
    table: &'a str,
) -> impl Iterator<Item = (usize, &'a Touched)> + 'a {
    p.session
        .units
        .iter()
        .filter(|u| u.end == End::Committed)
        .flat_map(move |u| {
            u.touched
                .iter()
                .filter(move |t| t.table == table)
                .map(move |t| (u.end_line, t))
        })
}

/// Column `i` of a touched row as it was left (None: deleted).
pub fn col(t: &Touched, i: usize) -> Option<&Value> {
    t.row.as_ref().and_then(|r| r.get(i))
}

pub fn as_text(v: Option<&Value>) -> Option<&str> {
    match v {
        Some(Value::Text(s)) => Some(s),
        _ => None,
    }
}

pub fn as_int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Integer(i)) => Some(*i),
        _ => None,
    }
}

/// `NAME=<n>` in a summary line.
pub fn field(text: &str, name: &str) -> Option<i64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
}

/// Is the statement at `line` part of a transaction that committed?
pub fn committed_line(p: &Proc<'_>, line: usize) -> bool {
    p.session
        .units
        .iter()
        .any(|u| u.end == End::Committed && u.statements.contains(&line))
}

/// The lines that are neither SQL nor COMMITTED, with their index.
pub fn other_lines<'a>(p: &'a Proc<'_>) -> impl Iterator<Item = (usize, &'a str)> + 'a {
    p.lines.iter().enumerate().filter_map(|(j, l)| match l {
        Line::Other(t) => Some((j, t.as_str())),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn summary_fields_parse() {
        assert_eq!(
            super::field("applied=0 duplicates=2 rejected=0", "duplicates"),
            Some(2)
        );
        assert_eq!(super::field("delivered=1 replayed=0", "held"), None);
    }

    #[test]
    fn texts_of_values() {
        use rusqlite::types::Value;
        assert_eq!(
            crate::engine::replay::engine::text(&Value::Integer(25)),
            "25"
        );
        assert_eq!(crate::engine::replay::engine::text(&Value::Null), "NULL");
    }

    /// A phase named wrongly would silently judge a threaded role as sequential (or a raw
    /// reply as lines of a role): every phase a lab's replay names runs in its scenarios.
    #[test]
    fn the_phases_a_lab_names_for_the_replay_run_in_its_scenarios() {
        let mut named = 0;
        for lab in crate::engine::registry::stacks() {
            let phases: Vec<&str> = (lab.scenarios)()
                .iter()
                .flat_map(|s| s.steps.iter().map(|step| step.phase))
                .collect();
            for phase in lab.replay.threaded.iter().chain(lab.replay.raw_replies) {
                assert!(phases.contains(phase), "{}: {phase}", lab.full_name());
                assert!(super::super::threaded(lab, phase) == lab.replay.threaded.contains(phase));
                named += 1;
            }
        }
        // Some lab serves on several threads: the rule is exercised, not vacuous.
        assert!(named > 0);
    }
}
