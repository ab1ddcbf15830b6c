//! The replayer: traced statements run against fresh in-memory databases, one per database
//! file, honouring transaction boundaries.
//!
//! A transaction's statements are held back until its `COMMIT` or `ROLLBACK` line and then
//! run as one unit. So the in-memory database always holds committed state, which is what
//! any other process reading the file saw (WAL: a reader sees the last commit, never another
//! connection's open transaction), and a process that ends inside a transaction has its
//! statements run and rolled back (its uncommitted work is discarded; what they did is
//! still recorded for the checks). Writers cannot interleave inside a transaction: every
//! role starts its writes with `BEGIN IMMEDIATE`, which holds the file's write lock to the
//! end of the transaction.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::Connection;

use super::trace::{self, Kind};

/// Rows kept per statement (counts stay exact beyond it): a lab statement returns a handful.
pub const ROWS_MAX: usize = 1_000;
/// Changed rows read back per transaction.
pub const TOUCHED_MAX: usize = 10_000;

/// One in-memory database standing for one file.
struct Memory {
    conn: Connection,
    /// (table, rowid) of every row a statement changed since the unit began.
    touched: Arc<Mutex<Vec<(String, i64)>>>,
    foreign_keys: bool,
}

/// The replayed databases of one work directory, by file name.
#[derive(Default)]
pub struct Store {
    dbs: BTreeMap<String, Memory>,
}

impl Store {
    /// The file exists from the first statement any process ran on it.
    pub fn ensure(&mut self, file: &str) -> rusqlite::Result<()> {
        if self.dbs.contains_key(file) {
            return Ok(());
        }
        let mut conn = Connection::open_in_memory()?;
        let touched: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
        let sink = Arc::clone(&touched);
        conn.update_hook(Some(
            move |_: rusqlite::hooks::Action, _: &str, table: &str, rowid: i64| {
                let mut rows = sink.lock().unwrap_or_else(|p| p.into_inner());
                if rows.len() < TOUCHED_MAX {
                    rows.push((table.to_string(), rowid));
                }
            },
        ))?;
        self.dbs.insert(
            file.to_string(),
            Memory {
                conn,
                touched,
                foreign_keys: false,
            },
        );
        Ok(())
    }

    pub fn conn(&self, file: &str) -> Option<&Connection> {
        self.dbs.get(file).map(|m| &m.conn)
    }
}

/// What one statement did in the replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub error: Option<String>,
    /// Rows it inserted, updated or deleted.
    pub changes: u64,
    /// Rows it returned (a SELECT, a RETURNING clause), at most `ROWS_MAX`.
    pub rows: Vec<Vec<Value>>,
    /// The rowid an INSERT that changed a row gave it.
    pub rowid: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Committed,
    RolledBack,
    /// The process ended inside the transaction: nothing of it counts.
    Discarded,
    /// The COMMIT itself failed in the replay (and was rolled back).
    Failed(String),
}

/// A row a committed unit changed, as it stood after the commit (`None`: deleted).
#[derive(Debug, Clone, PartialEq)]
pub struct Touched {
    pub table: String,
    pub rowid: i64,
    pub row: Option<Vec<Value>>,
}

/// One transaction (or one autocommit statement) of one process on one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub file: String,
    /// The BEGIN line; `None` for an autocommit statement.
    pub begin: Option<usize>,
    /// The COMMIT or ROLLBACK line, the statement's own line, or the process's end.
    pub end_line: usize,
    pub end: End,
    pub statements: Vec<usize>,
    pub touched: Vec<Touched>,
    /// It ran DDL or set `application_id` / `user_version`: a schema being created.
    pub schema: bool,
    pub writes: bool,
}

struct Tx {
    begin: usize,
    statements: Vec<(usize, String, Kind)>,
    /// BEGINs met while this transaction was open (another connection of the same process
    /// waiting for the write lock); each starts when this one ends.
    waiting: usize,
}

/// One process's replay: its open transactions and what each statement and unit did.
#[derive(Default)]
pub struct Session {
    open: BTreeMap<String, Tx>,
    foreign_keys: BTreeMap<String, bool>,
    pub outcomes: BTreeMap<usize, Outcome>,
    pub units: Vec<Unit>,
    /// Lines of a BEGIN met inside an open transaction of the same process and file.
    pub interleaved: Vec<usize>,
}

impl Session {
    /// Replay one traced statement of this process. Returns true when it completed a commit
    /// that may have changed content (a COMMIT, or an autocommit write).
    pub fn feed(&mut self, store: &mut Store, line: usize, file: &str, sql: &str) -> bool {
        if store.ensure(file).is_err() {
            self.fail(line, "an in-memory database could not be opened");
            return false;
        }
        let kind = trace::classify(sql);
        match kind {
            Kind::Comment | Kind::Connection => false,
            Kind::ForeignKeys(on) => {
                self.foreign_keys.insert(file.to_string(), on);
                false
            }
            Kind::Begin => {
                match self.open.get_mut(file) {
                    Some(tx) => {
                        tx.waiting += 1;
                        self.interleaved.push(line);
                    }
                    None => {
                        self.open.insert(
                            file.to_string(),
                            Tx {
                                begin: line,
                                statements: Vec::new(),
                                waiting: 0,
                            },
                        );
                    }
                }
                false
            }
            Kind::Commit | Kind::Rollback => {
                let Some(tx) = self.open.remove(file) else {
                    let verb = if kind == Kind::Commit {
                        "commit"
                    } else {
                        "rollback"
                    };
                    self.fail(line, &format!("cannot {verb} - no transaction is active"));
                    return false;
                };
                let waiting = tx.waiting;
                let end = self.run_unit(store, file, Some(tx.begin), tx.statements, line, kind);
                if waiting > 0 {
                    self.open.insert(
                        file.to_string(),
                        Tx {
                            begin: line,
                            statements: Vec::new(),
                            waiting: waiting - 1,
                        },
                    );
                }
                end == Some(End::Committed)
            }
            Kind::Read | Kind::Write => {
                if let Some(tx) = self.open.get_mut(file) {
                    tx.statements.push((line, sql.to_string(), kind));
                    return false;
                }
                let statement = vec![(line, sql.to_string(), kind)];
                let end = self.run_unit(store, file, None, statement, line, Kind::Commit);
                kind == Kind::Write && end == Some(End::Committed)
            }
        }
    }

    /// The process ended: every transaction still open is run and rolled back.
    pub fn end(&mut self, store: &mut Store, end_line: usize) {
        let open = std::mem::take(&mut self.open);
        for (file, tx) in open {
            self.run_unit(
                store,
                &file,
                Some(tx.begin),
                tx.statements,
                end_line,
                Kind::Comment,
            );
        }
    }

    /// True while this process has a transaction open on `file`.
    #[cfg(test)]
    pub fn in_transaction(&self, file: &str) -> bool {
        self.open.contains_key(file)
    }

    fn fail(&mut self, line: usize, error: &str) {
        self.outcomes.insert(
            line,
            Outcome {
                error: Some(error.to_string()),
                ..Outcome::default()
            },
        );
    }

    /// Run statements as one unit ending in `how` (Commit, Rollback, or anything else for a
    /// discard); records every outcome and the unit. `None` for an autocommit read.
    fn run_unit(
        &mut self,
        store: &mut Store,
        file: &str,
        begin: Option<usize>,
        statements: Vec<(usize, String, Kind)>,
        end_line: usize,
        how: Kind,
    ) -> Option<End> {
        let wants = *self.foreign_keys.get(file).unwrap_or(&false);
        let memory = store
            .dbs
            .get_mut(file)
            .expect("ensured before any statement");
        if memory.foreign_keys != wants {
            // Outside any transaction here, where the pragma takes effect.
            let _ = memory.conn.execute_batch(if wants {
                "PRAGMA foreign_keys=ON"
            } else {
                "PRAGMA foreign_keys=OFF"
            });
            memory.foreign_keys = wants;
        }
        memory
            .touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let explicit = begin.is_some();
        if explicit {
            if let Err(e) = memory.conn.execute_batch("BEGIN") {
                self.fail(end_line, &e.to_string());
                return None;
            }
        }
        let autocommit_read = !explicit && statements.iter().all(|(_, _, k)| *k == Kind::Read);
        let mut lines = Vec::with_capacity(statements.len());
        let mut schema = false;
        let mut writes = false;
        for (line, sql, kind) in &statements {
            let outcome = run(&memory.conn, sql);
            schema |= *kind == Kind::Write && is_schema(sql);
            writes |= *kind == Kind::Write;
            self.outcomes.insert(*line, outcome);
            lines.push(*line);
        }
        let end = if !explicit {
            match &self.outcomes[&end_line].error {
                None => End::Committed,
                Some(e) => End::Failed(e.clone()),
            }
        } else if memory.conn.is_autocommit() {
            // A statement's error resolution already ended the transaction.
            let e = "the transaction was already rolled back by a failed statement".to_string();
            if how == Kind::Commit {
                self.fail(end_line, &e);
            }
            End::Failed(e)
        } else {
            match how {
                Kind::Commit => match memory.conn.execute_batch("COMMIT") {
                    Ok(()) => End::Committed,
                    Err(e) => {
                        let _ = memory.conn.execute_batch("ROLLBACK");
                        self.fail(end_line, &e.to_string());
                        End::Failed(e.to_string())
                    }
                },
                Kind::Rollback => {
                    let _ = memory.conn.execute_batch("ROLLBACK");
                    End::RolledBack
                }
                _ => {
                    let _ = memory.conn.execute_batch("ROLLBACK");
                    End::Discarded
                }
            }
        };
        if autocommit_read {
            return None;
        }
        let touched = if end == End::Committed {
            read_touched(memory)
        } else {
            Vec::new()
        };
        self.units.push(Unit {
            file: file.to_string(),
            begin,
            end_line,
            end: end.clone(),
            statements: lines,
            touched,
            schema,
            writes,
        });
        Some(end)
    }
}

fn is_schema(sql: &str) -> bool {
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

fn read_touched(memory: &Memory) -> Vec<Touched> {
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
        Value::Blob(b) => crate::outbox::model::hex(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(store: &Store, file: &str, sql: &str) -> i64 {
        store
            .conn(file)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    }

    fn setup(store: &mut Store, session: &mut Session) {
        for (i, sql) in [
            "BEGIN IMMEDIATE",
            "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER NOT NULL CHECK (v > 0));",
            "COMMIT",
        ]
        .iter()
        .enumerate()
        {
            session.feed(store, i, "a.db", sql);
        }
    }

    #[test]
    fn a_transaction_counts_only_at_its_commit_and_a_rollback_never() {
        let mut store = Store::default();
        let mut p = Session::default();
        setup(&mut store, &mut p);
        assert!(!p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE"));
        assert!(!p.feed(&mut store, 11, "a.db", "INSERT INTO t VALUES ('x', 1)"));
        // Another process reads committed state only.
        let mut reader = Session::default();
        reader.feed(&mut store, 0, "a.db", "SELECT count(*) FROM t");
        assert_eq!(reader.outcomes[&0].rows, vec![vec![Value::Integer(0)]]);
        assert!(p.feed(&mut store, 12, "a.db", "COMMIT"));
        assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 1);
        assert_eq!(p.outcomes[&11].changes, 1);
        assert_eq!(p.outcomes[&11].rowid, Some(1));
        let unit = p.units.last().unwrap();
        assert_eq!(unit.end, End::Committed);
        assert_eq!(unit.touched.len(), 1);
        assert_eq!(
            unit.touched[0].row,
            Some(vec![Value::Text("x".into()), Value::Integer(1)])
        );
        p.feed(&mut store, 13, "a.db", "BEGIN IMMEDIATE");
        p.feed(&mut store, 14, "a.db", "INSERT INTO t VALUES ('y', 2)");
        assert!(!p.feed(&mut store, 15, "a.db", "ROLLBACK"));
        assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 1);
        assert_eq!(p.units.last().unwrap().end, End::RolledBack);
        assert_eq!(p.outcomes[&14].changes, 1, "what it did is still recorded");
    }

    #[test]
    fn a_process_that_ends_inside_a_transaction_is_discarded() {
        let mut store = Store::default();
        let mut p = Session::default();
        setup(&mut store, &mut p);
        p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE");
        p.feed(&mut store, 11, "a.db", "INSERT INTO t VALUES ('x', 1)");
        assert!(p.in_transaction("a.db"));
        p.end(&mut store, 12);
        assert!(!p.in_transaction("a.db"));
        assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 0);
        assert_eq!(p.units.last().unwrap().end, End::Discarded);
    }

    #[test]
    fn failed_statements_fail_in_the_replay_too() {
        let mut store = Store::default();
        let mut p = Session::default();
        setup(&mut store, &mut p);
        p.feed(&mut store, 10, "a.db", "INSERT INTO t VALUES ('x', 1)");
        p.feed(&mut store, 11, "a.db", "BEGIN IMMEDIATE");
        p.feed(&mut store, 12, "a.db", "INSERT INTO t VALUES ('x', 5)");
        p.feed(&mut store, 13, "a.db", "INSERT INTO t VALUES ('z', -1)");
        p.feed(&mut store, 14, "a.db", "ROLLBACK");
        let dup = p.outcomes[&12].error.as_deref().unwrap();
        assert!(dup.contains("UNIQUE"), "{dup}");
        let check = p.outcomes[&13].error.as_deref().unwrap();
        assert!(check.contains("CHECK"), "{check}");
        assert_eq!(count(&store, "a.db", "SELECT sum(v) FROM t"), 1);
        // COMMIT with nothing open fails as SQLite would.
        p.feed(&mut store, 15, "a.db", "COMMIT");
        assert!(p.outcomes[&15].error.is_some());
    }

    #[test]
    fn a_begin_inside_an_open_transaction_waits_for_it() {
        let mut store = Store::default();
        let mut p = Session::default();
        setup(&mut store, &mut p);
        p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE");
        p.feed(&mut store, 11, "a.db", "BEGIN IMMEDIATE");
        p.feed(&mut store, 12, "a.db", "INSERT INTO t VALUES ('x', 1)");
        assert!(p.feed(&mut store, 13, "a.db", "COMMIT"));
        assert_eq!(p.interleaved, vec![11]);
        assert!(p.in_transaction("a.db"), "the waiting BEGIN starts now");
        p.feed(&mut store, 14, "a.db", "INSERT INTO t VALUES ('y', 2)");
        assert!(p.feed(&mut store, 15, "a.db", "COMMIT"));
        assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 2);
    }

    #[test]
    fn connection_pragmas_are_skipped_and_content_pragmas_kept() {
        let mut store = Store::default();
        let mut p = Session::default();
        p.feed(&mut store, 0, "a.db", "PRAGMA journal_mode=wal");
        p.feed(&mut store, 1, "a.db", "PRAGMA query_only=ON");
        assert!(p.feed(&mut store, 2, "a.db", "PRAGMA user_version=7"));
        assert_eq!(count(&store, "a.db", "PRAGMA user_version"), 7);
        assert!(!p.outcomes.contains_key(&0));
        p.feed(&mut store, 3, "a.db", "PRAGMA foreign_keys=ON");
        p.feed(
            &mut store,
            4,
            "a.db",
            "CREATE TABLE p(id INTEGER PRIMARY KEY)",
        );
        p.feed(
            &mut store,
            5,
            "a.db",
            "CREATE TABLE c(id INTEGER REFERENCES p(id))",
        );
        p.feed(&mut store, 6, "a.db", "INSERT INTO c VALUES (9)");
        assert!(p.outcomes[&6]
            .error
            .as_deref()
            .unwrap()
            .contains("FOREIGN KEY"));
        // Another process that never turned foreign keys on writes the same row freely.
        let mut q = Session::default();
        q.feed(&mut store, 0, "a.db", "INSERT INTO c VALUES (9)");
        assert_eq!(q.outcomes[&0].error, None);
    }
}
