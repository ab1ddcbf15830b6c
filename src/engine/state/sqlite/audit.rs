//! The audit's checks of SQLite rows in `database-files.json`: each row's fields fit what it
//! is about, and across the rows one raw digest is one content.

use std::collections::BTreeMap;

use super::super::{FileRow, Part, StateStore};
use crate::common::is_sha256;

/// SHA-256 of no bytes: an empty side file's digest.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A database row has a size and both digests when it exists, none when it does not; a side
/// file is listed only when it exists, with a size and a raw digest, and no logical digest.
pub(super) fn row_problems(row: &FileRow, part: Part) -> Vec<String> {
    let mut problems = Vec::new();
    let database = part == Part::Store;
    match (row.exists, database) {
        (false, true) => {
            if row.bytes != 0 || row.sha256.is_some() || row.logical_sha256.is_some() {
                problems.push("does not exist, yet has a size or a digest".to_string());
            }
        }
        (false, false) => problems.push("a side file is listed only when it exists".to_string()),
        (true, _) => {
            if !row.sha256.as_deref().is_some_and(is_sha256) {
                problems.push("exists but lacks a well-formed size or digest".to_string());
            }
            let empty = row.sha256.as_deref() == Some(EMPTY_SHA256);
            if (row.bytes == 0) != empty {
                problems.push(format!(
                    "{} bytes disagree with sha256 {}",
                    row.bytes,
                    row.sha256.as_deref().unwrap_or("none")
                ));
            }
            if database && !row.logical_sha256.as_deref().is_some_and(is_sha256) {
                problems.push("exists but lacks a well-formed size or digest".to_string());
            }
            if !database && row.logical_sha256.is_some() {
                problems.push("a side file has no logical digest".to_string());
            }
        }
    }
    problems
}

/// One raw digest is one content: the same sha256 has the same size everywhere, and a
/// database with the same bytes and the same WAL has the same rows.
pub(super) fn rows_problems(
    store: &dyn StateStore,
    names: &[&str],
    rows: &[FileRow],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut sizes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut logical: BTreeMap<(String, Option<String>), &str> = BTreeMap::new();
    let mut wal: BTreeMap<(&str, &str, &str), &str> = BTreeMap::new();
    for r in rows {
        if let (Some(sha), true) = (r.sha256.as_deref(), r.exists) {
            match sizes.get(sha) {
                Some(bytes) if *bytes != r.bytes => problems.push(format!(
                    "{} after {}: sha256 {sha} with {} bytes, elsewhere {bytes}",
                    r.file, r.after_step, r.bytes
                )),
                _ => {
                    sizes.insert(sha, r.bytes);
                }
            }
        }
        if let Some(db) = r.file.strip_suffix("-wal") {
            if let Some(sha) = r.sha256.as_deref() {
                wal.insert((r.scenario.as_str(), r.after_step.as_str(), db), sha);
            }
        }
    }
    for r in rows {
        let (Some(sha), Some(digest)) = (r.sha256.as_ref(), r.logical_sha256.as_deref()) else {
            continue;
        };
        if store
            .part(&r.file, names)
            .is_none_or(|(_, part)| part != Part::Store)
        {
            continue;
        }
        let with = wal
            .get(&(r.scenario.as_str(), r.after_step.as_str(), r.file.as_str()))
            .map(|s| s.to_string());
        let key = (sha.clone(), with);
        match logical.get(&key) {
            Some(other) if *other != digest => problems.push(format!(
                "{} after {}: the same file and WAL as elsewhere, yet another logical_sha256",
                r.file, r.after_step
            )),
            _ => {
                logical.insert(key, digest);
            }
        }
    }
    problems
}
