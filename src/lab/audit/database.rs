//! Check 4: database-files.json against the steps, and kept databases against their rows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::Report;
use crate::lab::evidence;
use crate::lab::files::{sha256_file, FileRow};
use crate::lab::scenario::{Expect, Step};
use crate::lab::Lab;

/// Databases kept with `--keep-db` must be the files the last row of each describes: the
/// same raw bytes, and the same rows (logical digest, read without touching them).
pub(super) fn check_kept(
    report: &mut Report,
    dir: &Path,
    lab: &Lab,
    scenarios: &[crate::lab::scenario::Scenario],
    rows: &[FileRow],
) {
    for scenario in scenarios {
        let kept = match &scenario.dir {
            Some(sub) => dir.join("db").join(sub),
            None => dir.join("db"),
        };
        if !kept.is_dir() {
            continue;
        }
        for db in lab.databases {
            let rel = match &scenario.dir {
                Some(sub) => format!("db/{sub}/{db}"),
                None => format!("db/{db}"),
            };
            let last = rows
                .iter()
                .rev()
                .find(|r| r.scenario == scenario.name && r.file == *db);
            let path = kept.join(db);
            match (last, path.is_file()) {
                (Some(row), true) => {
                    if let Ok((_, sha)) = sha256_file(&path) {
                        if row.sha256.as_deref() != Some(sha.as_str()) {
                            report.problem(&rel, format!("sha256 {sha} is not the last recorded one of {db} in database-files.json"));
                        }
                    }
                    let logical = crate::lab::files::logical_sha256_of_copy(&path).ok();
                    if logical != row.logical_sha256 {
                        report.problem(
                            &rel,
                            format!(
                                "its rows differ from the last recorded logical_sha256 of {db}"
                            ),
                        );
                    }
                }
                (Some(row), false) if row.exists => {
                    report.problem(&rel, "missing, though the last step left it")
                }
                _ => {}
            }
        }
    }
}

/// Check 4: a row for every database after every step; readbacks leave logical digests alone.
pub(super) fn check_database_files(
    report: &mut Report,
    lab: &Lab,
    steps: &[(&str, &Step)],
    rows: &[FileRow],
) {
    const F: &str = evidence::DATABASE_FILES;
    let mut by_step: BTreeMap<(&str, &str, &str), &FileRow> = BTreeMap::new();
    for row in rows {
        by_step.insert(
            (
                row.scenario.as_str(),
                row.after_step.as_str(),
                row.file.as_str(),
            ),
            row,
        );
    }
    let known: BTreeSet<(&str, &str)> = steps
        .iter()
        .map(|(s, step)| (*s, step.name.as_str()))
        .collect();
    for row in rows {
        if !known.contains(&(row.scenario.as_str(), row.after_step.as_str())) {
            report.problem(
                F,
                format!("row for unknown step {}/{}", row.scenario, row.after_step),
            );
        }
    }
    let mut previous: Option<(&str, &str)> = None;
    for (scenario, step) in steps {
        for db in lab.databases {
            let Some(row) = by_step.get(&(*scenario, step.name.as_str(), *db)) else {
                report.problem(F, format!("no row for {db} after step {}", step.name));
                continue;
            };
            let hex = |v: &Option<String>| {
                v.as_ref()
                    .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            };
            if row.exists && (!hex(&row.sha256) || !hex(&row.logical_sha256) || row.bytes == 0) {
                report.problem(
                    F,
                    format!(
                        "{db} after {}: exists but lacks a well-formed size or digest",
                        step.name
                    ),
                );
            }
            if row.exists && (row.sha256.is_none() || row.logical_sha256.is_none()) {
                report.problem(
                    F,
                    format!("{db} after {}: exists but lacks a digest", step.name),
                );
            }
            let is_readback = matches!(step.expect, Expect::Readback(_));
            if let (true, Some((prev_scenario, prev_step))) = (is_readback, previous) {
                if prev_scenario == *scenario {
                    let before = by_step
                        .get(&(prev_scenario, prev_step, *db))
                        .and_then(|r| r.logical_sha256.as_ref());
                    if before != row.logical_sha256.as_ref() {
                        report.problem(
                            F,
                            format!("{db}: logical_sha256 changed across readback step {} (readbacks are read-only)", step.name),
                        );
                    }
                }
            }
        }
        previous = Some((scenario, step.name.as_str()));
    }
}
