//! A chaos run's kept databases: database-files.json must list exactly the files kept under
//! `db/`, each with the bytes and the rows it holds.

use std::path::Path;

use super::tree::Tree;
use super::{sequence, Report};
use crate::engine::evidence;
use crate::engine::files::{FileRow, SIDE_SUFFIXES};

const F: &str = evidence::DATABASE_FILES;

/// database-files.json against the kept files: one row per database then its side files,
/// each the bytes kept and, for a database, the rows kept. Returns the files it covers.
pub(super) fn kept(
    report: &mut Report,
    tree: &Tree,
    databases: &[&str],
    rows: &[FileRow],
) -> Vec<String> {
    let mut want = Vec::new();
    for db in databases {
        want.push(format!("db/{db}"));
        for suffix in SIDE_SUFFIXES {
            let side = format!("db/{db}{suffix}");
            if tree.has_file(&side) {
                want.push(side);
            }
        }
    }
    let found: Vec<String> = rows.iter().map(|r| r.file.clone()).collect();
    for d in sequence::differences(&want, &found, 10) {
        report.problem(F, format!("rows: {d}"));
    }
    for r in rows {
        let at = format!("{} after {}", r.file, r.after_step);
        if r.scenario != "chaos" || r.after_step != "final" {
            report.problem(
                F,
                format!("{at}: a chaos run has one snapshot, chaos/final"),
            );
        }
        let Some(bytes) = tree.get(&r.file) else {
            if r.exists {
                report.problem(F, format!("{at}: listed as existing, but not kept"));
            }
            continue;
        };
        use sha2::{Digest, Sha256};
        let sha: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if !r.exists || r.bytes != bytes.len() as u64 || r.sha256.as_deref() != Some(sha.as_str()) {
            report.problem(
                F,
                format!(
                    "{at}: the row is not the kept file ({} bytes, sha256 {sha})",
                    bytes.len()
                ),
            );
        }
        let logical = if databases.iter().any(|db| r.file == format!("db/{db}")) {
            let wal = tree.get(&format!("{}-wal", r.file));
            match super::kept::logical_sha256(bytes, wal) {
                Ok(d) => Some(d),
                Err(e) => {
                    report.problem(&r.file, format!("not a sound database: {e:#}"));
                    continue;
                }
            }
        } else {
            None
        };
        if r.logical_sha256 != logical {
            report.problem(
                F,
                format!("{at}: logical_sha256 is not the kept file's rows"),
            );
        }
    }
    // The -shm wal-index beside each database is housekeeping, kept but not recorded.
    let shm = databases
        .iter()
        .map(|db| format!("db/{db}-shm"))
        .filter(|f| tree.has_file(f));
    want.into_iter()
        .filter(|f| Path::new(f).starts_with("db"))
        .chain(shm)
        .collect()
}
