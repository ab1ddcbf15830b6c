//! The roles' claims against what their replayed statements did: the consumer's DUPLICATE /
//! REJECTED / CONSUMED, the publisher's and enqueue's counts, the receiver's REQUEST and
//! EXPIRED lines, the dispatcher's RESPONSE and DISPATCHED lines.

use std::collections::BTreeSet;

use rusqlite::types::Value;

use super::engine::{End, Outcome, Touched};
use super::trace::Line;
use super::walk::Proc;
use super::Problems;

mod dispatch;
mod outbox;

pub use dispatch::responses_name_effects;

fn sql_at<'a>(p: &'a Proc<'_>, line: usize) -> &'a str {
    match &p.lines[line] {
        Line::Sql { sql, .. } => sql,
        _ => "",
    }
}

/// Statements of this process that start with `prefix`, with their outcomes, in line order.
fn statements<'a>(
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
fn committed_rows<'a>(
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

fn col(t: &Touched, i: usize) -> Option<&Value> {
    t.row.as_ref().and_then(|r| r.get(i))
}

fn as_text(v: Option<&Value>) -> Option<&str> {
    match v {
        Some(Value::Text(s)) => Some(s),
        _ => None,
    }
}

fn as_int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Integer(i)) => Some(*i),
        _ => None,
    }
}

/// `NAME=<n>` in a summary line.
fn field(text: &str, name: &str) -> Option<i64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
}

fn other_lines<'a>(p: &'a Proc<'_>) -> impl Iterator<Item = (usize, &'a str)> + 'a {
    p.lines.iter().enumerate().filter_map(|(j, l)| match l {
        Line::Other(t) => Some((j, t.as_str())),
        _ => None,
    })
}

pub fn check(scenario: &str, p: &Proc<'_>, problems: &mut Problems) {
    let mut say = |line: usize, what: String| {
        problems.push((
            p.record.stdout.clone(),
            format!("{scenario}/{} line {}: {what}", p.step.name, line + 1),
        ));
    };
    match p.step.phase {
        "consumer" if !p.record.argv.iter().any(|a| a == "--variant") => {
            outbox::consumer(p, &mut say)
        }
        "publisher" => {
            let n = committed_rows(p, "deliveries").count() as i64;
            for (j, text) in other_lines(p) {
                if let Some(rest) = text.strip_prefix("PUBLISHED ") {
                    let claimed = rest.split_whitespace().next().and_then(|w| w.parse().ok());
                    if claimed != Some(n) {
                        say(j, format!("'{text}', but the replay shows {n} deliveries committed by this process"));
                    }
                }
            }
        }
        "enqueue" => {
            let ids: BTreeSet<i64> = committed_rows(p, "deliveries")
                .map(|(_, t)| t.rowid)
                .collect();
            for (j, text) in other_lines(p) {
                if let Some(rest) = text.strip_prefix("ENQUEUED delivery ") {
                    if !rest.parse().is_ok_and(|id: i64| ids.contains(&id)) {
                        say(j, format!("'{text}', but the replay shows this process committed deliveries {ids:?}"));
                    }
                }
            }
        }
        "receiver" => dispatch::receiver(p, &mut say),
        "dispatcher" => dispatch::dispatcher(p, &mut say),
        _ => {}
    }
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
}
