//! Lab f1's roles in the audit's replay: the lines they print besides SQL (the
//! PostgreSQL-only values, whose users carry them as literals), and the relay's claims held
//! to the statements around them: `READ n ids` is what its poll's SELECT returned, each
//! `PUBLISHED message N` an insert at the receiver that took, each `ALREADY` one that did not.

use rusqlite::types::Value;

use crate::engine::replay::claims_api::{other_lines, statements, LabReplay, Proc, RoleClaims};
use crate::labs::relay_gap::roles::Relay;
use crate::role::Role;

pub const REPLAY: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[&[
        // PostgreSQL-only values, printed instead of traced.
        "SEQUENCE",
        "SEQUENCE-CREATED",
        "XID",
        "HORIZON",
        // The roles' own lines.
        "SCHEMA",
        "READ",
        "PUBLISHED",
        "ALREADY",
    ]],
    claims,
};

const POLL: &str = "SELECT id, body, xid FROM outbox";
const PUBLISH: &str = "INSERT INTO published(";

pub fn claims(c: &mut RoleClaims<'_>) {
    if c.proc.step.phase == Relay::NAME {
        relay(c);
    }
}

/// The ids a poll's SELECT before line `j` returned, as the relay prints them. A full batch
/// (more than `BATCH_MAX` rows) is cut by the relay's own rule (`relay::bound`): not judged.
fn read_before(p: &Proc<'_>, j: usize) -> Option<Option<String>> {
    let (_, _, o) = statements(p, POLL).filter(|(l, _, _)| *l < j).last()?;
    if o.rows.len() > super::relay::BATCH_MAX {
        return Some(None);
    }
    let ids: Vec<i64> = o
        .rows
        .iter()
        .filter_map(|r| match r.first() {
            Some(Value::Integer(id)) => Some(*id),
            _ => None,
        })
        .collect();
    Some(Some(format!("{} {}", ids.len(), super::relay::ids(&ids))))
}

/// The id of a traced `INSERT INTO published(id, …) VALUES (N, …)`.
fn published_id(sql: &str) -> Option<i64> {
    let values = sql.split_once("VALUES (")?.1;
    values.split(',').next()?.trim().parse().ok()
}

fn relay(c: &mut RoleClaims<'_>) {
    let p = c.proc;
    let lines: Vec<(usize, String)> = other_lines(p).map(|(j, t)| (j, t.to_string())).collect();
    for (j, text) in &lines {
        if let Some(said) = text.strip_prefix("READ ") {
            match read_before(p, *j) {
                Some(Some(read)) if read == said => {}
                Some(None) => {}
                other => c.say(
                    *j,
                    format!(
                        "'{text}', but the poll's SELECT before it returned {}",
                        other
                            .flatten()
                            .unwrap_or_else(|| "nothing (no SELECT traced)".into())
                    ),
                ),
            }
            continue;
        }
        let (id, took) = match (
            text.strip_prefix("PUBLISHED message "),
            text.strip_prefix("ALREADY message "),
        ) {
            (Some(rest), _) => (rest, true),
            (_, Some(rest)) => (rest.split(':').next().unwrap_or(rest), false),
            _ => continue,
        };
        let id: Option<i64> = id.trim().parse().ok();
        let insert = statements(p, PUBLISH)
            .filter(|(l, sql, _)| *l < *j && published_id(sql) == id)
            .last();
        let did = insert.map(|(_, _, o)| o.changes > 0);
        if did != Some(took) {
            let what = match did {
                Some(true) => "inserted the row",
                Some(false) => "changed nothing (the id was there)",
                None => "is not in the trace",
            };
            c.say(
                *j,
                format!("'{text}', but the receiver's insert before it {what}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_published_id_is_the_first_value() {
        let sql = "INSERT INTO published(id, body, poll) VALUES (8, '{\"b\":1}', 1) ON CONFLICT (id) DO NOTHING";
        assert_eq!(super::published_id(sql), Some(8));
        assert_eq!(
            super::published_id("INSERT INTO published(id) SELECT 1"),
            None
        );
    }
}
