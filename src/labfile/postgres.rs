//! A lab file's PostgreSQL stores. Each is a database of its own on the command's server
//! (private to the command, or the one `--pg-url` gives), made afresh from the store's schema
//! for every scenario run and dropped after it. Before each check step and at the end, its
//! tables are read back, in one snapshot, into a SQLite file in the run's directory
//! (`NAME.postgres.db`): the checks, the invariants and the audit read that copy as they read
//! a SQLite store, so the audit needs no server.

use std::cell::Cell;
use std::path::Path;

use anyhow::{Context, Result};

use super::lab::{StoreDef, UserLab};
use crate::engine::state::server::pg::{connect, ROWS_MAX};
use crate::fail;
use crate::servers::{self, names, Servers, Want};

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

/// The server of one command's runs.
pub struct Server {
    // Held for its drop, which stops a private server. Fields drop in this order: the server
    // before the directory that holds its files.
    _servers: Servers,
    admin_url: String,
    _dir: tempfile::TempDir,
    /// Scenario runs made so far: each run's databases are named for its number.
    runs: Cell<u64>,
    /// Random, drawn once: two crashlabs on one server (in other PID namespaces, the same
    /// pid) never name a database alike.
    tag: String,
}

impl Server {
    /// The server for `lab`'s PostgreSQL stores: private, or the one at `pg_url`. None when
    /// no store is on PostgreSQL; `--pg-url` is then refused (exit 2), not ignored.
    pub fn start(lab: &UserLab, pg_url: Option<&str>) -> Result<Option<Server>> {
        if !lab.stores.iter().any(|s| s.postgres) {
            return match pg_url {
                Some(_) => Err(fail::usage(
                    "--pg-url: the lab file has no PostgreSQL store".to_string(),
                )),
                None => Ok(None),
            };
        }
        // SIGINT while the server starts ends the start cleanly (exit 130), nothing left.
        crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
        // A lab file's steps crash roles, never the server: what it acknowledged stays
        // visible to every later session whether or not it reached the disk, so a private
        // server skips the flushes.
        let want = Want {
            postgres: true,
            pg_url,
            pg_settings: SETTINGS,
            ..Want::default()
        };
        // In memory where the machine has /dev/shm: a database made per run costs 10 ms
        // there against 200–350 ms on a disk, flushes off either way.
        let shm = Path::new("/dev/shm");
        let root = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => std::env::temp_dir(),
        };
        let dir = crate::owner::tempdir_in("servers", &root)
            .context("creating the servers' directory")?;
        let servers = Servers::start(&want, dir.path())?;
        let admin_url = servers.pg_url().expect("PostgreSQL was started");
        // The postmaster is this process's child, as the roles' orphans are: not a sweep's.
        if let Some(pid) = servers.pg_pid() {
            crate::engine::process::spare(pid);
        }
        let server = Server {
            _servers: servers,
            admin_url,
            _dir: dir,
            runs: Cell::new(0),
            tag: {
                use std::hash::{BuildHasher, Hasher};
                let random = std::collections::hash_map::RandomState::new()
                    .build_hasher()
                    .finish();
                format!("l{random:016x}")
            },
        };
        server.prepare_queries(lab)?;
        Ok(Some(server))
    }

    /// Prepare (not run) every check and invariant query on copies of freshly made stores,
    /// before any role runs: what `lab check` does on SQLite stores alone, which it cannot
    /// do without the server. A refused query is one line `FILE:LINE:COL`, exit 2. Where a
    /// store has no schema, its role makes the tables, and the queries meet them at run time.
    fn prepare_queries(&self, lab: &UserLab) -> Result<()> {
        if lab.stores.iter().any(|s| s.schema.is_none()) {
            return Ok(());
        }
        let dir = crate::owner::tempdir("check").context("making a directory to check in")?;
        drop(super::run::attach(dir.path(), &lab.stores, true)?);
        self.make(&lab.stores)?.read_back(dir.path(), &lab.stores)?;
        let conn = super::run::attach(dir.path(), &lab.stores, false)?;
        match super::check::refused_query(&conn, &lab.checks, &lab.invariants) {
            Some((at, e)) => Err(fail::usage(format!(
                "{}:{}: SQLite refuses the query on the stores' copies: {e}",
                lab.path.display(),
                super::check::line_col(&lab.text, at)
            ))),
            None => Ok(()),
        }
    }

    /// A fresh database for each PostgreSQL store of one scenario run, made from its schema.
    pub fn make(&self, stores: &[StoreDef]) -> Result<Made> {
        let run = self.runs.get() + 1;
        self.runs.set(run);
        let mut made = Made {
            admin_url: self.admin_url.clone(),
            databases: Vec::new(),
        };
        let mut admin = servers::postgres::admin(&self.admin_url)?;
        for (i, store) in stores.iter().enumerate().filter(|(_, s)| s.postgres) {
            let name = names::of(&format!("{}_{run}", self.tag), &format!("s{i}"))?;
            // The URL before the database: a URL that cannot name one makes nothing.
            let url = servers::postgres::database_url(&self.admin_url, &name)?;
            // Kept before it is made: a database made, whatever fails next, is dropped.
            made.databases
                .push((store.name.clone(), name.clone(), url.clone()));
            servers::postgres::create_database(&mut admin, &name)?;
            if let Some(schema) = &store.schema {
                let mut client = servers::postgres::admin(&url)?;
                client
                    .batch_execute(schema)
                    .with_context(|| format!("store '{}': its schema on PostgreSQL", store.name))?;
            }
        }
        Ok(made)
    }
}

/// One scenario run's databases; dropped with it.
pub struct Made {
    admin_url: String,
    /// (store, database, URL).
    databases: Vec<(String, String, String)>,
}

impl Made {
    /// The URL a role connects to for `store`: `{store.NAME}` in a command line.
    pub fn url(&self, store: &str) -> Option<&str> {
        self.databases
            .iter()
            .find(|(s, _, _)| s == store)
            .map(|(_, _, url)| url.as_str())
    }

    /// Read each PostgreSQL store's tables back into its SQLite file in `dir`, replacing the
    /// last copy.
    pub fn read_back(&self, dir: &Path, stores: &[StoreDef]) -> Result<()> {
        for store in stores.iter().filter(|s| s.postgres) {
            let url = self
                .url(&store.name)
                .expect("made with every PostgreSQL store");
            copy(url, &dir.join(&store.file)).with_context(|| {
                format!("store '{}': reading it back from PostgreSQL", store.name)
            })?;
        }
        Ok(())
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        if self.databases.is_empty() {
            return;
        }
        // A failure leaves a crashlab_ database on the server, which the next run of the same
        // name drops first; a private server goes with its directory anyway.
        if let Ok(mut admin) = servers::postgres::admin(&self.admin_url) {
            for (_, name, _) in &self.databases {
                let _ = servers::postgres::drop_database(&mut admin, name);
            }
        }
    }
}

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
fn copy(url: &str, file: &Path) -> Result<()> {
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
    for suffix in super::run::STORE_SUFFIXES {
        let path = format!("{}{suffix}", file.display());
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {path}"))
            }
            _ => {}
        }
    }
    let mut conn = rusqlite::Connection::open(file)?;
    // A fresh copy, written once: nothing to roll back or flush if this process dies halfway
    // (the file is made again before it is next read).
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
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
