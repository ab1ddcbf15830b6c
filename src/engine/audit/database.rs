//! database-files.json: exactly the rows the driver writes (every database of the lab after
//! every step of every scenario and once more after the scenario's end, in order, each
//! followed by the side files that existed), each well formed, each naming the background
//! steps that were frozen while it was taken, all consistent with one another, and no
//! readback changing a database.

use std::collections::BTreeMap;

use super::tree::Tree;
use super::Report;
use crate::engine::evidence;
use crate::engine::scenario::{Expect, Scenario, Step};
use crate::engine::state::{FileRow, END};
use crate::engine::LabStack;

const F: &str = evidence::DATABASE_FILES;
/// Problems reported for the order of rows: one edit shifts everything after it.
const ORDER_PROBLEMS_MAX: usize = 10;

pub(super) fn load(report: &mut Report, tree: &Tree) -> Option<Vec<FileRow>> {
    tree.json(report, F)
}

/// The snapshots of a scenario: after each step, then `<end>`.
fn snapshots(scenario: &Scenario) -> impl Iterator<Item = &str> {
    scenario
        .steps
        .iter()
        .map(|s| s.name.as_str())
        .chain(std::iter::once(END))
}

/// `ready` holds (scenario, step) of each background step whose stdout shows its ready line:
/// the driver waited for that line, so from then on it was running.
pub(super) fn check_rows(
    report: &mut Report,
    lab: &LabStack,
    scenarios: &[Scenario],
    rows: &[FileRow],
    ready: &std::collections::BTreeSet<(String, String)>,
) {
    order(report, lab, scenarios, rows);
    for (index, row) in rows.iter().enumerate() {
        well_formed(report, lab, index, row);
    }
    frozen(report, scenarios, rows, ready);
    // What one raw digest may hold is the store's to say (the same file and WAL, one content).
    for problem in lab.store.rows_problems(lab.databases, rows) {
        report.problem(F, problem);
    }
    readbacks_write_nothing(report, lab, scenarios, rows);
}

/// The rows in the driver's order: per scenario, per step, per database, then its side files
/// in the store's order (SQLite: `-wal`, `-journal`), those that existed.
fn order(report: &mut Report, lab: &LabStack, scenarios: &[Scenario], rows: &[FileRow]) {
    let mut at = 0usize;
    let mut said = 0usize;
    let mut say = |report: &mut Report, text: String| {
        said += 1;
        if said <= ORDER_PROBLEMS_MAX {
            report.problem(F, text);
        }
    };
    let key = |r: &FileRow| format!("{}/{} {}", r.scenario, r.after_step, r.file);
    for scenario in scenarios {
        for step in snapshots(scenario) {
            for db in lab.databases {
                let want = format!("{}/{step} {db}", scenario.name);
                match rows.get(at) {
                    Some(r) if key(r) == want => at += 1,
                    _ => {
                        // Rows before the one expected are extra; a row never found was dropped.
                        match rows[at.min(rows.len())..]
                            .iter()
                            .position(|r| key(r) == want)
                        {
                            Some(skip) => {
                                for r in &rows[at..at + skip] {
                                    say(
                                        report,
                                        format!(
                                            "row {} ({}) is not where the run writes it",
                                            at + 1,
                                            key(r)
                                        ),
                                    );
                                    at += 1;
                                }
                                at += 1;
                            }
                            None => {
                                say(
                                    report,
                                    format!("no row for {db} after {}/{step}", scenario.name),
                                );
                                continue;
                            }
                        }
                    }
                }
                let mut last_suffix: Option<usize> = None;
                while let Some(r) = rows.get(at) {
                    let Some(suffix) = lab
                        .store
                        .side_suffixes()
                        .iter()
                        .position(|s| key(r) == format!("{want}{s}"))
                    else {
                        break;
                    };
                    if last_suffix.is_some_and(|l| l >= suffix) {
                        say(
                            report,
                            format!(
                                "row {} ({}) repeats or reorders a side file",
                                at + 1,
                                key(r)
                            ),
                        );
                    }
                    last_suffix = Some(suffix);
                    at += 1;
                }
            }
        }
    }
    for (i, r) in rows.iter().enumerate().skip(at) {
        say(
            report,
            format!("row {} ({}) is not one the run writes", i + 1, key(r)),
        );
    }
    if said > ORDER_PROBLEMS_MAX {
        report.problem(
            F,
            format!("and {} more rows out of place", said - ORDER_PROBLEMS_MAX),
        );
    }
}

fn well_formed(report: &mut Report, lab: &LabStack, index: usize, row: &FileRow) {
    let at = format!("row {} ({} after {})", index + 1, row.file, row.after_step);
    let Some((_, part)) = lab.store.part(&row.file, lab.databases) else {
        report.problem(F, format!("{at}: not a file of lab {}", lab.full_name()));
        return;
    };
    for problem in lab.store.row_problems(row, part) {
        report.problem(F, format!("{at}: {problem}"));
    }
}

/// A readback opens every file read-only: each database holds the same rows before and after
/// it. (Not always the same bytes: pages and WAL frames may move, as the archives show,
/// while no row changes.)
fn readbacks_write_nothing(
    report: &mut Report,
    lab: &LabStack,
    scenarios: &[Scenario],
    rows: &[FileRow],
) {
    let mut by: BTreeMap<(&str, &str, &str), &FileRow> = BTreeMap::new();
    for r in rows {
        by.insert((&r.scenario, &r.after_step, &r.file), r);
    }
    for scenario in scenarios {
        for pair in scenario.steps.windows(2) {
            let (before, step) = (&pair[0], &pair[1]);
            if !matches!(step.expect, Expect::Readback(_)) {
                continue;
            }
            for db in lab.databases {
                let digest = |after: &str| {
                    by.get(&(scenario.name.as_str(), after, *db))
                        .and_then(|r| r.logical_sha256.as_ref())
                };
                if digest(&before.name) != digest(&step.name) {
                    report.problem(
                        F,
                        format!("{db}: logical_sha256 changed across readback step {} (readbacks are read-only)", step.name),
                    );
                }
            }
        }
    }
}

/// The background steps alive after step `at` of a scenario: started at or before it, ready,
/// and not yet stopped (a step with `stop_after` is stopped right after that step's snapshot).
fn alive_after(
    scenario: &Scenario,
    at: usize,
    ready: &std::collections::BTreeSet<(String, String)>,
) -> Vec<String> {
    let index = |name: &str| scenario.steps.iter().position(|s: &Step| s.name == name);
    scenario.steps[..=at]
        .iter()
        .filter(|s| {
            s.background.is_some_and(|b| {
                b.stop_after
                    .is_none_or(|after| index(after).is_some_and(|i| i >= at))
            }) && ready.contains(&(scenario.name.clone(), s.name.clone()))
        })
        .map(|s| s.name.clone())
        .collect()
}

/// Each row names exactly the background steps the driver stopped while taking it; none at
/// `<end>`, when every process of the scenario has ended.
fn frozen(
    report: &mut Report,
    scenarios: &[Scenario],
    rows: &[FileRow],
    ready: &std::collections::BTreeSet<(String, String)>,
) {
    for scenario in scenarios {
        for (at, name) in snapshots(scenario).enumerate() {
            let want = if name == END {
                Vec::new()
            } else {
                alive_after(scenario, at, ready)
            };
            for r in rows
                .iter()
                .filter(|r| r.scenario == scenario.name && r.after_step == name)
            {
                if r.frozen != want {
                    report.problem(
                        F,
                        format!(
                            "rows after {}/{name}: frozen {:?}, but the steps running then were {want:?}",
                            scenario.name, r.frozen
                        ),
                    );
                }
            }
        }
    }
}
