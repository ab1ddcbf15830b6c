//! A driver run's process records and what ties each output to its step: the record must be
//! exactly what the driver writes for the step; a readback ends with its readback; a failing
//! step's message is on stderr; only a timeout or the kill mode ends a process by SIGKILL.

use super::output::{Ran, Which};
use super::Report;
use crate::crash::Mode;
use crate::engine::driver::pragmas_of;
use crate::engine::evidence::{self, Process, Processes};
use crate::engine::nemesis::Nemesis;
use crate::engine::scenario::{readback_json, Expect, Scenario, Step};
use crate::fail;

const P: &str = evidence::PROCESSES;

/// What the audit reads of a process's stdout: all of it, but for a process SIGKILLed from
/// outside, only up to its last newline (`replay::complete_lines`). A process that was not
/// killed keeps every line, so a cut line there is a finding.
pub(super) fn whole_stdout(stdout: &str, signal: Option<i32>) -> &str {
    match signal {
        Some(libc::SIGKILL) => crate::engine::replay::complete_lines(stdout),
        _ => stdout,
    }
}

/// The step's stdout and stderr, relative to DIR, as the driver names them.
pub(super) fn output_files(scenario: &Scenario, step: &Step) -> (String, String) {
    let rel = |kind: &str| match &scenario.dir {
        Some(sub) => format!("{sub}/{}.{kind}.txt", step.name),
        None => format!("{}.{kind}.txt", step.name),
    };
    (rel("stdout"), rel("stderr"))
}

/// The step's events file, relative to DIR: `<step>.events.jsonl` beside its stdout.
pub(super) fn events_file(scenario: &Scenario, step: &Step) -> String {
    match &scenario.dir {
        Some(sub) => format!("{sub}/{}.events.jsonl", step.name),
        None => format!("{}.events.jsonl", step.name),
    }
}

/// The record must be what the driver writes for this step: nothing in it is free.
pub(super) fn check_record(
    report: &mut Report,
    record: &Process,
    step: &Step,
    nemesis: &dyn Nemesis,
    label: &str,
    (stdout, stderr): (&str, &str),
) {
    let mut argv = vec!["crashlab".to_string()];
    argv.extend(step.argv(nemesis));
    if record.argv != argv {
        report.problem(
            P,
            format!(
                "{label}: argv {:?}, the command runs {:?}",
                record.argv, argv
            ),
        );
    }
    let expected_exit = step.expected_exit(nemesis);
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
    let crash_mode = step.crash.as_ref().map(|_| nemesis.name().to_string());
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
pub(super) fn bound_to_step(ran: &Ran<'_>, step: &Step, crashed: bool) -> Vec<(Which, String)> {
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
    let kill_mode = matches!(ran.armed(), Ok(Some(a)) if a.mode == Mode::Kill) && crashed;
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
/// The recorded pragmas are those every connection pins under the store profile the
/// recorded command asks for (the lab's design when it names none).
pub(super) fn pinned_pragmas(
    report: &mut Report,
    processes: &Processes,
    profile: &crate::power::profile::Profile,
) {
    let pinned = pragmas_of(profile);
    if processes.pragmas != pinned {
        report.problem(
            evidence::PROCESSES,
            format!(
                "pragmas {:?} are not the ones every connection pins under store profile {} {:?}",
                processes.pragmas, profile.name, pinned
            ),
        );
    }
}
