//! SQLite as a `Sql` store: a role's file (`Db`, traced by the connection's own trace hook)
//! or any open connection (`OnSqlite`: the audit's replayed files, a load run's copies).

use anyhow::Result;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode};

use super::explain::explain;
use super::sql::{Cell, Done, Refused, Sql, Val};
use super::sqlite::Db;
use crate::fail;

/// An open SQLite connection as a store named `db`, shown in messages as `shown`.
pub struct OnSqlite<'c> {
    pub conn: &'c Connection,
    pub db: &'static str,
    pub shown: &'c str,
}

impl Db {
    /// This file as a `Sql` store.
    pub fn sql(&self) -> OnSqlite<'_> {
        OnSqlite {
            conn: &self.conn,
            db: self.db,
            shown: &self.shown,
        }
    }
}

fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(v) => Cell::Int(v),
        ValueRef::Text(bytes) => std::str::from_utf8(bytes)
            .map(|t| Cell::Text(t.to_string()))
            .unwrap_or(Cell::Other),
        ValueRef::Real(_) | ValueRef::Blob(_) => Cell::Other,
    }
}

impl OnSqlite<'_> {
    /// SQLite's error as the store's one line; a constraint's refusal as `Refused`.
    fn error(&self, e: rusqlite::Error) -> anyhow::Error {
        let refused = e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation);
        let line = explain(e, self.db, self.shown);
        match refused {
            true => anyhow::Error::new(Refused(line.to_string())),
            false => line,
        }
    }

    fn batch(&self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).map_err(|e| self.error(e))
    }
}

impl Sql for OnSqlite<'_> {
    fn db(&self) -> &'static str {
        self.db
    }

    fn shown(&self) -> &str {
        self.shown
    }

    fn run(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Done> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.error(e))?;
        // Bound by position: the statement numbers its `$N` in order of first use.
        debug_assert!(
            (1..=args.len()).all(|i| stmt.parameter_name(i) == Some(format!("${i}").as_str()))
        );
        for (i, arg) in args.iter().enumerate() {
            let bound = match arg {
                Val::Null => stmt.raw_bind_parameter(i + 1, rusqlite::types::Null),
                Val::Int(v) => stmt.raw_bind_parameter(i + 1, v),
                Val::Text(t) => stmt.raw_bind_parameter(i + 1, t),
            };
            bound.map_err(|e| self.error(e))?;
        }
        let columns = stmt.column_count();
        let mut done = Done::default();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            done.rows
                .push((0..columns).map(|i| cell(row.get_ref_unwrap(i))).collect());
        }
        drop(rows);
        done.changed = self.conn.changes();
        Ok(done)
    }

    fn begin(&mut self) -> Result<()> {
        self.batch("BEGIN IMMEDIATE")
    }

    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    fn unreadable(&self, sql: &str) -> anyhow::Error {
        fail::usage(format!(
            "{} database {} is corrupt or foreign: it holds a value the lab cannot read (a row of '{}')",
            self.db,
            self.shown,
            sql.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }
}

impl Sql for Db {
    fn db(&self) -> &'static str {
        self.db
    }

    fn shown(&self) -> &str {
        &self.shown
    }

    fn run(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Done> {
        self.sql().run(sql, args)
    }

    fn begin(&mut self) -> Result<()> {
        self.sql().begin()
    }

    fn commit(&mut self) -> Result<()> {
        self.sql().commit()
    }

    fn rollback(&mut self) {
        self.sql().rollback()
    }

    fn unreadable(&self, sql: &str) -> anyhow::Error {
        self.sql().unreadable(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::{count, refused, rows, within};

    #[test]
    fn a_statement_written_with_dollar_placeholders_runs_on_sqlite() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t(k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            .unwrap();
        let mut s = OnSqlite {
            conn: &conn,
            db: "t",
            shown: "memory",
        };
        let insert = "INSERT INTO t(k, n) VALUES ($1, $2)";
        within(&mut s, |s| s.run(insert, &[Val::Text("a"), Val::Int(5)])).unwrap();
        s.commit().unwrap();
        let e = s.run(insert, &[Val::Text("a"), Val::Int(6)]).unwrap_err();
        assert!(refused(&e), "{e}");
        let got = rows(
            &mut s,
            "SELECT k, n FROM t WHERE n = $1",
            &[Val::Int(5)],
            |r| Some((r[0].text()?, r[1].int()?)),
        )
        .unwrap();
        assert_eq!(got, [("a".to_string(), 5)]);
        assert_eq!(count(&mut s, "SELECT count(*) FROM t", &[]).unwrap(), 1);
        let updated = s
            .run(
                "UPDATE t SET n = $1 WHERE k = $2",
                &[Val::Int(9), Val::Text("a")],
            )
            .unwrap();
        assert_eq!(updated.changed, 1);
        // A value of another type than the row's reader expects: one line, exit 2.
        let e = rows(&mut s, "SELECT k FROM t", &[], |r| r[0].int()).unwrap_err();
        assert_eq!(fail::exit_code(&e), 2);
        assert!(e
            .to_string()
            .contains("t database memory is corrupt or foreign"));
    }
}
