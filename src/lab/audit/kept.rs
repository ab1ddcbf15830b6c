//! The files of a driver run: exactly the ones it writes (its JSON, each step's stdout and
//! stderr, and with `--keep-db` the kept databases), and the kept databases must be the
//! files the last rows of database-files.json describe.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use super::database::Row;
use super::run::output_files;
use super::tree::Tree;
use super::Report;
use crate::lab::evidence;
use crate::lab::files::SIDE_SUFFIXES;
use crate::lab::scenario::Scenario;
use crate::lab::Lab;

pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    lab: &Lab,
    scenarios: &[Scenario],
    keep_db: bool,
    rows: Option<&[Row]>,
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
    for scenario in scenarios {
        for step in &scenario.steps {
            let (out, err) = output_files(scenario, step);
            expected.insert(out);
            expected.insert(err);
        }
        if keep_db {
            if let Some(rows) = rows {
                expected.extend(kept_scenario(report, tree, lab, scenario, rows));
            }
        }
    }
    for rel in tree.files() {
        if !expected.contains(rel) {
            let why = if rel.starts_with("db/") && !keep_db {
                "a kept database, but the command has no --keep-db"
            } else {
                "not a file this run writes"
            };
            report.problem(rel, why);
        }
    }
}

/// `db/` or `db/<scenario>/`: where `--keep-db` puts a scenario's files.
fn kept_dir(scenario: &Scenario) -> String {
    match &scenario.dir {
        Some(sub) => format!("db/{sub}/"),
        None => "db/".to_string(),
    }
}

/// Check one scenario's kept files against its last rows; returns the files it may keep.
fn kept_scenario(
    report: &mut Report,
    tree: &Tree,
    lab: &Lab,
    scenario: &Scenario,
    rows: &[Row],
) -> Vec<String> {
    let mut may = Vec::new();
    let Some(last) = scenario.steps.last() else {
        return may;
    };
    let dir = kept_dir(scenario);
    let row = |file: &str| {
        rows.iter()
            .find(|r| r.scenario == scenario.name && r.after_step == last.name && r.file == file)
    };
    for db in lab.databases {
        let rel = format!("{dir}{db}");
        for suffix in SIDE_SUFFIXES {
            let side = format!("{rel}{suffix}");
            match (row(&format!("{db}{suffix}")), tree.get(&side)) {
                (Some(r), Some(bytes)) => {
                    may.push(side.clone());
                    same_bytes(report, &side, bytes, r);
                }
                (Some(_), None) => report.problem(&side, "missing, though the last step left it"),
                (None, _) => {}
            }
        }
        let Some(r) = row(db) else {
            continue;
        };
        may.push(rel.clone());
        match (r.exists, tree.get(&rel)) {
            (true, Some(bytes)) => {
                same_bytes(report, &rel, bytes, r);
                let wal = tree.get(&format!("{rel}-wal"));
                match logical_sha256(bytes, wal) {
                    Ok(digest) if Some(&digest) == r.logical_sha256.as_ref() => {}
                    Ok(_) => report.problem(
                        &rel,
                        format!("its rows differ from the last recorded logical_sha256 of {db}"),
                    ),
                    Err(e) => report.problem(&rel, format!("not a readable database: {e:#}")),
                }
            }
            (true, None) => report.problem(&rel, "missing, though the last step left it"),
            (false, Some(_)) => {
                report.problem(&rel, "kept, though the last step left no such file")
            }
            (false, None) => {}
        }
    }
    may
}

fn same_bytes(report: &mut Report, rel: &str, bytes: &[u8], row: &Row) {
    use sha2::{Digest, Sha256};
    let sha = crate::outbox::model::hex(&Sha256::digest(bytes));
    if row.sha256.as_deref() != Some(sha.as_str()) {
        report.problem(
            rel,
            format!(
                "sha256 {sha} is not the last recorded one of {} in database-files.json",
                row.file
            ),
        );
    }
}

/// The logical digest of a database given as bytes (and its WAL's), read from a private
/// copy: the evidence is never opened by SQLite, so never touched.
pub(super) fn logical_sha256(db: &[u8], wal: Option<&[u8]>) -> Result<String> {
    let scratch = tempfile::tempdir().context("a scratch directory")?;
    let copy = scratch.path().join("copy.db");
    write(&copy, db)?;
    if let Some(wal) = wal {
        write(&scratch.path().join("copy.db-wal"), wal)?;
    }
    crate::lab::files::logical_sha256(&copy)
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
