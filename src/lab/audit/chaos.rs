//! A chaos run's evidence: exits against kills.json, and chaos.json's claims re-derived from
//! the kept databases.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::read::read_json;
use super::{Report, CHAOS, KILLS};
use crate::fail;
use crate::lab::evidence::{self, Processes};

/// A chaos run: every process ended as the driver expected (0, or SIGKILL where kills.json
/// says the driver killed it), and the claims of chaos.json are re-derived from the kept
/// databases (read from a private copy, so the evidence is never touched) by the same check
/// the run used.
pub(super) fn check_chaos(report: &mut Report, dir: &Path, processes: &Processes) {
    const P: &str = evidence::PROCESSES;
    report.kind = "chaos".to_string();
    report.lab = Some(processes.lab.clone());
    report.processes = processes.processes.len();
    let Some(chaos): Option<serde_json::Value> = read_json(report, dir, CHAOS) else {
        return;
    };
    let kills: Vec<serde_json::Value> = read_json(report, dir, KILLS).unwrap_or_default();
    let killed: BTreeSet<String> = kills
        .iter()
        .filter(|k| k["landed"] == true)
        .filter_map(|k| k["step"].as_str().map(str::to_string))
        .collect();
    report.crashes = killed.len();
    for record in &processes.processes {
        let by_driver = killed.contains(&record.step);
        let expected_exit = if by_driver {
            128 + libc::SIGKILL
        } else {
            fail::EXIT_OK
        };
        let busy = record.exit == fail::EXIT_LOCKED && !by_driver;
        if record.exit != expected_exit && !busy {
            report.problem(
                P,
                format!(
                    "{}: exit {}, expected {expected_exit}",
                    record.step, record.exit
                ),
            );
        }
        if record.expected_exit != expected_exit && !busy {
            report.problem(
                P,
                format!(
                    "{}: expected_exit {} disagrees with kills.json",
                    record.step, record.expected_exit
                ),
            );
        }
        if record.timed_out {
            report.problem(P, format!("{}: killed after its timeout", record.step));
        }
    }
    for step in &killed {
        if !processes
            .processes
            .iter()
            .any(|p| &p.step == step && p.signal == Some(libc::SIGKILL))
        {
            report.problem(
                KILLS,
                format!("kill of {step} has no process ended by SIGKILL"),
            );
        }
    }
    let (Some(messages), Some(seed)) = (chaos["messages"].as_u64(), chaos["seed"].as_u64()) else {
        report.problem(CHAOS, "lacks messages or seed");
        return;
    };
    let scratch = match tempfile::tempdir() {
        Ok(s) => s,
        Err(e) => {
            report.problem(".", format!("no scratch directory: {e}"));
            return;
        }
    };
    for db in ["sender.db", "queue.db", "receiver.db"] {
        for suffix in ["", "-wal"] {
            let rel = format!("db/{db}{suffix}");
            let from = dir.join(&rel);
            if from.is_file() {
                if let Err(e) = fs::copy(&from, scratch.path().join(format!("{db}{suffix}"))) {
                    report.problem(&rel, format!("unreadable: {e}"));
                }
            } else if suffix.is_empty() {
                report.problem(&rel, "missing: the claims cannot be re-checked");
                return;
            }
        }
    }
    let check = match crate::load::chaos::check(scratch.path(), messages as usize, seed) {
        Ok(c) => c,
        Err(e) => {
            report.problem(
                "db/",
                format!("cannot read the databases: {}", fail::one_line(&e)),
            );
            return;
        }
    };
    for problem in &check.problems {
        report.problem(
            "db/receiver.db",
            format!("the kept databases show: {problem}"),
        );
    }
    let recorded = &chaos["check"];
    let derived = match serde_json::to_value(&check) {
        Ok(v) => v,
        Err(e) => {
            report.problem(CHAOS, format!("{e}"));
            return;
        }
    };
    for key in [
        "contracts",
        "inbox",
        "ledger",
        "ledger_expected",
        "outbox_pending",
        "queue_pending",
        "physical_deliveries",
        "duplicate_deliveries",
        "duplicates_suppressed",
        "lost_effects",
        "duplicated_effects",
        "wrong_balances",
    ] {
        if recorded[key] != derived[key] {
            report.problem(
                CHAOS,
                format!(
                    "check.{key} is {}, the kept databases give {}",
                    recorded[key], derived[key]
                ),
            );
        }
    }
    if chaos["ok"] != serde_json::json!(check.problems.is_empty()) {
        report.problem(
            CHAOS,
            format!(
                "ok is {}, the kept databases say {}",
                chaos["ok"],
                check.problems.is_empty()
            ),
        );
    }
    report.summary = format!(
        "chaos {}, {messages} messages, {} processes, {} kills, {} lost, {} duplicated, claims, hashes",
        processes.lab.split('-').next().unwrap_or("?"),
        processes.processes.len(),
        killed.len(),
        check.lost_effects,
        check.duplicated_effects
    );
}
