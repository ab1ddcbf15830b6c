//! Power loss: a crash mode that drops what was never synced.
//!
//! A process crash keeps every write in the kernel's page cache, so `synchronous=FULL` and
//! `OFF` look alike after one. A power cut does not. Role processes of a power-loss run open
//! their databases through the shim VFS (`vfs`, `file`), which records in an undo log
//! (`undo`) the old bytes of every write, every sync, and every create and unlink with the
//! directory syncs that made them durable. After the crash, the cut (`cut`) takes back what
//! a machine that lost power would have lost, in one of three styles, seeded. The store
//! profiles (`profile`) are the designs that only a power cut tells apart.
//!
//! What the model assumes, so a reader can weigh its verdicts:
//! - Durability is per file and per directory, as POSIX promises and no more: a sync makes
//!   that file's earlier writes durable; a directory sync makes earlier creates and unlinks
//!   in it durable. Real file systems often keep more (ext4 orders data before metadata);
//!   the model is the floor a design may rely on.
//! - A sync covers every write recorded before the sync's record. Two processes writing and
//!   syncing one file at once (a WAL checkpoint beside a writer) could record a write before
//!   another's sync that reached the disk after it: the model then keeps a write a real cut
//!   might lose. It never loses a write a real cut would keep.
//! - Writes the harness makes without the shim (creating files, reading them) count as
//!   durable.

pub mod cut;
mod file;
pub mod profile;
pub mod states;
pub mod undo;
pub mod vfs;

use std::sync::OnceLock;

use anyhow::{Context, Result};

use crate::fail;

/// The environment variable that turns the shim on in a role process: the undo log's path.
/// The log's directory is the work directory; recorded paths are relative to it.
pub const LOG_ENV: &str = "CRASHLAB_POWER_LOG";

/// The undo log's file name in a run's work directory.
pub const LOG_NAME: &str = "power-undo.log";

static VFS: OnceLock<Result<Option<&'static str>, String>> = OnceLock::new();

/// The VFS this process opens its databases with: `Some("crashlab-power")` when `LOG_ENV`
/// names an undo log (registered on first use), `None` for SQLite's default. A log that
/// cannot be opened is bad configuration: one line, exit 2.
pub fn vfs_name() -> Result<Option<&'static str>> {
    let outcome = VFS.get_or_init(|| match std::env::var_os(LOG_ENV) {
        None => Ok(None),
        Some(path) if path.is_empty() => Ok(None),
        Some(path) => vfs::register(std::path::Path::new(&path)).map(|()| Some(vfs::NAME)),
    });
    outcome
        .clone()
        .map_err(|message| fail::usage(format!("{LOG_ENV}: {message}")))
}

/// After a cut, a database may have a hot journal beside it (its unlink never reached the
/// disk). The first process that opens it for writing rolls it back, as a rebooted machine's
/// first writer would; a reader cannot, so before the engine reads the files it opens each
/// such database once for writing (outside the shim: what it writes counts as durable).
pub fn settle_hot_journals(work: &std::path::Path, databases: &[&str]) -> Result<()> {
    for db in databases {
        let journal = work.join(format!("{db}-journal"));
        if !journal.is_file() {
            continue;
        }
        let path = work.join(db);
        let conn = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {db} to roll back its hot journal"))?;
        // Any read takes the shared lock that finds the hot journal and rolls it back.
        // A file the cut left unusable fails here too: the roles refuse it (exit 2) and the
        // lab's reading of the files says what is lost; there is nothing to settle.
        let _settled: rusqlite::Result<i64> =
            conn.query_row("PRAGMA schema_version", [], |r| r.get(0));
    }
    Ok(())
}
