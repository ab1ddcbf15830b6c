//! A role's PostgreSQL session, found by logical name in the work directory's `stack.json`,
//! with every statement traced as `SQL <db> <statement>` exactly as it is run (values are
//! literals in the text, so the trace IS the statement). Statements of this lab are valid
//! SQLite with the same meaning, so the audit can replay them; the PostgreSQL-only calls
//! (the sequence, the transaction id, the snapshot's horizon) are run by `value` and printed
//! as their own lines (`SEQUENCE`, `XID`, `HORIZON`), never as SQL.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use postgres::{Client, NoTls, Row};

use crate::fail;
use crate::out;
use crate::stackfile;
use crate::store;

/// Bound of the TCP connect and the server's startup reply.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Bound of any one statement, and of any lock wait, on the server side.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;
/// A transaction left open longer than this is ended by the server: the bound of a writer
/// held by the pause nemesis (the harness continues it long before).
pub const IDLE_IN_TRANSACTION_MS: u64 = 300_000;
/// The longest message body accepted (bytes).
pub const BODY_BYTES_MAX: usize = 1_000;

/// One traced session on one logical database.
pub struct Pg {
    pub db: &'static str,
    client: Client,
    /// Off for the harness's own reads (explore judging a case): its stdout is no role's.
    traced: bool,
}

/// The URL of logical database `name` in `stack.json` in `dir`.
pub fn url_of(dir: &Path, name: &str) -> Result<String> {
    let file = stackfile::read(dir)?;
    file.postgres.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = file.postgres.keys().map(String::as_str).collect();
        fail::usage(format!(
            "{}: no database '{name}'; it names: {}",
            stackfile::NAME,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ))
    })
}

impl Pg {
    /// Connect to logical database `name` (the argv's value) as the store `db` of the trace.
    pub fn connect(db: &'static str, name: &str, role: &str) -> Result<Pg> {
        Pg::connect_in(Path::new("."), db, name, role, true)
    }

    /// Connect through the `stack.json` in `dir`, traced or not.
    pub fn connect_in(
        dir: &Path,
        db: &'static str,
        name: &str,
        role: &str,
        traced: bool,
    ) -> Result<Pg> {
        let url = url_of(dir, name)?;
        let mut config: postgres::Config = url.parse().map_err(|e| {
            fail::usage(format!(
                "{}: database '{name}': not a PostgreSQL URL: {e}",
                stackfile::NAME
            ))
        })?;
        config
            .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
            .application_name(&format!("crashlab {role}"))
            .options(&format!(
                "-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={STATEMENT_TIMEOUT_MS} -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
            ));
        let client = config.connect(NoTls).map_err(|e| {
            fail::unavailable(format!(
                "database '{name}' ({db}) at {}: {}",
                shown_url(&url),
                one_line(&e)
            ))
        })?;
        Ok(Pg { db, client, traced })
    }

    fn trace(&self, sql: &str) {
        if self.traced && store::trace_on() {
            out::line(&store::trace_line(self.db, sql));
        }
    }

    fn explain(&self, e: postgres::Error) -> anyhow::Error {
        let what = format!("{}: {}", self.db, one_line(&e));
        match e.is_closed() || e.as_db_error().is_none() {
            true => fail::unavailable(what),
            false => fail::failed(what),
        }
    }

    /// Run one traced statement; the rows it changed.
    pub fn exec(&mut self, sql: &str) -> Result<u64> {
        self.trace(sql);
        self.client.execute(sql, &[]).map_err(|e| self.explain(e))
    }

    /// `BEGIN`, `COMMIT`, `ROLLBACK`: traced, run as they are.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        self.trace(sql);
        self.client.batch_execute(sql).map_err(|e| self.explain(e))
    }

    /// Run one traced query.
    pub fn query(&mut self, sql: &str) -> Result<Vec<Row>> {
        self.trace(sql);
        self.client.query(sql, &[]).map_err(|e| self.explain(e))
    }

    /// A PostgreSQL-only value (`nextval`, `pg_current_xact_id`, the snapshot's xmin): run
    /// untraced, printed as `<word> <db> [<what>] <value>`; statements that use it carry it
    /// as a literal, so the trace replays on SQLite.
    pub fn value(&mut self, word: &str, what: &str, sql: &str) -> Result<i64> {
        let row = self
            .client
            .query_one(sql, &[])
            .map_err(|e| self.explain(e))?;
        let value: i64 = row.get(0);
        match what.is_empty() {
            true => out::line(&format!("{word} {} {value}", self.db)),
            false => out::line(&format!("{word} {} {what} {value}", self.db)),
        }
        Ok(value)
    }

    /// One text value, untraced: the harness's own look at the server (its boot time).
    pub fn text(&mut self, sql: &str) -> Result<String> {
        let row = self
            .client
            .query_one(sql, &[])
            .map_err(|e| self.explain(e))?;
        Ok(row.get(0))
    }

    /// Run a PostgreSQL-only statement untraced (the sequence's DDL); the caller prints it.
    pub fn ddl(&mut self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).map_err(|e| self.explain(e))
    }
}

/// A text literal: quotes doubled. Bodies are checked (`check_body`), so no line break or
/// control character ever reaches a statement.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A body may go into a traced statement: 1 to `BODY_BYTES_MAX` bytes, no control character.
pub fn check_body(body: &str) -> Result<()> {
    if body.is_empty() || body.len() > BODY_BYTES_MAX {
        return Err(fail::usage(format!(
            "--body must be 1 to {BODY_BYTES_MAX} bytes, got {}",
            body.len()
        )));
    }
    if let Some(c) = body.chars().find(|c| c.is_control()) {
        return Err(fail::usage(format!(
            "--body holds a control character ({:?}); one line of printable text is accepted",
            c
        )));
    }
    Ok(())
}

/// A URL without its password, for messages (one in its query is masked too).
fn shown_url(url: &str) -> String {
    let shown = match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    };
    crate::servers::postgres::redact(&shown)
}

/// A client error on one line, with the server's message when there is one.
fn one_line(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s = format!("{s}: {inner}");
                source = inner.source();
            }
            s
        }
    };
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_quoted_and_bodies_bounded_and_urls_shown_without_password() {
        assert_eq!(quote("it's"), "'it''s'");
        assert!(check_body("{\"order\":\"A\"}").is_ok());
        for bad in ["", "a\nb", &"x".repeat(BODY_BYTES_MAX + 1)] {
            let e = check_body(bad).unwrap_err();
            assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE, "{bad:?}");
        }
        assert_eq!(
            shown_url("postgres://u:secret@127.0.0.1:5/d"),
            "postgres://u@127.0.0.1:5/d"
        );
        assert_eq!(shown_url("postgres://u@h/d"), "postgres://u@h/d");
    }
}
