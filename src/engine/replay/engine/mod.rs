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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::Connection;

use super::trace::{self, Kind};

mod statement;
#[cfg(test)]
mod tests;

use statement::{is_schema, read_touched};
pub use statement::{run, text};

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
    /// The logical digest, kept until a unit runs on the file again: a search for a
    /// background process's prefix asks for it at every candidate.
    digest: RefCell<Option<String>>,
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
                digest: RefCell::new(None),
            },
        );
        Ok(())
    }

    pub fn conn(&self, file: &str) -> Option<&Connection> {
        self.dbs.get(file).map(|m| &m.conn)
    }

    /// The logical digest of a replayed file (`None`: no statement ran on it yet).
    pub fn digest(&self, file: &str) -> Option<String> {
        let memory = self.dbs.get(file)?;
        let mut cached = memory.digest.borrow_mut();
        let digest = cached.get_or_insert_with(|| {
            crate::engine::files::logical_sha256_conn(&memory.conn)
                .unwrap_or_else(|e| format!("(unreadable: {e:#})"))
        });
        Some(digest.clone())
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
        memory.digest.replace(None);
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
