//! An explore run under `--cut exhaustive`: each case's `states.json` holds the undo log's
//! records at its cut (`log`) and the bounds its states were enumerated in; the audit
//! enumerates them again and holds the recorded counts to what it gets (states, total,
//! bounded, the unsynced acts). Each state kept under `states/<k>/` says in its
//! `power-cuts.jsonl` which acts it kept, dropped and tore; they must be state k's of that
//! enumeration, and what it did to each file must be what they give (`cuts::same_as_derived`).
//! Which states gave identical images, and how each state's run ended, are attested.

use serde_json::Value;

use super::cuts::{derived_of, same_as_derived};
use super::tree::Tree;
use super::Report;
use crate::power::cut::derive::How;
use crate::power::cut::record::Entry;
use crate::power::cut::SECTOR_BYTES;
use crate::power::states::{self, Act, Bounds, Fate, MAX_STATES_MAX};

/// What no record of a state can prove, shown by the audit.
pub(super) const ATTESTED: &str = "states.json unique, run and broke (each state's images \
and how its run ended)";

/// Check every case's states; true when the run has any (an exhaustive run).
pub(super) fn check(report: &mut Report, tree: &Tree) -> bool {
    let cases: Vec<String> = tree
        .files()
        .filter_map(|f| f.strip_suffix("/states.json"))
        .map(str::to_string)
        .collect();
    for case in &cases {
        check_case(report, tree, case);
    }
    !cases.is_empty()
}

fn check_case(report: &mut Report, tree: &Tree, case: &str) {
    let file = format!("{case}/states.json");
    let Some(record) = tree.json::<Value>(report, &file) else {
        return;
    };
    let bounds = Bounds {
        max_states: record["max_states"].as_u64().unwrap_or(0) as usize,
        seed: record["seed"].as_u64().unwrap_or(0),
        tear: record["tear"].as_bool().unwrap_or(true),
    };
    if !(1..=MAX_STATES_MAX).contains(&bounds.max_states) {
        report.problem(
            &file,
            format!("max_states {} is out of range", record["max_states"]),
        );
        return;
    }
    let log: Vec<Entry> = match serde_json::from_value(record["log"].clone()) {
        Ok(log) => log,
        Err(e) => {
            report.problem(&file, format!("log is no undo log record: {e}"));
            return;
        }
    };
    let every_lost = How::Seeded(crate::power::cut::Style::Drop, 0);
    let Some(derived) = derived_of(report, &file, "its log", &record, every_lost) else {
        return;
    };
    // The unsynced acts, as the enumeration sees them: each one's file and sectors.
    let acts: Vec<Act> = derived
        .unsynced
        .iter()
        .map(|&i| {
            let e = &log[i];
            let file = log.iter().position(|x| x.path == e.path).unwrap_or(i) as u32;
            let sectors = match (e.op.as_str(), e.offset, e.len) {
                ("write", Some(o), Some(l)) => (o + l - 1) / SECTOR_BYTES - o / SECTOR_BYTES + 1,
                _ => 0,
            };
            Act { file, sectors }
        })
        .collect();
    let named: Vec<Value> = derived
        .unsynced
        .iter()
        .map(|&i| serde_json::json!({"record": i, "op": log[i].op, "path": log[i].path}))
        .collect();
    if record["acts"] != Value::from(named) {
        report.problem(&file, "acts are not the unsynced acts its log gives");
    }
    let space = states::enumerate(&acts, bounds);
    let summary = &record["summary"];
    let want = [
        ("unsynced", Value::from(acts.len())),
        ("enumerated", Value::from(space.states.len())),
        ("bounded", Value::from(space.bounded)),
        ("exact", Value::from(space.exact)),
        ("states", Value::from(space.describe())),
    ];
    for (key, value) in want {
        if summary[key] != value {
            report.problem(
                &file,
                format!("summary {key} {}, its log gives {value}", summary[key]),
            );
        }
    }
    let in_space = |v: &Value| {
        v.as_u64()
            .is_some_and(|k| (k as usize) < space.states.len())
    };
    for broken in summary["broken"].as_array().into_iter().flatten() {
        if !in_space(broken) {
            report.problem(
                &file,
                format!("broken state {broken} is no state of its log"),
            );
        }
    }
    let dirs: Vec<String> = tree
        .files()
        .filter_map(|f| f.strip_prefix(&format!("{case}/states/")))
        .filter_map(|rest| rest.strip_suffix("/power-cuts.jsonl"))
        .map(str::to_string)
        .collect();
    for k in dirs {
        let line_file = format!("{case}/states/{k}/power-cuts.jsonl");
        let Some(text) = tree.text(report, &line_file) else {
            continue;
        };
        let Ok(mut cut) = serde_json::from_str::<Value>(text.trim_end()) else {
            report.problem(&line_file, "not one JSON line");
            continue;
        };
        let index = cut["state"].as_u64().map(|i| i as usize);
        let Some(fates) = index
            .filter(|i| Some(*i) == k.parse().ok())
            .and_then(|i| space.states.get(i))
        else {
            report.problem(
                &line_file,
                format!("state {} is not state {k} of its log", cut["state"]),
            );
            continue;
        };
        let (mut kept, mut dropped, mut torn) = (Vec::new(), Vec::new(), Vec::new());
        for (&at, fate) in derived.unsynced.iter().zip(fates) {
            match fate {
                Fate::Kept => kept.push(Value::from(at)),
                Fate::Dropped => dropped.push(Value::from(at)),
                Fate::Torn(s) => torn.push(serde_json::json!([at, s])),
            }
        }
        for (key, value) in [("kept", kept), ("dropped", dropped), ("torn", torn)] {
            if cut[key] != Value::from(value.clone()) {
                report.problem(
                    &line_file,
                    format!(
                        "{key} {}, state {k} of its log gives {}",
                        cut[key],
                        Value::from(value)
                    ),
                );
            }
        }
        cut["log"] = record["log"].clone();
        let label = format!("state {k}");
        if let Some(d) = derived_of(report, &line_file, &label, &cut, How::State(fates)) {
            same_as_derived(report, &line_file, &label, &cut, &d);
        }
    }
}
