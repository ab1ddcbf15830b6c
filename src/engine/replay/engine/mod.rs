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
mod window;

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
    /// Under power loss: the states a cut may take each file back to.
    windows: window::Windows,
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

    /// A power-loss run: from now on, each file's states between cuts are kept.
    pub fn record_windows(&mut self) {
        self.windows.on = true;
        self.open_window();
    }

    /// A cut was made: what it may take back starts from here.
    pub fn open_window(&mut self) {
        let current = self
            .dbs
            .iter_mut()
            .map(|(f, m)| (f.clone(), window::image_of(&mut m.conn)))
            .collect();
        self.windows.open(current);
    }

    /// `file` committed: under power loss, a state a later cut may take it back to.
    pub fn committed(&mut self, file: &str) {
        if let (true, Some(m)) = (self.windows.on, self.dbs.get_mut(file)) {
            let image = window::image_of(&mut m.conn);
            self.windows.committed(file, image);
        }
    }

    /// After a cut that changed `file`: take it back to the latest state of this window
    /// that `holds` accepts (given that state's logical digest, None for no file; a file
    /// with nothing in it is tried both ways). How many commits it takes back, or None when
    /// no state is accepted (the file is left as it is).
    pub fn roll_back(&mut self, file: &str, holds: &dyn Fn(Option<&str>) -> bool) -> Option<usize> {
        let mut chosen = None;
        for (back, image) in self.windows.candidates(file) {
            let digest = window::load(image)
                .map_err(anyhow::Error::from)
                .and_then(|c| crate::engine::files::logical_sha256_conn(&c))
                .ok();
            let absent = image.is_none() && holds(None);
            if absent || digest.as_deref().is_some_and(|d| holds(Some(d))) {
                chosen = Some((back, image.clone(), absent));
                break;
            }
        }
        let (back, image, absent) = chosen?;
        self.dbs.remove(file);
        if absent {
            return Some(back);
        }
        self.ensure(file).ok()?;
        if let (Some(bytes), Some(m)) = (image, self.dbs.get_mut(file)) {
            m.conn
                .deserialize_read_exact(rusqlite::MAIN_DB, &bytes[..], bytes.len(), false)
                .ok()?;
        }
        Some(back)
    }

    /// Whether `file` holds nothing: no file, or no table and no tag (a database whose
    /// creation a power cut took, which a reader reads as an empty one of its kind).
    pub fn holds_nothing(&self, file: &str) -> bool {
        let Some(m) = self.dbs.get(file) else {
            return true;
        };
        let count = |sql: &str| {
            m.conn
                .query_row(sql, [], |r| r.get::<_, i64>(0))
                .unwrap_or(1)
        };
        count("SELECT count(*) FROM sqlite_schema") == 0 && count("PRAGMA application_id") == 0
    }

    /// `file` as the store creates a database of `schema`'s kind: its tables and its tag.
    pub fn create(&mut self, file: &str, schema: &crate::store::Schema) {
        if self.ensure(file).is_ok() {
            let m = self.dbs.get_mut(file).expect("ensured");
            let _ = m.conn.execute_batch(schema.ddl);
            let _ = m.conn.execute_batch(&format!(
                "PRAGMA application_id={}; PRAGMA user_version={}",
                crate::store::APPLICATION_ID,
                schema.user_version
            ));
        }
    }

    /// The connection of `file`, taken out of the store.
    pub fn take(&mut self, file: &str) -> Option<Connection> {
        self.dbs.remove(file).map(|m| m.conn)
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
            if store.ensure(&file).is_err() {
                continue;
            }
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
