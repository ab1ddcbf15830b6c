//! The durable state of a run, behind one interface.
//!
//! A lab names the stores its roles write (`Lab::databases`) and the kind of store they are
//! (`Lab::store`). Everything the engine does with that state goes through `StateStore`:
//! the rows of `database-files.json` after a step (`snapshot`), the logical digest of one
//! store, a copy kept for the user (`--keep-db`, a broken explore case), the logical digest
//! of such a copy when the audit reads it from evidence, and the audit's checks of the rows
//! a run wrote. SQLite files in the run's work directory (`sqlite`) are the first kind; a
//! server database stands beside them as another implementation, with no change to the
//! driver, explore or the audit.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod server;
pub mod sqlite;

#[cfg(test)]
mod tests;

/// The SQLite store: database files in the run's work directory.
pub const SQLITE: &dyn StateStore = &sqlite::Sqlite;

/// One row of `database-files.json`; read strictly, so a field the driver does not write
/// makes a malformed row (the audit relies on it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRow {
    pub scenario: String,
    pub after_step: String,
    pub file: String,
    pub exists: bool,
    pub bytes: u64,
    pub sha256: Option<String>,
    pub logical_sha256: Option<String>,
    /// Background steps of the scenario that were alive, and stopped with SIGSTOP, while
    /// this row was taken (README, "Evidence"): a database one of them writes shows some
    /// prefix of that process's commits. Empty when nothing else was running.
    #[serde(default)]
    pub frozen: Vec<String>,
}

/// What a snapshot is of: stores `names` of the work directory `work`, after `step` of
/// `scenario` (the fields its rows carry).
#[derive(Debug, Clone, Copy)]
pub struct SnapshotOf<'a> {
    pub work: &'a Path,
    pub names: &'a [&'a str],
    pub scenario: &'a str,
    pub step: &'a str,
}

impl<'a> SnapshotOf<'a> {
    pub fn new(work: &'a Path, names: &'a [&'a str], scenario: &'a str, step: &'a str) -> Self {
        SnapshotOf {
            work,
            names,
            scenario,
            step,
        }
    }

    /// The same moment, of store `names` only.
    pub fn only(&self, names: &'a [&'a str]) -> Self {
        SnapshotOf { names, ..*self }
    }

    /// A row of this snapshot about `file`, with no background step frozen.
    pub fn row(
        &self,
        file: String,
        exists: bool,
        bytes: u64,
        sha256: Option<String>,
        logical_sha256: Option<String>,
    ) -> FileRow {
        FileRow {
            scenario: self.scenario.to_string(),
            after_step: self.step.to_string(),
            file,
            exists,
            bytes,
            sha256,
            logical_sha256,
            frozen: Vec::new(),
        }
    }
}

/// `after_step` of the rows taken once every process of a scenario has ended: the state a
/// kept database (`--keep-db`) must show.
pub const END: &str = "<end>";

/// The size and SHA-256 (lowercase hex) of a file's bytes.
pub fn sha256_file(path: &Path) -> Result<(u64, String)> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok((bytes.len() as u64, format!("{:x}", Sha256::digest(&bytes))))
}

/// What a row of `database-files.json` is about: a store itself, or a file beside it that
/// holds part of its state (one of `StateStore::side_suffixes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Store,
    Side(&'static str),
}

/// Logical digests already taken, by the raw digests the store's content was read from: a
/// store that did not change since the last step is not read again. `None` records a store
/// whose content could not be read (its row then has no logical digest).
#[derive(Debug, Default)]
pub struct Cache {
    digests: HashMap<String, Option<String>>,
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    /// The digest recorded under `key`, or `take()`'s, recorded for next time.
    pub fn get_or_take(
        &mut self,
        key: String,
        take: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        self.digests.entry(key).or_insert_with(take).clone()
    }

    pub fn len(&self) -> usize {
        self.digests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }
}

/// The durable state of a lab's run: one implementation per kind of store.
///
/// `names` are the lab's stores (`Lab::databases`) and `work` the run's work directory; a
/// store that is not a file there resolves them its own way. The rows a snapshot returns
/// are exactly the rows `database-files.json` holds, in its order, so the archived evidence
/// of a kind never changes with the code behind it.
pub trait StateStore: Sync {
    /// The kind, as the lab's definition and messages name it: `sqlite`.
    fn kind(&self) -> &'static str;

    /// Suffixes of the files beside a store that hold part of its state, in the order the
    /// rows list them after the store's own row.
    fn side_suffixes(&self) -> &'static [&'static str];

    /// The rows after one step: for each store in `of.names`, its own row (also when it does
    /// not exist yet), then one row per side file that exists. `cache` carries logical
    /// digests from earlier snapshots of the same run.
    fn snapshot_cached(&self, of: &SnapshotOf<'_>, cache: &mut Cache) -> Result<Vec<FileRow>>;

    /// As `snapshot_cached`, with nothing remembered from earlier snapshots.
    fn snapshot(&self, of: &SnapshotOf<'_>) -> Result<Vec<FileRow>> {
        self.snapshot_cached(of, &mut Cache::new())
    }

    /// As `snapshot`, for a work directory where nothing runs any more (a settled explore
    /// case): the store may read its content in place instead of from a private copy; one
    /// that reads no private copy reads it as `snapshot` does.
    fn snapshot_settled(&self, of: &SnapshotOf<'_>) -> Result<Vec<FileRow>> {
        self.snapshot(of)
    }

    /// The logical digest of store `name`: its content, not its layout, read without
    /// changing anything of it.
    fn logical_digest(&self, work: &Path, name: &str) -> Result<String>;

    /// Keep a copy of store `name` under `to` for the user, readable by the store's own
    /// tools without changing it. Returns the copy's logical digest, for the caller to
    /// compare with the state it recorded; `None` when the store held no readable content
    /// and was kept as it was.
    fn keep(&self, work: &Path, name: &str, to: &Path) -> Result<Option<String>>;

    /// The logical digest of a kept copy the audit read from evidence, given as its bytes
    /// and those of its side files (`(suffix, bytes)`): the evidence is never opened in place.
    /// An error when the copy is not sound by the store's own check (SQLite's
    /// `integrity_check`: pages, freelist, every index against its table), quoting it.
    fn kept_digest(&self, bytes: &[u8], side: &[(&str, &[u8])]) -> Result<String>;

    /// The audit: what is wrong with one row's own fields (empty when nothing is), given
    /// what it is about. Each problem is one phrase, without the row's name.
    fn row_problems(&self, row: &FileRow, part: Part) -> Vec<String>;

    /// The audit: what is wrong across the rows of one run (one content, one digest).
    fn rows_problems(&self, names: &[&str], rows: &[FileRow]) -> Vec<String>;

    /// Which store of `names` a row's `file` is about, and which part of it.
    fn part<'a>(&self, file: &'a str, names: &[&'a str]) -> Option<(&'a str, Part)> {
        names.iter().find_map(|name| {
            let rest = file.strip_prefix(name)?;
            if rest.is_empty() {
                return Some((*name, Part::Store));
            }
            let side = self.side_suffixes().iter().find(|s| **s == rest)?;
            Some((*name, Part::Side(side)))
        })
    }
}
