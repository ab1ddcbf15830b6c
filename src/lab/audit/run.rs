//! Checks 2 and 3: every process against the lab's own scenarios, and every step's recorded
//! result against what its raw output shows.

use std::path::Path;

use super::read::read_text;
use super::{database, Report};
use crate::crash::Mode;
use crate::fail;
use crate::lab::check::check;
use crate::lab::driver::apply_moves;
use crate::lab::evidence::{self, Processes, Results};
use crate::lab::files::FileRow;
use crate::lab::scenario::{Expect, Step};
use crate::lab::Lab;

fn parse_mode(name: &str) -> Option<Mode> {
    [Mode::Exit, Mode::Abort, Mode::Kill, Mode::Hang]
        .into_iter()
        .find(|m| m.name() == name)
}

/// Checks 2, 3 and 4, against the lab's own scenario definitions.
pub(super) fn check_run(
    report: &mut Report,
    dir: &Path,
    lab: &Lab,
    processes: &Processes,
    results: Option<&Results>,
    rows: Option<&[FileRow]>,
) {
    const P: &str = evidence::PROCESSES;
    report.lab = Some(lab.full_name());
    report.study = processes.moved_crashes.clone();
    let Some(mode) = parse_mode(&processes.crash_mode) else {
        report.problem(P, format!("unknown crash_mode '{}'", processes.crash_mode));
        return;
    };
    let mut scenarios = (lab.scenarios)();
    if let Err(e) = apply_moves(lab, &mut scenarios, &processes.moved_crashes) {
        report.problem(P, format!("moved_crashes: {}", fail::one_line(&e)));
        return;
    }
    let steps: Vec<(&str, &Step)> = scenarios
        .iter()
        .flat_map(|s| s.steps.iter().map(move |step| (s.name.as_str(), step)))
        .collect();
    let study = !processes.moved_crashes.is_empty();
    if processes.processes.len() != steps.len() {
        report.problem(
            P,
            format!(
                "{} processes recorded, the lab's scenarios have {} steps",
                processes.processes.len(),
                steps.len()
            ),
        );
    }
    if let Some(r) = results {
        if r.steps.len() != steps.len() {
            report.problem(
                evidence::RESULTS,
                format!("{} steps recorded, expected {}", r.steps.len(), steps.len()),
            );
        }
    }
    report.processes = processes.processes.len();
    let mut recomputed_ok = true;
    for (index, record) in processes.processes.iter().enumerate() {
        let Some((scenario, step)) = steps.get(index).copied() else {
            break;
        };
        let at = format!("{P}: process {} ({})", index + 1, record.step);
        if record.scenario != scenario || record.step != step.name {
            report.problem(
                P,
                format!(
                    "process {} is {}/{}, the lab says {scenario}/{}",
                    index + 1,
                    record.scenario,
                    record.step,
                    step.name
                ),
            );
            continue;
        }
        let mut argv = vec!["crashlab".to_string()];
        argv.extend(step.argv(mode));
        if record.argv != argv {
            report.problem(
                P,
                format!("{at}: argv {:?} is not the lab's {:?}", record.argv, argv),
            );
        }
        if record.crash_point != step.crash {
            report.problem(
                P,
                format!(
                    "{at}: crash_point {:?}, the lab says {:?}",
                    record.crash_point, step.crash
                ),
            );
        }
        // Check 2: the exit code against the expectation (the lab's, not a recorded copy).
        let expected_exit = if step.crash.is_some() {
            mode.expected_exit()
        } else {
            step.expected_exit
        };
        if record.expected_exit != expected_exit {
            report.problem(
                P,
                format!(
                    "{at}: expected_exit {} is not the lab's {expected_exit}",
                    record.expected_exit
                ),
            );
        }
        let stdout = read_text(report, dir, &record.stdout);
        let stderr = read_text(report, dir, &record.stderr);
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            recomputed_ok = false;
            continue;
        };
        // Checks 2 and 3 from raw output, by the driver's own checker.
        let verdict = check(step, mode, record.exit, record.timed_out, &stdout, &stderr);
        // The PASS line counts what the raw output shows happened, not what was armed.
        if verdict.observed["crash_line"] == serde_json::json!(true) {
            report.crashes += 1;
        }
        if step.expected_exit == fail::EXIT_CONFLICT
            && verdict.observed["output"] == serde_json::json!(true)
        {
            report.conflicts += 1;
        }
        let file = match step.expect {
            Expect::Readback(_) | Expect::Crash | Expect::Output(_) => record.stdout.as_str(),
            Expect::Exit => P,
        };
        recomputed_ok &= verdict.problems.is_empty();
        let recorded = results.and_then(|r| r.steps.get(index));
        if let Some(recorded) = recorded {
            if recorded.step != step.name
                || recorded.problems != verdict.problems
                || recorded.ok != verdict.problems.is_empty()
            {
                report.problem(
                    evidence::RESULTS,
                    format!(
                        "{}: recorded {:?}, the raw output shows {:?}",
                        step.name, recorded.problems, verdict.problems
                    ),
                );
            }
        }
        if !study {
            for problem in verdict.problems {
                let whose = if problem.starts_with("exit ") {
                    P
                } else {
                    file
                };
                report.problem(whose, format!("{}: {problem}", step.name));
            }
        }
    }
    if let Some(r) = results {
        if r.ok != recomputed_ok {
            report.problem(
                evidence::RESULTS,
                format!("ok is {}, the raw output says {recomputed_ok}", r.ok),
            );
        }
    }
    if let Some(rows) = rows {
        database::check_database_files(report, lab, &steps, rows);
        database::check_kept(report, dir, lab, &scenarios, rows);
    }
}
