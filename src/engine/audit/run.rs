//! A driver run. The recorded command is parsed as the binary parses it, the lab's scenarios
//! are rebuilt from it (moves applied), and every process record must be exactly what the
//! driver gives that step; each step's raw output must be its own (output.rs) and is judged
//! again by the driver's own checker; results.json must be that judgement, field by field.

use super::command::{self, Parsed};
use super::output::{self, Ran, Which};
use super::tree::Tree;
use super::{database, kept, pictures, replayed, results, sequence, statements, Report};
use crate::crash::Mode;
use crate::engine::check::{check, Verdict};
use crate::engine::driver::{apply_moves, pragmas};
use crate::engine::evidence::{self, Process, Processes, Results};
use crate::engine::scenario::{readback_json, Expect, Scenario, Step};
use crate::fail;

const P: &str = evidence::PROCESSES;

/// What no file of a driver run can prove: shown by the audit, never checked.
const ATTESTED: &str = "processes.json wall_ms, max_rss_kb, total_wall_ms, git, crashlab_version, \
sqlite_version, the --out of command; database-files.json bytes and sha256 of files not kept";

pub(super) fn check_run(report: &mut Report, tree: &Tree) {
    report.attested = vec![ATTESTED.to_string()];
    let processes: Option<Processes> = tree.json(report, P);
    let results: Option<Results> = tree.json(report, evidence::RESULTS);
    let rows = database::load(report, tree);
    let Some(processes) = processes else {
        return;
    };
    let lab = match crate::labs::find(&processes.lab) {
        Ok(lab) if lab.full_name() == processes.lab => lab,
        Ok(lab) => {
            report.problem(
                P,
                format!(
                    "lab '{}' is not a full lab name ({})",
                    processes.lab,
                    lab.full_name()
                ),
            );
            return;
        }
        Err(e) => {
            report.problem(P, fail::one_line(&e));
            return;
        }
    };
    report.lab = Some(lab.full_name());
    report.study = processes.moved_crashes.clone();
    let command = match command::parse(&processes.command) {
        Ok(Parsed::Driver(d)) => d,
        Ok(Parsed::Chaos(_)) => {
            report.problem(P, "command is a chaos run; these are a driver run's files");
            return;
        }
        Err(e) => {
            report.problem(P, e);
            return;
        }
    };
    match crate::labs::find(&command.lab) {
        Ok(l) if l.full_name() == lab.full_name() => {}
        Ok(l) => report.problem(
            P,
            format!(
                "command runs lab {}, the record is lab {}",
                l.full_name(),
                lab.full_name()
            ),
        ),
        Err(e) => report.problem(P, format!("command: {}", fail::one_line(&e))),
    }
    if processes.moved_crashes != command.moves {
        report.problem(
            P,
            format!(
                "moved_crashes {:?}, but command moves {:?}",
                processes.moved_crashes, command.moves
            ),
        );
    }
    if processes.crash_mode != command.crash_mode.name() {
        report.problem(
            P,
            format!(
                "crash_mode '{}', but command runs --crash-mode {}",
                processes.crash_mode,
                command.crash_mode.name()
            ),
        );
    }
    if processes.step_timeout_ms != command.step_timeout_ms {
        report.problem(
            P,
            format!(
                "step_timeout_ms {}, but command gives {}",
                processes.step_timeout_ms, command.step_timeout_ms
            ),
        );
    }
    pinned_pragmas(report, &processes);
    let mode = command.crash_mode;
    let mut scenarios = (lab.scenarios)();
    if let Err(e) = apply_moves(lab, &mut scenarios, &command.moves) {
        report.problem(P, format!("command: {}", fail::one_line(&e)));
        return;
    }
    let steps: Vec<(&Scenario, &Step)> = scenarios
        .iter()
        .flat_map(|s| s.steps.iter().map(move |step| (s, step)))
        .collect();
    let names: Vec<String> = steps
        .iter()
        .map(|(s, step)| format!("{}/{}", s.name, step.name))
        .collect();
    let found: Vec<String> = processes
        .processes
        .iter()
        .map(|p| format!("{}/{}", p.scenario, p.step))
        .collect();
    for d in sequence::differences(&names, &found, 10) {
        report.problem(P, format!("processes: {d}"));
    }
    report.processes = processes.processes.len();
    let many = scenarios.len() > 1;
    let study = !command.moves.is_empty();
    let mut verdicts: Vec<Option<Verdict>> = Vec::with_capacity(steps.len());
    let mut preparer = statements::Preparer::new(&statements::schemas(lab))
        .expect("the lab's own schemas load into an in-memory database");
    // Background steps whose stdout shows the line the driver waited for.
    let mut ready = std::collections::BTreeSet::new();
    for (index, (scenario, step)) in steps.iter().enumerate() {
        let label = if many {
            format!("{}/{}", scenario.name, step.name)
        } else {
            step.name.clone()
        };
        let same = |p: &&Process| p.scenario == scenario.name && p.step == step.name;
        let record = processes
            .processes
            .get(index)
            .filter(same)
            .or_else(|| processes.processes.iter().find(same));
        let Some(record) = record else {
            verdicts.push(None);
            continue;
        };
        let (stdout_rel, stderr_rel) = output_files(scenario, step);
        check_record(
            report,
            record,
            step,
            mode,
            &label,
            (&stdout_rel, &stderr_rel),
        );
        let stdout = tree.text(report, &stdout_rel);
        let stderr = tree.text(report, &stderr_rel);
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            verdicts.push(None);
            continue;
        };
        if let Some(b) = step.background {
            if stdout.lines().any(|l| l.starts_with(b.ready)) {
                ready.insert((scenario.name.clone(), step.name.clone()));
            }
        }
        let ran = Ran {
            argv: &record.argv,
            exit: record.exit,
            signal: record.signal,
            timed_out: record.timed_out,
            stdout: &stdout,
            stderr: &stderr,
        };
        let mut problems = output::check(&ran, lab.points, &processes.pragmas);
        problems.extend(bound_to_step(&ran, step));
        problems.extend(
            preparer
                .check(&stdout)
                .into_iter()
                .map(|t| (Which::Stdout, t)),
        );
        for (which, text) in problems {
            let file = match which {
                Which::Stdout => stdout_rel.as_str(),
                Which::Stderr => stderr_rel.as_str(),
                Which::Record => P,
            };
            report.problem(file, format!("{label}: {text}"));
        }
        // The driver's own checker, on the raw output.
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
        if !study {
            let file = match step.expect {
                Expect::Readback(_) | Expect::Crash | Expect::Output(_) => stdout_rel.as_str(),
                Expect::Exit => P,
            };
            for problem in &verdict.problems {
                let whose = if problem.starts_with("exit ") {
                    P
                } else {
                    file
                };
                report.problem(whose, format!("{label}: {problem}"));
            }
        }
        verdicts.push(Some(verdict));
    }
    if let Some(r) = &results {
        results::compare(report, lab, &steps, r, &verdicts, many);
    }
    if let Some(rows) = &rows {
        database::check_rows(report, lab, &scenarios, rows, &ready);
    }
    let pictures = pictures::check(report, tree, &processes, results.as_ref());
    kept::check(
        report,
        tree,
        lab,
        &scenarios,
        command.keep_db,
        rows.as_deref(),
        pictures,
    );
    replayed::check(report, tree, lab, &steps, &scenarios, &processes, many);
}

/// The step's stdout and stderr, relative to DIR, as the driver names them.
pub(super) fn output_files(scenario: &Scenario, step: &Step) -> (String, String) {
    let rel = |kind: &str| match &scenario.dir {
        Some(sub) => format!("{sub}/{}.{kind}.txt", step.name),
        None => format!("{}.{kind}.txt", step.name),
    };
    (rel("stdout"), rel("stderr"))
}

/// The record must be what the driver writes for this step: nothing in it is free.
fn check_record(
    report: &mut Report,
    record: &Process,
    step: &Step,
    mode: Mode,
    label: &str,
    (stdout, stderr): (&str, &str),
) {
    let mut argv = vec!["crashlab".to_string()];
    argv.extend(step.argv(mode));
    if record.argv != argv {
        report.problem(
            P,
            format!(
                "{label}: argv {:?}, the command runs {:?}",
                record.argv, argv
            ),
        );
    }
    let expected_exit = if step.crash.is_some() {
        mode.expected_exit()
    } else {
        step.expected_exit
    };
    if record.expected_exit != expected_exit {
        report.problem(
            P,
            format!(
                "{label}: expected_exit {}, the command gives {expected_exit}",
                record.expected_exit
            ),
        );
    }
    if record.crash_point != step.crash {
        report.problem(
            P,
            format!(
                "{label}: crash_point {:?}, the command arms {:?}",
                record.crash_point, step.crash
            ),
        );
    }
    let crash_mode = step.crash.as_ref().map(|_| mode.name().to_string());
    if record.crash_mode != crash_mode {
        report.problem(
            P,
            format!(
                "{label}: crash_mode {:?}, the command gives {crash_mode:?}",
                record.crash_mode
            ),
        );
    }
    for (field, recorded, canonical) in [
        ("stdout", &record.stdout, stdout),
        ("stderr", &record.stderr, stderr),
    ] {
        if recorded != canonical {
            report.problem(
                P,
                format!("{label}: {field} '{recorded}', the driver writes it to '{canonical}'"),
            );
        }
    }
}

/// What ties a step's output to the step, beyond any process's own consistency: a readback
/// ends with its readback, over the files it names; a failing step's message is on stderr;
/// in a driver run only a timeout (or the kill mode) ends a process with SIGKILL.
fn bound_to_step(ran: &Ran<'_>, step: &Step) -> Vec<(Which, String)> {
    let mut problems = Vec::new();
    match &step.expect {
        Expect::Readback(_) => {
            let last = ran.stdout.lines().last().unwrap_or("");
            if !last.starts_with('{') {
                problems.push((
                    Which::Stdout,
                    "the last line is not the readback JSON".to_string(),
                ));
            }
            if let Some(readback) = readback_json(ran.stdout) {
                let databases = ran.databases();
                for key in readback.as_object().into_iter().flatten().map(|(k, _)| k) {
                    if key != "absent" && !databases.contains(key.as_str()) {
                        problems.push((
                            Which::Stdout,
                            format!("the readback reports {key}, a database argv does not name"),
                        ));
                    }
                }
            }
        }
        Expect::Output(text)
            if step.expected_exit != fail::EXIT_OK
                && ran.exit == step.expected_exit
                && !ran.stderr.contains(text) =>
        {
            problems.push((
                Which::Stderr,
                format!("exit {} without its message '{text}' here", ran.exit),
            ));
        }
        _ => {}
    }
    let kill_mode = matches!(ran.armed(), Ok(Some(a)) if a.mode == Mode::Kill) && ran.crashed();
    if ran.signal == Some(libc::SIGKILL) && !kill_mode && !ran.timed_out {
        problems.push((
            Which::Record,
            "ended by SIGKILL, which the driver sends only past a timeout (timed_out false)"
                .to_string(),
        ));
    }
    problems
}

/// processes.json's pragmas must be the ones every connection pins (store::PRAGMAS).
pub(super) fn pinned_pragmas(report: &mut Report, processes: &Processes) {
    if processes.pragmas != pragmas() {
        report.problem(
            evidence::PROCESSES,
            format!(
                "pragmas {:?} are not the ones every connection pins {:?}",
                processes.pragmas,
                pragmas()
            ),
        );
    }
}
