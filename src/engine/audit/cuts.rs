//! A power-loss run's cuts (`power-cuts.jsonl`): one line per crashed step, in step order,
//! each the cut the recorded command asks for (style, seed), naming only plain paths inside
//! the work directory and never the undo log; and what each cut left is what the snapshot
//! taken right after it recorded: every database or side file the cut names has, in
//! `database-files.json`'s row for that step, the size the cut says it left (absent when the
//! cut removed it). The undo log's old bytes are not evidence; its records are (`log`, each
//! act without its bytes), and every other field of a line is derived from them again
//! (`power::cut::derive`): the unsynced acts, the prefix, each file's action, undone creates
//! and unlinks, dropped writes and byte ranges, its size after. What the record cannot give
//! is attested: the records themselves, a file's size before, a torn tail, and whether a
//! `-shm` file was there to remove (each must be one the cut may remove).

use std::collections::BTreeSet;

use serde_json::Value;

use super::tree::Tree;
use super::Report;
use crate::engine::evidence::Process;
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::engine::replay::Cut;
use crate::engine::scenario::{Scenario, Step};
use crate::engine::state::FileRow;
use crate::power::cut::derive::{derive, Derived, How};
use crate::power::cut::record::Entry;
use crate::power::cut::Style;

const F: &str = POWER_CUTS_NAME;

/// What no record of a cut can prove, shown by the audit.
pub(super) const ATTESTED: &str = "power-cuts.jsonl log (the undo log's records), first_record, \
torn_tail_bytes, size_before, the size_after of a restored file, and that each -shm file \
removed was there";

/// Check the cuts of a driver run cut in `style` seeded `seed`; `steps` in the run's order
/// with their records. Returns the file's name, a file this run writes, and each cut's
/// changed database files for the replay.
pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    (style, seed): (Style, u64),
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
    rows: Option<&[FileRow]>,
) -> (String, Vec<Cut>) {
    let mut changed = Vec::new();
    let Some(text) = tree.text(report, F) else {
        return (F.to_string(), changed);
    };
    report.attested.push(ATTESTED.to_string());
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
        // A driver's cut line holds exactly these: a key added is a claim nothing checks.
        for key in cut.as_object().into_iter().flat_map(|o| o.keys()) {
            if !DRIVER_CUT_KEYS.contains(&key.as_str()) {
                report.problem(F, format!("{label}: unknown key '{key}'"));
            }
        }
        let Some(files) = cut["files"].as_array() else {
            report.problem(F, format!("{label}: no list of files"));
            continue;
        };
        if let Some(derived) = derived_of(report, F, &label, &cut, How::Seeded(style, seed)) {
            same_as_derived(report, F, &label, &cut, &derived);
            changed.push(Cut {
                scenario: scenario.name.clone(),
                step: step.name.clone(),
                files: changed_databases(&derived),
            });
        }
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
    (F.to_string(), changed)
}

/// The keys of a driver's `power-cuts.jsonl` line: where the cut fell and what it did.
const DRIVER_CUT_KEYS: [&str; 13] = [
    "scenario",
    "step",
    "point",
    "cut",
    "seed",
    "prefix_at",
    "records",
    "first_record",
    "unsynced",
    "torn_tail_bytes",
    "files",
    "shm_removed",
    "log",
];

/// The cut a line's `log` and `first_record` give under `how`; None (and a problem) when
/// the line has no record the cut can be derived from.
pub(super) fn derived_of(
    report: &mut Report,
    file: &str,
    label: &str,
    cut: &Value,
    how: How<'_>,
) -> Option<Derived> {
    let log: Result<Vec<Entry>, _> = serde_json::from_value(cut["log"].clone());
    let (Ok(log), Some(first)) = (log, cut["first_record"].as_u64()) else {
        report.problem(
            file,
            format!("{label}: no log and first_record to derive the cut from"),
        );
        return None;
    };
    match derive(&log, first as usize, how) {
        Ok(d) => Some(d),
        Err(why) => {
            report.problem(file, format!("{label}: its log derives no cut: {why}"));
            None
        }
    }
}

/// Every field of a recorded cut the record gives must be what it gives.
pub(super) fn same_as_derived(
    report: &mut Report,
    file: &str,
    label: &str,
    cut: &Value,
    d: &Derived,
) {
    let mut differ = |what: String| report.problem(file, format!("{label}: {what}"));
    for (key, want) in [
        ("records", Value::from(d.records)),
        ("unsynced", Value::from(d.unsynced.len())),
    ] {
        if cut[key] != want {
            differ(format!("{key} {}, its log gives {want}", cut[key]));
        }
    }
    // Written for every cut (null but for `prefix`): a missing one is a changed one.
    if cut["prefix_at"] != serde_json::json!(d.prefix_at) {
        differ(format!(
            "prefix_at {}, its log and seed give {:?}",
            cut["prefix_at"], d.prefix_at
        ));
    }
    // A cut's files are a set: its log gives them by path, and the cut may list them in the
    // order it met them (two roles' files cut at one moment), so both are read by path.
    let mut files = cut["files"].as_array().cloned().unwrap_or_default();
    files.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut derived: Vec<_> = d.files.iter().collect();
    derived.sort_by(|a, b| a.path.cmp(&b.path));
    let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
    let want: Vec<&str> = derived.iter().map(|f| f.path.as_str()).collect();
    if paths != want {
        differ(format!("files {paths:?}, its log gives {want:?}"));
    }
    for (entry, w) in files.iter().zip(derived) {
        let before = entry["size_before"].as_u64();
        let action = entry["action"].as_str().unwrap_or_default();
        // `missing`: a file to roll back that was not on disk, which only the disk says.
        let action_ok = action == w.action
            || (action == "missing" && w.action == "rolled-back" && before.is_none());
        // A restored file starts as it was unlinked, a size no record gives (attested)
        // unless the cut set one.
        let size_after = match action {
            "removed" | "missing" => Some(None),
            "restored" => w.size.map(Some),
            _ => Some(w.size.or(before)),
        };
        let recorded_after = entry["size_after"].clone();
        let checks = [
            (
                "action",
                Value::from(action),
                Value::from(w.action),
                action_ok,
            ),
            (
                "undone",
                entry["undone"].clone(),
                serde_json::json!(w.undone),
                true,
            ),
            (
                "dropped_writes",
                entry["dropped_writes"].clone(),
                Value::from(w.dropped_writes),
                true,
            ),
            (
                "dropped_ranges",
                entry["dropped_ranges"].clone(),
                serde_json::json!(w.dropped_ranges),
                true,
            ),
            (
                "size_after",
                recorded_after.clone(),
                size_after.map_or(recorded_after, |v| serde_json::json!(v)),
                true,
            ),
        ];
        for (key, got, want, ok) in checks {
            if !ok || (key != "action" && got != want) {
                differ(format!("{} {key} {got}, its log gives {want}", w.path));
            }
        }
    }
    for shm in cut["shm_removed"].as_array().into_iter().flatten() {
        let name = shm.as_str().unwrap_or_default();
        if !d.shm.iter().any(|s| s == name) {
            differ(format!(
                "shm_removed names {shm}, which no file of its log has"
            ));
        }
    }
}

/// The database files a cut changed: each file it put anything back in, with its WAL and
/// journal counted as the database's.
fn changed_databases(d: &Derived) -> BTreeSet<String> {
    d.files
        .iter()
        .filter(|f| {
            f.action != "rolled-back" || !f.undone.is_empty() || !f.dropped_ranges.is_empty()
        })
        .map(|f| {
            let p = f.path.as_str();
            let db = p
                .strip_suffix("-wal")
                .or_else(|| p.strip_suffix("-journal"))
                .unwrap_or(p);
            db.to_string()
        })
        .collect()
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
/// the style and seed the command gives, naming only plain files of the work directory, and
/// every other field what its `log` gives under that style and seed.
pub(super) fn check_chaos(
    report: &mut Report,
    tree: &Tree,
    (style, seed): (Style, u64),
    kills: &[crate::engine::load::kills::Kill],
) -> String {
    let Some(text) = tree.text(report, F) else {
        return F.to_string();
    };
    report.attested.push(ATTESTED.to_string());
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
        if let Some(derived) = derived_of(report, F, &label, &cut, How::Seeded(style, seed)) {
            same_as_derived(report, F, &label, &cut, &derived);
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
