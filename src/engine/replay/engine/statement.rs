//! One statement run to its end on the replay's connection, and the rows a unit changed.

use rusqlite::types::Value;
use rusqlite::Connection;

use super::{Memory, Outcome, Touched, ROWS_MAX};
use crate::engine::replay::trace;

pub(super) fn is_schema(sql: &str) -> bool {
    let upper = sql.trim().to_ascii_uppercase();
    ["CREATE", "DROP", "ALTER"]
        .iter()
        .any(|w| upper.starts_with(w))
        || (upper.starts_with("PRAGMA")
            && (upper.contains("APPLICATION_ID") || upper.contains("USER_VERSION")))
}

/// Run one statement to its end on `conn`.
pub fn run(conn: &Connection, sql: &str) -> Outcome {
    let before = conn.total_changes();
    let result = (|| -> rusqlite::Result<Vec<Vec<Value>>> {
        let mut stmt = conn.prepare(trace::runnable(sql))?;
        let columns = stmt.column_count();
        let mut rows = stmt.query([])?;
        let mut kept = Vec::new();
        while let Some(row) = rows.next()? {
            if kept.len() < ROWS_MAX {
                kept.push(
                    (0..columns)
                        .map(|i| row.get::<_, Value>(i))
                        .collect::<rusqlite::Result<_>>()?,
                );
            }
        }
        Ok(kept)
    })();
    let changes = conn.total_changes().saturating_sub(before);
    let first = sql.trim_start().get(..7).unwrap_or("").to_ascii_uppercase();
    let inserts = first.starts_with("INSERT") || first.starts_with("REPLACE");
    match result {
        Ok(rows) => Outcome {
            error: None,
            changes,
            rows,
            rowid: (inserts && changes > 0).then(|| conn.last_insert_rowid()),
        },
        Err(e) => Outcome {
            error: Some(e.to_string()),
            changes,
            rows: Vec::new(),
            rowid: None,
        },
    }
}

pub(super) fn read_touched(memory: &Memory) -> Vec<Touched> {
    let mut keys = memory
        .touched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|(table, rowid)| {
            let quoted = table.replace('"', "\"\"");
            let row = memory
                .conn
                .prepare(&format!("SELECT * FROM \"{quoted}\" WHERE rowid = ?1"))
                .and_then(|mut stmt| {
                    let columns = stmt.column_count();
                    let mut rows = stmt.query([rowid])?;
                    match rows.next()? {
                        Some(row) => Ok(Some(
                            (0..columns)
                                .map(|i| row.get::<_, Value>(i))
                                .collect::<rusqlite::Result<Vec<_>>>()?,
                        )),
                        None => Ok(None),
                    }
                })
                .ok()
                .flatten();
            Touched { table, rowid, row }
        })
        .collect()
}

/// A value as the text a report would print it.
pub fn text(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Text(t) => t.clone(),
        Value::Blob(b) => crate::common::hex(b),
    }
}
