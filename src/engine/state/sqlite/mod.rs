//! The SQLite store: each store is a database file in the run's work directory, named
//! relative to it (`sender.db`), with the files SQLite keeps beside it.
//!
//! A snapshot row records the file's size and raw digest, and for the database itself its
//! logical digest (digest.rs); each side file that holds state (`-wal`, `-journal`) gets a
//! row of its own. The `-shm` wal-index is housekeeping (any reader rewrites it, and SQLite
//! rebuilds it from the WAL), so it is not recorded.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};

use super::{sha256_file, Cache, FileRow, Part, SnapshotOf, StateStore};

mod audit;
mod digest;

pub use digest::{
    logical_sha256, logical_sha256_conn, logical_sha256_of_copy, walk_content, Content,
};

/// Files that may lie beside a database and hold its state, in the order rows list them.
pub const SIDE_SUFFIXES: &[&str] = &["-wal", "-journal"];

/// Every file SQLite may leave beside a database: none of them stays beside a kept copy.
const HOUSEKEEPING_SUFFIXES: &[&str] = &["-wal", "-shm", "-journal"];

/// SQLite database files in the work directory.
#[derive(Debug)]
pub struct Sqlite;

impl StateStore for Sqlite {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn side_suffixes(&self) -> &'static [&'static str] {
        SIDE_SUFFIXES
    }

    fn snapshot_cached(&self, of: &SnapshotOf<'_>, cache: &mut Cache) -> Result<Vec<FileRow>> {
        rows(of, cache, Read::Copy)
    }

    fn snapshot_settled(&self, of: &SnapshotOf<'_>) -> Result<Vec<FileRow>> {
        rows(of, &mut Cache::new(), Read::InPlace)
    }

    fn logical_digest(&self, work: &Path, name: &str) -> Result<String> {
        logical_sha256_of_copy(&work.join(name))
    }

    /// Copy the database with its WAL into `to`, then on the copy fold the WAL into the file
    /// (checkpoint) and switch it to a rollback journal, so the kept database is one
    /// self-contained file that an ordinary `sqlite3` shell can read without changing a byte
    /// (a read of a WAL database creates and, on close, deletes `-wal` and `-shm` files,
    /// which would break the manifest). The rows are unchanged: the digest returned is the
    /// copy's, read in place as immutable. A file that is not a database is kept as its raw
    /// bytes, and `None` is returned.
    fn keep(&self, work: &Path, db: &str, to: &Path) -> Result<Option<String>> {
        let from = work.join(db);
        let kept = to.join(db);
        fs::copy(&from, &kept).with_context(|| format!("keeping {db}"))?;
        let wal_from = work.join(format!("{db}-wal"));
        let wal_kept = to.join(format!("{db}-wal"));
        if wal_from.is_file() {
            fs::copy(&wal_from, &wal_kept).with_context(|| format!("keeping {db}-wal"))?;
        }
        let folded = fold(&kept);
        // Whatever happened, no side file stays beside a kept database.
        for suffix in HOUSEKEEPING_SUFFIXES {
            let side = to.join(format!("{db}{suffix}"));
            if side.exists() {
                fs::remove_file(&side).with_context(|| format!("removing {}", side.display()))?;
            }
        }
        if folded.is_err() {
            // Not a database (or a damaged one): the user gets the raw bytes as they were.
            fs::copy(&from, &kept).with_context(|| format!("keeping {db}"))?;
            return Ok(None);
        }
        Ok(logical_sha256_of_copy(&kept).ok())
    }

    fn kept_digest(&self, bytes: &[u8], side: &[(&str, &[u8])]) -> Result<String> {
        let scratch = crate::owner::tempdir("digest").context("a scratch directory")?;
        let copy = scratch.path().join("copy.db");
        write(&copy, bytes)?;
        for (suffix, bytes) in side {
            anyhow::ensure!(
                SIDE_SUFFIXES.contains(suffix),
                "{suffix} is not a file SQLite keeps beside a database"
            );
            write(&scratch.path().join(format!("copy.db{suffix}")), bytes)?;
        }
        // A kept file is judged whole, indexes and freelist included, before its rows are.
        digest::intact(&copy)?;
        logical_sha256(&copy)
    }

    fn row_problems(&self, row: &FileRow, part: Part) -> Vec<String> {
        audit::row_problems(row, part)
    }

    fn rows_problems(&self, names: &[&str], rows: &[FileRow]) -> Vec<String> {
        audit::rows_problems(self, names, rows)
    }
}

/// Checkpoint the WAL of the copy at `kept` into it and leave it in rollback-journal mode.
fn fold(kept: &Path) -> rusqlite::Result<()> {
    let conn = Connection::open_with_flags(
        kept,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(rusqlite::Error::InvalidQuery);
    }
    conn.close().map_err(|(_, e)| e)
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// How a snapshot reads a database's content for its logical digest.
#[derive(Clone, Copy)]
enum Read {
    /// From a private copy: a process may still hold the file, and a reader must not
    /// change a byte of it (a WAL it would checkpoint, an -shm it would rebuild).
    Copy,
    /// In place, read-only: nothing runs in the work directory any more, and the run's own
    /// readers have opened the files so already; spares a copy of every database and WAL.
    InPlace,
}

fn rows(of: &SnapshotOf<'_>, cache: &mut Cache, read: Read) -> Result<Vec<FileRow>> {
    let SnapshotOf { work, names, .. } = *of;
    let mut rows = Vec::with_capacity(names.len());
    for db in names {
        let path = work.join(db);
        if path.is_file() {
            let (bytes, sha) = sha256_file(&path)?;
            // One file with its WAL or journal is one content: the key is their raw digests.
            let mut key = sha.clone();
            for suffix in SIDE_SUFFIXES {
                let side = work.join(format!("{db}{suffix}"));
                key.push(' ');
                key.push_str(&match side.is_file() {
                    true => sha256_file(&side)?.1,
                    false => "-".to_string(),
                });
            }
            let logical = cache.get_or_take(key, || match read {
                Read::Copy => logical_sha256_of_copy(&path).ok(),
                Read::InPlace => logical_sha256(&path).ok(),
            });
            rows.push(of.row(db.to_string(), true, bytes, Some(sha), logical));
        } else {
            rows.push(of.row(db.to_string(), false, 0, None, None));
        }
        for suffix in SIDE_SUFFIXES {
            let side = work.join(format!("{db}{suffix}"));
            if side.is_file() {
                let (bytes, sha) = sha256_file(&side)?;
                rows.push(of.row(format!("{db}{suffix}"), true, bytes, Some(sha), None));
            }
        }
    }
    // Postcondition: every store has its own row, in the order of `names`.
    debug_assert_eq!(
        rows.iter()
            .filter(|r| names.contains(&r.file.as_str()))
            .count(),
        names.len()
    );
    Ok(rows)
}
