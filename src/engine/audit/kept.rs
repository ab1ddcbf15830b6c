//! The files of a driver run: exactly the ones it writes (its JSON, each step's stdout and
//! stderr, its pictures, and with `--keep-db` the kept databases), and each kept database must be one file
//! whose rows are the state recorded after its scenario's end (its `<end>` row).

use anyhow::Result;
use std::collections::BTreeSet;

use super::record::{events_file, output_files};
use super::tree::Tree;
use super::Report;
use crate::engine::evidence;
use crate::engine::files::FileRow;
use crate::engine::files::END;
use crate::engine::scenario::Scenario;
use crate::engine::LabStack;

pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    scenarios: &[Scenario],
    keep_db: bool,
    rows: Option<&[FileRow]>,
    pictures: BTreeSet<String>,
) {
    let mut expected: BTreeSet<String> = [
        evidence::MANIFEST,
        evidence::PROCESSES,
        evidence::RESULTS,
        evidence::DATABASE_FILES,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    expected.extend(pictures);
    if lab.stack.is_some() {
        expected.insert(crate::engine::fleet::SERVERS.to_string());
    }
    for scenario in scenarios {
        for step in &scenario.steps {
            let (out, err) = output_files(scenario, step);
            expected.insert(out);
            expected.insert(err);
            expected.insert(events_file(scenario, step));
        }
        if let (true, Some(rows)) = (keep_db, rows) {
            expected.extend(kept_scenario(report, tree, lab, scenario, rows));
        }
    }
    for rel in tree.files() {
        if expected.contains(rel) {
            continue;
        }
        let why = if !rel.starts_with("db/") {
            "not a file this run writes"
        } else if !keep_db {
            "a kept database, but the command has no --keep-db"
        } else {
            "not a kept database: the driver keeps one file per database, no side files"
        };
        report.problem(rel, why);
    }
}

/// Check one scenario's kept databases against its `<end>` rows; returns their paths.
fn kept_scenario(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    scenario: &Scenario,
    rows: &[FileRow],
) -> Vec<String> {
    let dir = match &scenario.dir {
        Some(sub) => format!("db/{sub}/"),
        None => "db/".to_string(),
    };
    let mut kept = Vec::new();
    for db in lab.databases {
        let rel = format!("{dir}{db}");
        let end = rows
            .iter()
            .find(|r| r.scenario == scenario.name && r.after_step == END && r.file == *db);
        let Some(end) = end else {
            // Said by the row order check.
            continue;
        };
        match (end.exists, tree.get(&rel)) {
            (true, Some(bytes)) => {
                kept.push(rel.clone());
                match lab.store.kept_digest(bytes, &[]) {
                    Ok(digest) if Some(&digest) == end.logical_sha256.as_ref() => {}
                    Ok(_) => report.problem(
                        &rel,
                        format!(
                            "its rows differ from the state recorded for {db} after scenario {}",
                            scenario.name
                        ),
                    ),
                    Err(e) => report.problem(&rel, format!("not a sound database: {e:#}")),
                }
            }
            (true, None) if tree.has_file(&rel) => kept.push(rel),
            (true, None) => report.problem(&rel, "missing, though the scenario left it"),
            (false, _) => {}
        }
    }
    kept
}

/// The logical digest of a database given as bytes (and its WAL's), read from a private
/// copy: the evidence is never opened by SQLite, so never touched.
pub(super) fn logical_sha256(db: &[u8], wal: Option<&[u8]>) -> Result<String> {
    let side: Vec<(&str, &[u8])> = wal.map(|w| ("-wal", w)).into_iter().collect();
    crate::engine::state::SQLITE.kept_digest(db, &side)
}

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Every SQLite file of the run no other check opens (explore's kept cases, a lab file's
/// stores) must be a sound database: `integrity_check` on a private copy, as for a driver's.
/// The files `kept` names that begin like SQLite are judged: a run on servers keeps plain-SQL
/// dumps under the same names. Its `-wal` beside it, if kept, is read with it.
pub(super) fn sound(report: &mut Report, tree: &Tree, kept: &dyn Fn(&str) -> bool) {
    let files: Vec<&str> = tree.files().filter(|f| !f.ends_with("-wal")).collect();
    for rel in files {
        let Some(bytes) = tree.get(rel) else { continue };
        if !(kept(rel) && bytes.starts_with(SQLITE_MAGIC)) {
            continue;
        }
        let wal = tree.get(&format!("{rel}-wal"));
        if let Err(e) = logical_sha256(bytes, wal) {
            report.problem(rel, format!("not a sound database: {e:#}"));
        }
    }
}
