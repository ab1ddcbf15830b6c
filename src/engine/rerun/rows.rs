//! The rows of a kept database as lines of text, to compare two runs' databases by content:
//! their digests cannot be compared (stored timestamps differ), their rows can, once the
//! timestamps in them are normalised like any other line.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::engine::files::{walk_content, Content};

/// The most rows read from one database: a lab's kept files hold a handful.
pub const ROWS_MAX: usize = 1_000_000;

/// The first bytes of every SQLite database file.
pub const HEADER: &[u8; 16] = b"SQLite format 3\0";

pub fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    crate::common::open_plain(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == HEADER)
}

/// The largest database file (or WAL) copied for reading its rows.
const DATABASE_BYTES_MAX: u64 = 1024 * 1024 * 1024;

/// Copy a plain file (never a FIFO or a link, `common::read_plain`) to `to`.
fn copy_plain(from: &Path, to: &Path) -> Result<()> {
    let bytes = crate::common::read_plain(from, DATABASE_BYTES_MAX)
        .with_context(|| format!("copying {}", from.display()))?;
    fs::write(to, bytes).with_context(|| format!("copying {}", from.display()))
}

fn literal(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => format!("{f:?}"),
        ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t).replace('\'', "''")),
        ValueRef::Blob(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("x'{hex}'")
        }
    }
}

/// `path` (with its `-wal` beside it, if any) as lines: the schema, then every table's rows
/// in primary-key order, `table: col = value, …`. Read from a private copy, so the file in
/// the evidence is never opened, let alone changed.
pub fn dump(path: &Path) -> Result<Vec<String>> {
    let scratch =
        crate::owner::tempdir("rerun-rows").context("a scratch directory for reading rows")?;
    let copy = scratch.path().join("copy.db");
    copy_plain(path, &copy)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let wal = path.with_file_name(format!("{name}-wal"));
    // A link is never followed: a `-wal` that is not a plain file is left out.
    if fs::symlink_metadata(&wal).is_ok_and(|m| m.is_file()) {
        copy_plain(&wal, &scratch.path().join("copy.db-wal"))?;
    }
    // The copy is private, so it may be opened for writing: a WAL-mode file then opens
    // whether or not a `-wal` came with it. Nothing is written (query_only).
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .context("opening the copy")?;
    conn.pragma_update(None, "query_only", true)
        .context("making the copy query-only")?;
    let lines = read(&conn).context("reading rows")?;
    Ok(lines)
}

fn read(conn: &Connection) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut table = String::new();
    let mut columns: Vec<String> = Vec::new();
    let mut count = 0usize;
    let text =
        |v: ValueRef<'_>| String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned();
    walk_content(conn, &mut |item| {
        match item {
            Content::Pragma(name, v) => lines.push(format!("pragma {name} = {v}")),
            Content::Schema([kind, name, _, sql]) => lines.push(format!(
                "schema {} {}: {}",
                text(kind),
                text(name),
                text(sql)
            )),
            Content::Table(name, names) => {
                table = name.to_string();
                columns = names.to_vec();
            }
            Content::Row(values) => {
                count += 1;
                anyhow::ensure!(count <= ROWS_MAX, "more than {ROWS_MAX} rows");
                let fields: Vec<String> = columns
                    .iter()
                    .zip(values)
                    .map(|(column, v)| format!("{column} = {}", literal(*v)))
                    .collect();
                lines.push(format!("{table}: {}", fields.join(", ")));
            }
        }
        Ok(())
    })?;
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_key_order_with_literals_and_the_header_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE t(k TEXT PRIMARY KEY, n INTEGER, r REAL, b BLOB, z);
             INSERT INTO t VALUES ('b', 2, 0.5, x'00ff', NULL), ('a''x', 1796244762039, 1.0, NULL, 3);",
        )
        .unwrap();
        drop(conn);
        assert!(is_database(&path));
        let lines = dump(&path).unwrap();
        assert_eq!(
            &lines[lines.len() - 2..],
            [
                "t: k = 'a''x', n = 1796244762039, r = 1.0, b = NULL, z = 3",
                "t: k = 'b', n = 2, r = 0.5, b = x'00ff', z = NULL",
            ]
        );
        assert!(lines
            .iter()
            .any(|l| l.starts_with("schema table t: CREATE TABLE t(")));
        let text = dir.path().join("x.txt");
        fs::write(&text, "not a database at all").unwrap();
        assert!(!is_database(&text));
    }
}
