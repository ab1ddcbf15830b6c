//! A lab file's PostgreSQL store read back: its tables, in one snapshot, into a SQLite file
//! in the run's directory (`NAME.postgres.db`), which the checks, the invariants and the
//! audit read as they read a SQLite store, so the audit needs no server.

use std::path::Path;

use anyhow::{Context, Result};

use crate::engine::state::server::pg::{connect, ROWS_MAX};

/// A private server's settings: see `Server::start`. A session whose role was killed
/// mid-statement (a `pg_sleep` holding a lock) notices within 100 ms that its client is gone,
/// and ends, instead of holding its locks until the run's database is dropped.
pub const SETTINGS: &[(&str, &str)] = &[
    ("fsync", "off"),
    ("full_page_writes", "off"),
    ("client_connection_check_interval", "100ms"),
];

/// Tables read back from one store: a lab's tables are a handful.
const TABLES_MAX: usize = 1_000;

/// The SQLite column type of a PostgreSQL one. A `numeric` column has none: each value is
/// stored as `cell` makes it, never rounded by SQLite's own conversion.
fn affinity(data_type: &str) -> &'static str {
    match data_type {
        "smallint" | "integer" | "bigint" | "boolean" => "INTEGER",
        "real" | "double precision" => "REAL",
        "numeric" => "",
        _ => "TEXT",
    }
}

/// A `numeric` value's text as SQLite keeps it: an integer or a real where that is exactly
/// the same number (`10.50` is 10.5), else its text, so two values an exact comparison tells
/// apart stay apart.
fn numeric(text: String) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    if let Ok(i) = text.parse::<i64>() {
        return Value::Integer(i);
    }
    let plain = match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.'),
        false => text.as_str(),
    };
    match text.parse::<f64>() {
        Ok(r) if r.is_finite() && format!("{r}") == plain => Value::Real(r),
        _ => Value::Text(text),
    }
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The tables of the search path's first schema at `url` into a new SQLite file `file`, all
/// in one snapshot (a repeatable-read, read-only transaction). Each value travels as text and
/// lands in a column of its type's affinity: `5` is an integer again, a boolean 1 or 0.
pub fn copy(url: &str, file: &Path) -> Result<()> {
    let mut client = connect(url)?.context("its database is gone")?;
    let mut tx = client
        .build_transaction()
        .isolation_level(::postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let columns = tx.query(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text \
         FROM information_schema.columns c JOIN information_schema.tables t \
           ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
         ORDER BY c.table_name, c.ordinal_position",
        &[],
    )?;
    let mut tables: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for row in &columns {
        let (table, column, data_type): (String, String, String) =
            (row.get(0), row.get(1), row.get(2));
        match tables.last_mut() {
            Some((t, cols)) if *t == table => cols.push((column, data_type)),
            _ => tables.push((table, vec![(column, data_type)])),
        }
    }
    anyhow::ensure!(
        tables.len() <= TABLES_MAX,
        "{} tables, more than the {TABLES_MAX} read back",
        tables.len()
    );
    let mut conn = super::stores::fresh_copy(file)?;
    let sqlite = conn.transaction()?;
    for (table, cols) in &tables {
        let defs: Vec<String> = cols
            .iter()
            .map(|(c, t)| format!("{} {}", quoted(c), affinity(t)))
            .collect();
        sqlite.execute_batch(&format!(
            "CREATE TABLE {} ({})",
            quoted(table),
            defs.join(", ")
        ))?;
        let reads: Vec<String> = cols
            .iter()
            .map(|(c, t)| match t.as_str() {
                "boolean" => format!("{}::int::text", quoted(c)),
                _ => format!("{}::text", quoted(c)),
            })
            .collect();
        let rows = tx
            .query(
                &format!("SELECT {} FROM {}", reads.join(", "), quoted(table)),
                &[],
            )
            .with_context(|| format!("reading table {table}"))?;
        anyhow::ensure!(
            rows.len() <= ROWS_MAX,
            "table {table} holds over {ROWS_MAX} rows"
        );
        let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
        let mut insert = sqlite.prepare(&format!(
            "INSERT INTO {} VALUES ({})",
            quoted(table),
            marks.join(", ")
        ))?;
        for row in &rows {
            let values = cols.iter().enumerate().map(|(i, (_, t))| {
                match (row.get::<_, Option<String>>(i), t.as_str()) {
                    (None, _) => rusqlite::types::Value::Null,
                    (Some(text), "numeric") => numeric(text),
                    (Some(text), _) => rusqlite::types::Value::Text(text),
                }
            });
            insert.execute(rusqlite::params_from_iter(values))?;
        }
    }
    sqlite.commit()?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value;

    #[test]
    fn a_numeric_is_a_number_only_where_it_is_exactly_that_number() {
        assert_eq!(numeric("42".into()), Value::Integer(42));
        assert_eq!(numeric("-7".into()), Value::Integer(-7));
        assert_eq!(numeric("10.50".into()), Value::Real(10.5));
        assert_eq!(numeric("25.0".into()), Value::Real(25.0));
        // Past what an i64 or an f64 holds exactly: kept as text, each distinct.
        for text in [
            "12345678901234567890.0000000001",
            "12345678901234567890.0000000002",
            "18446744073709551615",
            "0.1000000000000000000001",
            "NaN",
        ] {
            assert_eq!(numeric(text.into()), Value::Text(text.into()));
        }
    }
}
