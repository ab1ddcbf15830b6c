//! The logical digest of a SQLite database: content, not pages (in the spirit of SQLite's
//! dbhash). The schema, then every table's rows in primary-key order, each value with its
//! type; VACUUM or another page size leaves it unchanged. It is taken without touching the
//! file: a complete file is read in place as immutable, a file with a WAL on a private copy
//! (a reader of a WAL file creates `-shm`).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use sha2::{Digest, Sha256};

/// The logical digest of `path` (with its WAL or rollback journal) without touching it: a
/// file with neither beside it is complete and is read in place as immutable (no locks, no
/// side files); a file with a WAL is copied with it into a private directory and read there;
/// a file with a journal beside it (a hot one after a power cut) is copied with it and opened
/// for writing there, so SQLite rolls the journal back as the next opener of the file would.
pub fn logical_sha256_of_copy(path: &Path) -> Result<String> {
    let side = |suffix: &str| {
        path.with_file_name(format!(
            "{}{suffix}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ))
    };
    let (wal, journal) = (side("-wal"), side("-journal"));
    // Errors name the file the user gave, not the private copy.
    let named = |e: anyhow::Error| {
        let cause = e.root_cause().to_string();
        anyhow::anyhow!("digesting {}: {cause}", path.display())
    };
    let hot = journal.metadata().is_ok_and(|m| m.len() > 0);
    if !wal.exists() && !hot {
        let absolute =
            fs::canonicalize(path).with_context(|| format!("resolving {}", path.display()))?;
        let text = absolute.to_string_lossy();
        let escaped = text
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23");
        return logical_sha256_uri(&format!("file:{escaped}?immutable=1")).map_err(named);
    }
    let scratch =
        crate::owner::tempdir("digest").context("a scratch directory for the logical digest")?;
    let copy = scratch.path().join("copy.db");
    fs::copy(path, &copy).with_context(|| format!("copying {}", path.display()))?;
    for (from, suffix) in [(&wal, "-wal"), (&journal, "-journal")] {
        if from.exists() {
            fs::copy(from, scratch.path().join(format!("copy.db{suffix}")))
                .with_context(|| format!("copying {}", from.display()))?;
        }
    }
    if !hot {
        return logical_sha256(&copy).map_err(named);
    }
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .context("opening")
    .map_err(named)?;
    logical_sha256_conn(&conn).map_err(named)
}

/// The logical digest of the database named by a `file:` URI.
fn logical_sha256_uri(uri: &str) -> Result<String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(uri, flags).context("opening")?;
    logical_sha256_conn(&conn)
}

fn feed(hasher: &mut Sha256, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => hasher.update(b"N"),
        ValueRef::Integer(i) => {
            hasher.update(b"I");
            hasher.update(i.to_be_bytes());
        }
        ValueRef::Real(f) => {
            hasher.update(b"R");
            hasher.update(f.to_bits().to_be_bytes());
        }
        ValueRef::Text(t) => {
            hasher.update(b"T");
            hasher.update((t.len() as u64).to_be_bytes());
            hasher.update(t);
        }
        ValueRef::Blob(b) => {
            hasher.update(b"B");
            hasher.update((b.len() as u64).to_be_bytes());
            hasher.update(b);
        }
    }
}

/// How many of SQLite's findings `intact` reads: the first one names the damage, a few more
/// show its extent; a badly broken file may have thousands.
const INTEGRITY_FINDINGS_MAX: usize = 10;

/// Whether the database at `path` passes SQLite's `PRAGMA integrity_check`: every page, the
/// freelist, and every index entry against its table's row (what a query through an index
/// returns), which the logical digest, reading tables in key order, never judges. An error
/// quotes SQLite's own words (at most `INTEGRITY_FINDINGS_MAX` of them).
pub fn intact(path: &Path) -> Result<()> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", path.display()))?;
    let findings = (|| -> rusqlite::Result<Vec<String>> {
        let mut stmt =
            conn.prepare(&format!("PRAGMA integrity_check({INTEGRITY_FINDINGS_MAX})"))?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    })()
    .map_err(|e| anyhow::anyhow!("SQLite's integrity_check fails: {e}"))?;
    if findings != ["ok"] {
        anyhow::bail!("SQLite's integrity_check reports: {}", findings.join("; "));
    }
    Ok(())
}

/// The logical digest of the database at `path`, opened read-only.
pub fn logical_sha256(path: &Path) -> Result<String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", path.display()))?;
    logical_sha256_conn(&conn)
}

/// The logical digest of the database open on `conn` (a file, or the audit's in-memory
/// replay of a run's history).
pub fn logical_sha256_conn(conn: &Connection) -> Result<String> {
    let mut hasher = Sha256::new();
    walk_content(conn, &mut |item| {
        match item {
            Content::Pragma(name, value) => {
                hasher.update(name.as_bytes());
                hasher.update(value.to_be_bytes());
            }
            Content::Schema(values) => values.into_iter().for_each(|v| feed(&mut hasher, v)),
            Content::Table(name, _) => {
                hasher.update(b"table");
                feed(&mut hasher, ValueRef::Text(name.as_bytes()));
            }
            Content::Row(values) => {
                hasher.update(b"row");
                values.iter().for_each(|v| feed(&mut hasher, *v));
            }
        }
        Ok(())
    })
    .context("reading rows")?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// One piece of a database's content, in the order the logical digest reads it.
pub enum Content<'a> {
    /// `application_id` or `user_version`, and its value.
    Pragma(&'static str, i64),
    /// One `sqlite_schema` row: type, name, tbl_name, sql (`''` when NULL); ordered by type
    /// and name.
    Schema([ValueRef<'a>; 4]),
    /// A table and its columns, before its rows.
    Table(&'a str, &'a [String]),
    /// One row of that table, in primary-key order (rowid when it has none).
    Row(&'a [ValueRef<'a>]),
}

/// Read every piece of content of `conn` in one fixed order: the logical digest and the
/// rerun's row listing both walk a database this way, so they always agree on what content is.
pub fn walk_content(
    conn: &Connection,
    visit: &mut dyn FnMut(Content<'_>) -> Result<()>,
) -> Result<()> {
    for pragma in ["application_id", "user_version"] {
        let v: i64 = conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?;
        visit(Content::Pragma(pragma, v))?;
    }
    let mut schema = conn.prepare(
        "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name",
    )?;
    let mut tables = Vec::new();
    let mut rows = schema.query([])?;
    while let Some(row) = rows.next()? {
        let values = [
            row.get_ref(0)?,
            row.get_ref(1)?,
            row.get_ref(2)?,
            row.get_ref(3)?,
        ];
        visit(Content::Schema(values))?;
        if values[0].as_str()? == "table" {
            tables.push(row.get::<_, String>(1)?);
        }
    }
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for table in tables {
        let mut pk =
            conn.prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")?;
        let keys: Vec<String> = pk
            .query_map([&table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let order = if keys.is_empty() {
            "rowid".to_string()
        } else {
            keys.iter().map(|k| quote(k)).collect::<Vec<_>>().join(", ")
        };
        let mut stmt =
            conn.prepare(&format!("SELECT * FROM {} ORDER BY {order}", quote(&table)))?;
        let columns: Vec<String> = stmt.column_names().map(|c| c.to_string()).collect();
        visit(Content::Table(&table, &columns))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let values = (0..columns.len())
                .map(|i| row.get_ref(i))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            visit(Content::Row(&values))?;
        }
    }
    Ok(())
}
