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
pub mod undo;
pub mod vfs;

use std::sync::OnceLock;

use anyhow::Result;

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
