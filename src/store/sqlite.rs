//! The SQLite store of the roles: open a file with pinned pragmas, create or check the
//! schema, trace every statement.
//!
//! Every connection sets the same pragmas explicitly (the contract of the evidence), so a
//! run never depends on a library default. Journal mode is WAL: a crash before a commit
//! leaves frames no reader will see, and a read-only reader needs no hot-journal rollback.
//!
//! A 0-byte file is an empty database of the kind the role expects, for every role: SQLite
//! itself reads a 0-byte file as a database with nothing in it, and a role killed between
//! creating its file and its first commit leaves exactly that, which its restart and any
//! readback in between must take as "nothing committed yet". A writing role gives it the
//! schema, as it does a new file; a reading role reads it as that schema with no rows and
//! leaves it untouched, 0 bytes. A file with any byte in it is judged by its contents.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::config::DbConfig;
use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::{Connection, OpenFlags};

use super::explain::explain;
use super::{trace_line, trace_on, Access, Schema};
use crate::fail;
use crate::out;

/// `PRAGMA application_id` of every crashlab database: "CRLB".
pub const APPLICATION_ID: i64 = 0x4352_4c42;

/// Busy timeout of every connection: long enough for a racing writer's commit, bounded.
pub const BUSY_TIMEOUT_MS: u64 = 5_000;

/// The pragmas pinned on every connection, in the order they are set.
pub const PRAGMAS: &[(&str, &str)] = &[
    ("journal_mode", "wal"),
    ("synchronous", "full"),
    ("foreign_keys", "on"),
    ("busy_timeout", "5000"),
];

pub struct Db {
    pub conn: Connection,
    pub db: &'static str,
    /// The file as messages name it.
    pub shown: String,
}

/// Open `path` as a database of kind `schema`, pin the pragmas, trace to stdout, check schema.
pub fn open(path: &Path, schema: &'static Schema, access: Access) -> Result<Db> {
    open_traced(path, schema, access, trace_on())
}

/// As `open`, with the trace optional (the harness reads files without printing).
pub fn open_traced(
    path: &Path,
    schema: &'static Schema,
    access: Access,
    trace: bool,
) -> Result<Db> {
    // Read before the file is touched: a bad profile name leaves nothing behind.
    let profile = crate::power::profile::current()?;
    let shown = path.display();
    let exists = path.exists();
    if !exists && !matches!(access, Access::WriteCreate) {
        return Err(fail::usage(format!(
            "{} database {shown} does not exist",
            schema.db
        )));
    }
    if exists && !path.is_file() {
        return Err(fail::usage(format!(
            "{} database {shown} is not a file",
            schema.db
        )));
    }
    // A 0-byte file with frames beside it is no state a role leaves (a WAL exists only once
    // the file has its header), and SQLite would delete that WAL on open: refused, both
    // files left as they are.
    if exists && is_empty_file(path) && wal_len(path) > 0 {
        return Err(fail::usage(format!(
            "{} database {shown} is 0 bytes with a non-empty {shown}-wal beside it; refused, both left as they are",
            schema.db
        )));
    }
    let flags = match access {
        Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        Access::WriteCreate => {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        }
    };
    let read_only = matches!(access, Access::Read);
    // Under a power-loss run every connection goes through the shim VFS (crate::power).
    let mut conn = if read_only && is_empty_file(path) {
        empty_of_kind(schema).map_err(|e| explain(e, schema.db, &shown.to_string()))?
    } else {
        match crate::power::vfs_name()? {
            Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
            None => Connection::open_with_flags(path, flags),
        }
        .map_err(|e| explain(e, schema.db, &shown.to_string()))?
    };
    if trace {
        install_trace(&mut conn, schema.db)?;
    }
    let shown = shown.to_string();
    // The schema is checked before any pragma that writes (journal_mode=wal rewrites the
    // header), so a foreign file is refused byte for byte as it was.
    conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(|e| explain(e, schema.db, &shown))?;
    // Until the file is known to be ours, closing must not checkpoint a WAL into it: a
    // refused file stays byte for byte as it was (its -shm index aside).
    if !read_only {
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| explain(e, schema.db, &shown))?;
    }
    let empty = check_schema(&conn, schema, &shown)?;
    if empty && read_only && !has_header(path) {
        // Bytes that are not even a SQLite header (SQLite reads a file shorter than a page
        // as holding no pages): no database anyone created, refused as before.
        return Err(fail::usage(format!(
            "{} database {shown} has a foreign schema (no SQLite header, no tables); expected a crashlab {} database",
            schema.db, schema.db
        )));
    }
    if empty && read_only {
        // A SQLite file with no tables and no tag holds nothing: a database whose creation
        // never reached the disk (a power cut took its schema). A reader sees it empty, as
        // it sees a 0-byte file; a writer creates the schema in it.
        let mut conn = empty_of_kind(schema).map_err(|e| explain(e, schema.db, &shown))?;
        if trace {
            install_trace(&mut conn, schema.db)?;
        }
        return Ok(Db {
            conn,
            db: schema.db,
            shown,
        });
    }
    // A corrupt page (a table's root, an index) is refused here, before anything is written
    // or counted: an index can answer count(*) while the table it indexes is unreadable.
    quick_check(&conn, schema.db, &shown)?;
    // A file SQLite could open only for reading (write-protected, immutable, on a read-only
    // mount) is refused before the role writes anything anywhere: the publisher would
    // otherwise commit a delivery into the queue and fail only when it marks the row sent.
    if !read_only
        && conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(|e| explain(e, schema.db, &shown))?
    {
        return Err(fail::usage(format!(
            "{} database {shown} is read-only (it cannot be written by this process)",
            schema.db
        )));
    }
    if !read_only {
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
            .map_err(|e| explain(e, schema.db, &shown))?;
    }
    pin_pragmas(&conn, read_only, &profile).map_err(|e| explain(e, schema.db, &shown))?;
    if empty {
        create_schema(&conn, schema).map_err(|e| explain(e, schema.db, &shown))?;
    }
    Ok(Db {
        conn,
        db: schema.db,
        shown,
    })
}

/// A file of 0 bytes: a database that was created and never written (see the module's
/// comment). `open_traced` refuses one with a non-empty `-wal` beside it before this counts.
pub fn is_empty_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == 0)
}

/// The file starts with SQLite's 16-byte header string.
fn has_header(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// The size of the `-wal` beside `path` (0 when there is none).
fn wal_len(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(Path::new(&wal)).map_or(0, |m| m.len())
}

/// What a reading role sees of an empty file: an in-memory database holding `schema` and no
/// rows, tagged as the file would be once a writing role had created it. The file itself is
/// never opened, so it stays 0 bytes.
fn empty_of_kind(schema: &Schema) -> rusqlite::Result<Connection> {
    let conn = Connection::open_in_memory()?;
    create_schema(&conn, schema)?;
    Ok(conn)
}

/// Open a file read-only when it exists; `None` when it does not (it is never created).
pub fn open_existing(path: &Path, schema: &'static Schema, trace: bool) -> Result<Option<Db>> {
    if !path.exists() {
        return Ok(None);
    }
    open_traced(path, schema, Access::Read, trace).map(Some)
}

/// Every row of `sql` on `db`, mapped; an error names the file.
pub fn rows<T>(
    db: &Db,
    sql: &str,
    path: &Path,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let shown = path.display().to_string();
    let explain = |e| explain(e, db.db, &shown);
    let mut stmt = db.conn.prepare(sql).map_err(explain)?;
    let result = stmt
        .query_map([], map)
        .and_then(|r| r.collect::<rusqlite::Result<Vec<T>>>())
        .map_err(explain)?;
    Ok(result)
}

/// The most problems `quick_check` is asked for: the first is enough to refuse the file.
const QUICK_CHECK_ROWS_MAX: u32 = 1;

/// `PRAGMA quick_check`: every page of every table and index is read and its b-tree checked
/// (not that indexes match their tables: that is integrity_check, far slower). One line
/// naming the file and the first problem when it is not `ok`.
fn quick_check(conn: &Connection, db: &str, shown: &str) -> Result<()> {
    let verdict: String = conn
        .query_row(
            &format!("PRAGMA quick_check({QUICK_CHECK_ROWS_MAX})"),
            [],
            |row| row.get(0),
        )
        .map_err(|e| explain(e, db, shown))?;
    if verdict != "ok" {
        return Err(fail::usage(format!(
            "{db} database {shown} is corrupt (quick_check: {})",
            verdict.replace('\n', " ")
        )));
    }
    Ok(())
}

/// The pinned pragmas; journal mode and synchronous come from the store profile (WAL and
/// FULL unless a power-loss variant asked for another).
fn pin_pragmas(
    conn: &Connection,
    read_only: bool,
    profile: &crate::power::profile::Profile,
) -> rusqlite::Result<()> {
    // A read-only connection cannot change the journal mode; it reads the file's own (WAL).
    if !read_only {
        let sql = format!("PRAGMA journal_mode={}", profile.journal_mode);
        let mode: String = conn.query_row(&sql, [], |row| row.get(0))?;
        debug_assert_eq!(mode, profile.journal_mode);
    } else {
        conn.execute_batch("PRAGMA query_only=ON")?;
    }
    for pragma in [
        &format!("PRAGMA synchronous={}", profile.synchronous.to_uppercase()),
        "PRAGMA foreign_keys=ON",
        "PRAGMA busy_timeout=5000",
    ] {
        conn.execute_batch(pragma)?;
    }
    Ok(())
}

/// Print every statement `conn` runs as a `SQL <db> …` line: the trace is the evidence.
fn install_trace(conn: &mut Connection, db: &'static str) -> Result<()> {
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT,
        Some(move |event: TraceEvent<'_>| {
            if let TraceEvent::Stmt(stmt, sql) = event {
                let text = stmt.expanded_sql().unwrap_or_else(|| sql.to_string());
                out::line(&trace_line(db, &text));
            }
        }),
    )
    .context("installing the SQL trace")
}

/// Check the file's tag and tables; `Ok(true)` when it holds nothing (no tables, no tag):
/// ours to create, or for a reader empty.
fn check_schema(conn: &Connection, schema: &Schema, shown: &str) -> Result<bool> {
    let (app, version, tables) = tag(conn).map_err(|e| explain(e, schema.db, shown))?;
    if app == 0 && version == 0 && tables.is_empty() {
        return Ok(true);
    }
    if app != APPLICATION_ID || version != schema.user_version {
        let found = if tables.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables {}", tables.join(", "))
        };
        return Err(fail::usage(format!(
            "{} database {shown} has a foreign schema (application_id {app}, user_version {version}, {found}); expected a crashlab {} database",
            schema.db, schema.db
        )));
    }
    for (table, columns) in schema.tables {
        let present = table_columns(conn, table).map_err(|e| explain(e, schema.db, shown))?;
        for column in *columns {
            if !present.iter().any(|c| c == column) {
                return Err(fail::usage(format!(
                    "{} database {shown} has a foreign schema: table {table} lacks column {column}",
                    schema.db
                )));
            }
        }
    }
    Ok(false)
}

fn tag(conn: &Connection) -> rusqlite::Result<(i64, i64, Vec<String>)> {
    let app: i64 = conn.query_row("PRAGMA application_id", [], |row| row.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((app, version, tables))
}

pub(super) fn table_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let columns = stmt
        .query_map([table], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(columns)
}

fn create_schema(conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
    // IMMEDIATE so two processes creating the same file at once serialize; the loser sees
    // the winner's tables on the re-check and leaves them alone.
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let (app, _, tables) = tag(conn)?;
    if app == 0 && tables.is_empty() {
        conn.execute_batch(schema.ddl)?;
        conn.execute_batch(&format!(
            "PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version={}",
            schema.user_version
        ))?;
    }
    conn.execute_batch("COMMIT")?;
    Ok(())
}

/// The version of the SQLite library built in, as the evidence records it.
pub fn sqlite_version() -> String {
    rusqlite::version().to_string()
}
