//! A role's PostgreSQL database on the stack: found by logical name in `stack.json`, connected
//! with bounded waits, its schema created or checked, every statement traced.
//!
//! Statements are written with `$N` placeholders and run as the text the trace prints: the
//! values are rendered as SQL literals (`'text'` with quotes doubled, integers, `NULL`) and
//! the whole statement goes to the server as a simple query. So the `SQL <db> …` line is
//! exactly what PostgreSQL ran, and, since every statement of the lab is also valid SQLite,
//! exactly what the audit's replay runs on SQLite.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Result;
use postgres::{Client, NoTls, SimpleQueryMessage};

use crate::fail;
use crate::out;
use crate::store::{trace_line, trace_on, Schema};

/// How long a connect may take before the role gives up (exit 69).
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;
/// The server cancels a statement that runs longer (or waits for a lock longer) than this.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;
pub const LOCK_TIMEOUT_MS: u64 = 5_000;

pub use crate::store::sql::Val;
use crate::store::sql::{Cell, Done, Refused, Sql};

/// Rows of a query, as text (`None` for NULL), and the count of rows a command changed.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Vec<Option<String>>>,
    pub changed: u64,
}

impl Outcome {
    /// The first column of the first row, as an integer (a count).
    pub fn int(&self) -> i64 {
        self.rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

/// How a session behaves beyond the pinned timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// Synchronous commits (the server's default, pinned anyway): a commit that returned is
    /// on disk.
    Durable,
    /// `synchronous_commit=off` for this session: a commit returns before its WAL is flushed
    /// (the `async-commit` variant).
    AsyncCommit,
    /// Every transaction read-only: a readback never writes.
    ReadOnly,
}

pub struct Pg {
    pub client: Client,
    /// Short name in traces and messages: `sender`, `receiver`.
    pub db: &'static str,
    /// The server's name of the database, for messages.
    pub shown: String,
    /// A reader's database that holds no table yet: every count is 0, nothing is queried.
    pub empty: bool,
    trace: bool,
}

/// The URL of logical database `name` in `stack.json` of `dir`.
pub fn url_of(dir: &Path, name: &str) -> Result<String> {
    let file = crate::stackfile::read(dir)?;
    file.postgres.get(name).cloned().ok_or_else(|| {
        fail::usage(format!(
            "{}: no PostgreSQL database named '{name}' (it has: {})",
            crate::stackfile::NAME,
            file.postgres.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })
}

/// Connect to logical database `name` as a store of kind `schema`; `create`: give an empty
/// database the schema (a writer), else read an empty one as empty (a reader).
pub fn open(name: &str, schema: &'static Schema, session: Session, create: bool) -> Result<Pg> {
    open_in(Path::new("."), name, schema, session, create)
}

/// As `open`, with `stack.json` in `dir` (explore's judge reads a case's stores from the
/// engine's process).
pub fn open_in(
    dir: &Path,
    name: &str,
    schema: &'static Schema,
    session: Session,
    create: bool,
) -> Result<Pg> {
    let url = url_of(dir, name)?;
    let mut config = postgres::Config::from_str(&url).map_err(|e| {
        fail::usage(format!(
            "{}: database '{name}' has no valid URL: {e}",
            crate::stackfile::NAME
        ))
    })?;
    let shown = config.get_dbname().unwrap_or(name).to_string();
    let mut options = format!(
        "-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={LOCK_TIMEOUT_MS} -c synchronous_commit={}",
        if session == Session::AsyncCommit { "off" } else { "on" }
    );
    if session == Session::ReadOnly {
        options.push_str(" -c default_transaction_read_only=on");
    }
    config
        .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .options(&options)
        .application_name("crashlab");
    let client = config.connect(NoTls).map_err(|e| {
        fail::unavailable(format!(
            "{} database {shown}: cannot connect: {}",
            schema.db,
            one_line(&e)
        ))
    })?;
    let mut pg = Pg {
        client,
        db: schema.db,
        shown,
        empty: false,
        // A role traces (unless --no-trace); explore's judge reads without a trace.
        trace: trace_on() && dir == Path::new("."),
    };
    let empty = pg.check_schema(schema)?;
    if empty && create {
        pg.create_schema(schema)?;
    }
    pg.empty = empty && !create;
    Ok(pg)
}

/// The server's own word that it is going away: SQLSTATE class 57P (a backend told to end,
/// `terminating connection due to unexpected postmaster exit` when its postmaster was
/// killed) or class 08 (the connection failed).
pub fn server_gone(e: &postgres::Error) -> bool {
    e.code()
        .is_some_and(|c| c.code().starts_with("57P") || c.code().starts_with("08"))
}

/// One line of a server error: its message (and detail), never a multi-line dump.
pub fn one_line(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `sql` with each `$N` replaced by the literal of `args[N-1]`.
pub fn render(sql: &str, args: &[Val<'_>]) -> String {
    let mut text = String::with_capacity(sql.len() + 16 * args.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' || !chars.peek().is_some_and(char::is_ascii_digit) {
            text.push(c);
            continue;
        }
        let mut n = 0usize;
        while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            n = n * 10 + d as usize;
            chars.next();
        }
        assert!(n >= 1 && n <= args.len(), "placeholder ${n} has a value");
        match args[n - 1] {
            Val::Null => text.push_str("NULL"),
            Val::Int(v) => text.push_str(&v.to_string()),
            Val::Text(s) => {
                text.push('\'');
                text.push_str(&s.replace('\'', "''"));
                text.push('\'');
            }
        }
    }
    text
}

impl Pg {
    /// Run one statement with its values bound, traced.
    pub fn run(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Outcome, postgres::Error> {
        let text = render(sql, args);
        if self.trace {
            out::line(&trace_line(self.db, &text));
        }
        let mut outcome = Outcome::default();
        for message in self.client.simple_query(&text)? {
            match message {
                SimpleQueryMessage::Row(row) => outcome.rows.push(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(n) => outcome.changed = n,
                _ => {}
            }
        }
        Ok(outcome)
    }

    /// A server error as the role's one line: a server that went away or cannot be reached is
    /// unavailable (69), anything else a failure of this database (1).
    pub fn explain(&self, e: postgres::Error) -> anyhow::Error {
        let text = format!("{} database {}: {}", self.db, self.shown, one_line(&e));
        if e.is_closed() || e.as_db_error().is_none() || server_gone(&e) {
            fail::unavailable(text)
        } else {
            fail::failed(text)
        }
    }

    /// `Ok(true)`: the database holds no table (ours to create, or empty to a reader).
    /// A database with other tables, or ours without a column, is refused (exit 2). This
    /// look at the catalog is not traced: it changes nothing and is not lab state.
    fn check_schema(&mut self, schema: &Schema) -> Result<bool> {
        let rows = self
            .client
            .query(
                "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()",
                &[],
            )
            .map_err(|e| fail::unavailable(format!("{} database {}: {}", self.db, self.shown, one_line(&e))))?;
        if rows.is_empty() {
            return Ok(true);
        }
        let found: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut problems: Vec<String> = Vec::new();
        for (table, columns) in schema.tables {
            for column in *columns {
                if !found.iter().any(|(t, c)| t == table && c == column) {
                    problems.push(format!("no {table}.{column}"));
                }
            }
        }
        for (table, _) in &found {
            let ours = schema.tables.iter().any(|(t, _)| t == table);
            let named = format!("table {table} is not a crashlab {} table", self.db);
            if !ours && !problems.contains(&named) {
                problems.push(named);
            }
        }
        if problems.is_empty() {
            return Ok(false);
        }
        problems.truncate(4);
        Err(fail::usage(format!(
            "{} database {} has a foreign schema ({}); expected a crashlab {} database",
            self.db,
            self.shown,
            problems.join("; "),
            self.db
        )))
    }

    /// The DDL in one transaction (PostgreSQL's DDL is transactional), traced statement by
    /// statement as the SQLite roles' is.
    fn create_schema(&mut self, schema: &Schema) -> Result<()> {
        let result = (|| {
            self.run("BEGIN", &[])?;
            for statement in schema
                .ddl
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                self.run(statement, &[])?;
            }
            self.run("COMMIT", &[])
        })();
        result.map(|_| ()).map_err(|e| self.explain(e))
    }

    /// Roll back after a failed statement; the connection may be gone already.
    pub fn rollback(&mut self) {
        let _ = self.run("ROLLBACK", &[]);
    }
}

/// PostgreSQL's SQLSTATE of a unique or primary-key violation.
const UNIQUE_VIOLATION: &str = "23505";

/// A database as a `Sql` store: the same statements as on SQLite, its rows as text.
impl Sql for Pg {
    fn db(&self) -> &'static str {
        self.db
    }

    fn shown(&self) -> &str {
        &self.shown
    }

    fn run(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Done> {
        match Pg::run(self, sql, args) {
            Ok(outcome) => Ok(Done {
                rows: outcome
                    .rows
                    .into_iter()
                    .map(|r| {
                        r.into_iter()
                            .map(|v| v.map_or(Cell::Null, Cell::Text))
                            .collect()
                    })
                    .collect(),
                changed: outcome.changed,
            }),
            Err(e) => {
                let unique = e.code().is_some_and(|s| s.code() == UNIQUE_VIOLATION);
                let line = self.explain(e);
                match unique {
                    true => Err(anyhow::Error::new(Refused(line.to_string()))),
                    false => Err(line),
                }
            }
        }
    }

    fn begin(&mut self) -> Result<()> {
        Sql::run(self, "BEGIN", &[]).map(drop)
    }

    fn commit(&mut self) -> Result<()> {
        Sql::run(self, "COMMIT", &[]).map(drop)
    }

    fn rollback(&mut self) {
        Pg::rollback(self)
    }

    fn unreadable(&self, sql: &str) -> anyhow::Error {
        fail::failed(format!(
            "{} database {}: a row of '{sql}' the lab cannot read",
            self.db, self.shown
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_literals_and_quotes_are_doubled() {
        let sql = "INSERT INTO t(a, b, c) VALUES ($1, $2, $10)";
        let args: Vec<Val> = (1..=10)
            .map(|i| {
                if i == 2 {
                    Val::Text("it's")
                } else {
                    Val::Int(i)
                }
            })
            .collect();
        assert_eq!(
            render(sql, &args),
            "INSERT INTO t(a, b, c) VALUES (1, 'it''s', 10)"
        );
        assert_eq!(render("SELECT 1", &[]), "SELECT 1");
    }
}
