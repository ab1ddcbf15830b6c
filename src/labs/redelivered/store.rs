//! This lab's stores are of two kinds: the consumers' PostgreSQL database and the queue live on
//! the servers (the engine's server store), lab 13's receiver keeps its ledger in a SQLite file
//! in the work directory (the engine's SQLite store). This store hands each name to its kind:
//! a name ending `.db` is a file, every other name a server's.
//!
//! The engine knows one store per lab; a lab that mixes kinds says which name is which here.

use std::path::Path;

use anyhow::Result;

use super::schema::CONSUMER;
use crate::engine::state::server::ServerStore;
use crate::engine::state::{Cache, FileRow, Part, SnapshotOf, StateStore, SQLITE};

pub struct Mixed;

pub static STORE: Mixed = Mixed;

/// The servers' part: the consumers' database (and the queue, by its ready count).
pub static SERVERS: ServerStore = ServerStore {
    schemas: &[&CONSUMER],
};

fn servers() -> &'static dyn StateStore {
    &SERVERS
}

fn is_file(name: &str) -> bool {
    name.ends_with(".db")
}

fn of(name: &str) -> &'static dyn StateStore {
    if is_file(name) {
        SQLITE
    } else {
        servers()
    }
}

/// The name a row is about (its file, or the file its side file belongs to).
fn owner<'a>(file: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .copied()
        .find(|n| file == *n || (is_file(n) && file.starts_with(*n)))
}

/// The rows of each name in turn, each taken by its own kind of store.
fn each(
    snap: &SnapshotOf<'_>,
    mut take: impl FnMut(&dyn StateStore, &SnapshotOf<'_>) -> Result<Vec<FileRow>>,
) -> Result<Vec<FileRow>> {
    let mut rows = Vec::new();
    for name in snap.names {
        rows.extend(take(of(name), &snap.only(std::slice::from_ref(name)))?);
    }
    Ok(rows)
}

impl StateStore for Mixed {
    fn kind(&self) -> &'static str {
        "server"
    }

    fn side_suffixes(&self) -> &'static [&'static str] {
        SQLITE.side_suffixes()
    }

    fn snapshot_cached(&self, snap: &SnapshotOf<'_>, cache: &mut Cache) -> Result<Vec<FileRow>> {
        each(snap, |store, one| store.snapshot_cached(one, cache))
    }

    fn snapshot_settled(&self, snap: &SnapshotOf<'_>) -> Result<Vec<FileRow>> {
        each(snap, |store, one| store.snapshot_settled(one))
    }

    fn logical_digest(&self, work: &Path, name: &str) -> Result<String> {
        of(name).logical_digest(work, name)
    }

    /// A file is kept only when it exists (the SQLite store's rule); a server's store always.
    fn keep(&self, work: &Path, name: &str, to: &Path) -> Result<Option<String>> {
        if is_file(name) && !work.join(name).is_file() {
            return Ok(None);
        }
        of(name).keep(work, name, to)
    }

    /// A kept SQLite file starts with SQLite's header; anything else is a server's dump.
    fn kept_digest(&self, bytes: &[u8], side: &[(&str, &[u8])]) -> Result<String> {
        if bytes.starts_with(b"SQLite format 3\0") {
            SQLITE.kept_digest(bytes, side)
        } else {
            servers().kept_digest(bytes, side)
        }
    }

    fn row_problems(&self, row: &FileRow, part: Part) -> Vec<String> {
        let file = row.file.as_str();
        if is_file(file) || part != Part::Store {
            SQLITE.row_problems(row, part)
        } else {
            servers().row_problems(row, part)
        }
    }

    fn rows_problems(&self, names: &[&str], rows: &[FileRow]) -> Vec<String> {
        let mut problems = Vec::new();
        for kind in [true, false] {
            let named: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| is_file(n) == kind)
                .collect();
            let mine: Vec<FileRow> = rows
                .iter()
                .filter(|r| owner(&r.file, names).is_some_and(|n| is_file(n) == kind))
                .cloned()
                .collect();
            let store = if kind { SQLITE } else { servers() };
            problems.extend(store.rows_problems(&named, &mine));
        }
        problems
    }
}
