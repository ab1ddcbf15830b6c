//! A power-loss run's cuts (`power-cuts.jsonl`): one line per crashed step, in step order,
//! each the cut the recorded command asks for (style, seed), naming only plain paths inside
//! the work directory and never the undo log; and what each cut left is what the snapshot
//! taken right after it recorded: every database or side file the cut names has, in
//! `database-files.json`'s row for that step, the size the cut says it left (absent when the
//! cut removed it). The undo log itself is not evidence (it holds the old bytes of every
//! write): the audit checks its recorded effect, not the log.

use serde_json::Value;

use super::tree::Tree;
use super::Report;
use crate::engine::evidence::Process;
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::engine::scenario::{Scenario, Step};
use crate::engine::state::FileRow;
use crate::power::cut::Style;

const F: &str = POWER_CUTS_NAME;

/// Check the cuts of a driver run cut in `style` seeded `seed`; `steps` in the run's order
/// with their records. Returns the file's name, a file this run writes.
pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    (style, seed): (Style, u64),
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
    rows: Option<&[FileRow]>,
) -> String {
    let Some(text) = tree.text(report, F) else {
        return F.to_string();
    };
    // The crashed steps: armed, and ended as the cut's SIGKILL ends them.
    let crashed: Vec<(&Scenario, &Step)> = steps
        .iter()
        .filter(|(scenario, step)| {
            let record = processes
                .iter()
                .find(|p| p.scenario == scenario.name && p.step == step.name);
            step.crash.is_some() && record.is_some_and(|r| r.exit == r.expected_exit)
        })
        .copied()
        .collect();
    let cuts = parse_lines(report, &text);
    if cuts.len() != crashed.len() {
        report.problem(
            F,
            format!("{} cuts, but {} steps crashed", cuts.len(), crashed.len()),
        );
    }
    for (at, (cut, (scenario, step))) in cuts.into_iter().zip(&crashed).enumerate() {
        let label = format!("line {}", at + 1);
        let Some(cut) = cut else {
            continue;
        };
        let want = [
            ("scenario", Value::from(scenario.name.as_str())),
            ("step", Value::from(step.name.as_str())),
            ("point", Value::from(step.crash_point().unwrap_or_default())),
            ("cut", Value::from(style.name())),
            ("seed", Value::from(seed)),
        ];
        for (key, value) in want {
            if cut[key] != value {
                report.problem(F, format!("{label}: {key} {}, expected {value}", cut[key]));
            }
        }
        let Some(files) = cut["files"].as_array() else {
            report.problem(F, format!("{label}: no list of files"));
            continue;
        };
        for file in files {
            let Some(path) = file["path"].as_str() else {
                report.problem(F, format!("{label}: a file without a path"));
                continue;
            };
            let plain = !path.is_empty()
                && !path.starts_with('/')
                && path
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..");
            if !plain || path.starts_with("power-undo") {
                report.problem(
                    F,
                    format!(
                        "{label}: '{path}' is not a file of the work directory the cut may change"
                    ),
                );
                continue;
            }
            let Some(rows) = rows else { continue };
            let row = rows.iter().find(|r| {
                r.scenario == scenario.name && r.after_step == step.name && r.file == path
            });
            let Some(row) = row else { continue };
            let left = file["size_after"].as_u64();
            let recorded = row.exists.then_some(row.bytes);
            if left != recorded {
                report.problem(
                    F,
                    format!(
                        "{label}: the cut left {path} at {left:?} bytes, the snapshot after {} records {recorded:?}",
                        step.name
                    ),
                );
            }
        }
    }
    F.to_string()
}

/// Each line of the cuts file as JSON, in order; a line that is not JSON is reported and
/// kept as `None`, so the lines after it keep their numbers.
fn parse_lines(report: &mut Report, text: &str) -> Vec<Option<Value>> {
    let mut cuts = Vec::new();
    for (at, line) in text.lines().enumerate() {
        match serde_json::from_str(line) {
            Ok(v) => cuts.push(Some(v)),
            Err(e) => {
                report.problem(F, format!("line {}: not JSON: {e}", at + 1));
                cuts.push(None);
            }
        }
    }
    cuts
}

/// A chaos run's cuts: each follows the kills of one poll (the moments due then and the
/// roles killed with them), every row of `kills.json` exactly one cut's, in order; each in
/// the style and seed the command gives, naming only plain files of the work directory.
pub(super) fn check_chaos(
    report: &mut Report,
    tree: &Tree,
    (style, seed): (Style, u64),
    kills: &[crate::engine::load::kills::Kill],
) -> String {
    let Some(text) = tree.text(report, F) else {
        return F.to_string();
    };
    let mut next = 1u64;
    for (at, cut) in parse_lines(report, &text).into_iter().enumerate() {
        let label = format!("line {}", at + 1);
        let Some(cut) = cut else {
            continue;
        };
        let rows: Vec<u64> = cut["kills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect();
        let want: Vec<u64> = (next..next + rows.len() as u64).collect();
        if rows.is_empty() || rows != want || kills.get(next as usize - 1).is_some_and(|k| k.cut) {
            report.problem(
                F,
                format!("{label}: follows kills {rows:?}, expected the next kill moment from kill {next}"),
            );
        }
        next += rows.len() as u64;
        for (key, value) in [
            ("cut", Value::from(style.name())),
            ("seed", Value::from(seed)),
        ] {
            if cut[key] != value {
                report.problem(F, format!("{label}: {key} {}, expected {value}", cut[key]));
            }
        }
        for file in cut["files"].as_array().into_iter().flatten() {
            let path = file["path"].as_str().unwrap_or_default();
            if !plain(path) {
                report.problem(
                    F,
                    format!(
                        "{label}: '{path}' is not a file of the work directory the cut may change"
                    ),
                );
            }
        }
    }
    if next as usize != kills.len() + 1 {
        report.problem(
            F,
            format!(
                "the cuts follow {} kills, kills.json has {}",
                next - 1,
                kills.len()
            ),
        );
    }
    F.to_string()
}

/// A path a cut may name: relative, plain, not the undo log or its stash.
fn plain(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with("power-undo")
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}
