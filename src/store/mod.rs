//! The roles' durable state: what a role needs of its store, and SQLite behind it; beside
//! it PostgreSQL (`pg.rs`) and RabbitMQ (`amqp.rs`). A SQLite file and a PostgreSQL database
//! are both a traced SQL store (`sql.rs`), so a role written once runs the same statements
//! on either.
//!
//! A role opens each store it writes with `open` (the settings pinned on every connection,
//! the schema created or checked, a foreign or damaged store refused with one line), runs
//! its transactions on the returned `Db` (`BEGIN IMMEDIATE` … `COMMIT`; every statement is
//! printed as `SQL <db> <statement with its bound values>`, the trace the audit replays),
//! and a readback lists rows with `open_existing` and `rows`. Errors of the store become
//! one line naming the store and the file (`explain`). The SQLite implementation is
//! `sqlite.rs`; what is said here (the schema's description, the access modes, the trace
//! and its switch) is the same for any store a role could write.

use std::sync::atomic::{AtomicBool, Ordering};

pub mod amqp;
mod explain;
pub mod pg;
pub mod sql;
pub mod sql_sqlite;
mod sqlite;

#[cfg(test)]
mod tests;

pub use explain::explain;
pub use sql::{Cell, Sql, Val};
pub use sqlite::{
    open, open_existing, open_traced, rows, sqlite_version, Db, APPLICATION_ID, BUSY_TIMEOUT_MS,
    PRAGMAS,
};

/// One kind of database: its short name in traces, its schema and its version tag.
pub struct Schema {
    /// Short name used in `SQL <db> …` lines and error messages: `sender`, `queue`, …
    pub db: &'static str,
    /// `PRAGMA user_version`, distinct per kind, so a sender file passed as a queue is refused.
    pub user_version: i64,
    /// Tables and the columns each must have.
    pub tables: &'static [(&'static str, &'static [&'static str])],
    /// DDL run once, in one transaction, on an empty file.
    pub ddl: &'static str,
}

#[cfg(test)]
impl Schema {
    /// The columns each table of `tables` has once SQLite ran the DDL, in that order: a
    /// server's DDL must run on SQLite too, where the audit loads its rows.
    pub fn sqlite_columns(&self) -> Vec<Vec<String>> {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(self.ddl)
            .unwrap_or_else(|e| panic!("{}: {e}", self.db));
        self.tables
            .iter()
            .map(|(table, _)| sqlite::table_columns(&conn, table).unwrap())
            .collect()
    }
}

pub enum Access {
    /// Open an existing file for writing; refuse a missing one.
    Write,
    /// Open for writing, creating the file and its schema when it does not exist.
    WriteCreate,
    /// Open read-only; refuse a missing file and never create one.
    Read,
}

/// The SQL trace is on unless `crashlab --no-trace` turned it off for this process (bench
/// uses that to measure what the trace costs; every lab and chaos run keeps it).
static TRACE: AtomicBool = AtomicBool::new(true);

pub fn set_trace(on: bool) {
    TRACE.store(on, Ordering::Relaxed);
}

/// Whether this process prints its SQL trace (`--no-trace` turns it off for every role).
pub fn trace_on() -> bool {
    TRACE.load(Ordering::Relaxed)
}

/// The trace line of one statement run on store `db`: `SQL <db> <statement>`, the statement
/// with its bound values and on one line (README, "Evidence"; the audit replays these).
pub fn trace_line(db: &str, sql: &str) -> String {
    format!("SQL {db} {}", one_line_sql(sql))
}

/// A statement on one line: each source line trimmed, joined by one space. Only the layout of
/// multi-line SQL in our source changes; a literal never spans lines here.
fn one_line_sql(sql: &str) -> String {
    if !sql.contains('\n') {
        return sql.to_string();
    }
    sql.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
