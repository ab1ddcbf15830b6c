//! A traced SQL store, whatever holds it: the statements a role writes once and runs on a
//! SQLite file or a PostgreSQL database alike. A statement names its values `$1`, `$2`, …
//! (PostgreSQL's placeholders; SQLite reads `$1` as a named parameter, numbered in order of
//! first use, so a statement lists them in that order). Every statement is traced as
//! `SQL <db> <statement with its values>` by the store that runs it.

use std::fmt;

use anyhow::Result;

/// A value bound to a `$N` placeholder.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Text(&'a str),
    Int(i64),
    Null,
}

/// One column of a row as the store gave it: SQLite's integer or text, PostgreSQL's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    /// A value the lab never writes (a real, a blob, text that is not UTF-8).
    Other,
}

impl Cell {
    /// An integer: SQLite's own, or PostgreSQL's text of one.
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(v) => Some(*v),
            Cell::Text(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// A text (never an integer's: a column of ids holds text).
    pub fn text(&self) -> Option<String> {
        match self {
            Cell::Text(t) => Some(t.clone()),
            _ => None,
        }
    }

    /// A text or NULL.
    pub fn maybe_text(&self) -> Option<Option<String>> {
        match self {
            Cell::Null => Some(None),
            other => other.text().map(Some),
        }
    }
}

/// What a statement gave: its rows, and how many rows it changed (a command's count).
#[derive(Debug, Default)]
pub struct Done {
    pub rows: Vec<Vec<Cell>>,
    pub changed: u64,
}

/// A store a role runs its transactions on. Errors are the store's one line (`explain`),
/// but for a row a constraint refused, which is `Refused`.
pub trait Sql {
    /// Its short name in traces and messages: `sender`, `queue`, `receiver`.
    fn db(&self) -> &'static str;
    /// Where it is, as messages name it: the file, or the server's name of the database.
    fn shown(&self) -> &str;
    /// Run one statement with its values bound, traced.
    fn run(&mut self, sql: &str, args: &[Val<'_>]) -> Result<Done>;
    /// Open a transaction that writes: `BEGIN IMMEDIATE` on SQLite (its write lock taken at
    /// once, so the transaction never fails half way for a lock), `BEGIN` on PostgreSQL.
    fn begin(&mut self) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    /// End the open transaction after a failure, if one is open; never fails (the
    /// connection may be gone already).
    fn rollback(&mut self);
    /// A row the lab cannot read (a value of another type than its schema's): bad input,
    /// one line naming the store (exit 2).
    fn unreadable(&self, sql: &str) -> anyhow::Error;
}

/// A statement a constraint refused (a key already taken): `Sql::run`'s error for it, so a
/// role can say what was refused where another error is the store's failure.
#[derive(Debug)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether a constraint refused the statement that failed.
pub fn refused(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Refused>().is_some()
}

/// Every row of `sql`, mapped; a row `map` cannot read is the store's `unreadable`.
pub fn rows<T>(
    store: &mut dyn Sql,
    sql: &str,
    args: &[Val<'_>],
    map: impl Fn(&[Cell]) -> Option<T>,
) -> Result<Vec<T>> {
    let done = store.run(sql, args)?;
    let mut out = Vec::with_capacity(done.rows.len());
    for row in &done.rows {
        out.push(map(row).ok_or_else(|| store.unreadable(sql))?);
    }
    Ok(out)
}

/// The integer in the first column of the first row (a count), 0 for none or NULL.
pub fn count(store: &mut dyn Sql, sql: &str, args: &[Val<'_>]) -> Result<i64> {
    let done = store.run(sql, args)?;
    match done.rows.first().and_then(|r| r.first()) {
        None | Some(Cell::Null) => Ok(0),
        Some(cell) => cell.int().ok_or_else(|| store.unreadable(sql)),
    }
}

/// Run `body` in a transaction that writes; a failure inside rolls it back and is returned.
/// The commit itself is the caller's: its crash points sit right before and after it.
pub fn within<T>(store: &mut dyn Sql, body: impl FnOnce(&mut dyn Sql) -> Result<T>) -> Result<T> {
    store.begin()?;
    body(&mut *store).inspect_err(|_| store.rollback())
}

#[cfg(test)]
mod tests {
    use crate::store::sql::{refused, Cell, Refused};

    #[test]
    fn cells_read_as_their_column_says() {
        assert_eq!(Cell::Int(7).int(), Some(7));
        assert_eq!(Cell::Text("42".into()).int(), Some(42));
        assert_eq!(Cell::Text("x".into()).int(), None);
        assert_eq!(Cell::Int(7).text(), None);
        assert_eq!(Cell::Null.maybe_text(), Some(None));
        assert_eq!(Cell::Other.maybe_text(), None);
        let e = anyhow::Error::new(Refused("sender database s.db: UNIQUE".into()));
        assert!(refused(&e));
        assert!(!refused(&anyhow::anyhow!("other")));
    }
}
