//! A driver run. The recorded command is parsed as the binary parses it, the lab's scenarios
//! are rebuilt from it (moves applied), and every process record must be exactly what the
//! driver gives that step; each step's raw output must be its own (output.rs) and is judged
//! again by the driver's own checker; results.json must be that judgement, field by field.

use super::command::{self, Parsed};
use super::events::{self as bound, Side};
use super::output::{self, Ran, Which};
pub(super) use super::record::pinned_pragmas;
use super::record::{bound_to_step, check_record, events_file, output_files};
use super::tree::Tree;
use super::{
    cuts, database, findings, kept, pictures, replayed, results, sequence, servers, statements,
    traced, Report,
};
use crate::engine::check::{check, parse_events, Output, Verdict};
use crate::engine::driver::apply_moves;
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
    let lab = match crate::engine::registry::find(&processes.lab) {
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
    // A lab runs on several stacks: the command's --stack says which one ran.
    let lab = match crate::engine::registry::on(lab, command.stack.stack.as_deref()) {
        Ok(on) => on,
        Err(e) => {
            report.problem(P, fail::one_line(&e));
            return;
        }
    };
    let on_servers = servers::check(report, tree, lab);
    match crate::engine::registry::find(&command.lab) {
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
    if processes.crash_mode != command.nemesis.name() {
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
    pinned_pragmas(report, &processes, &command.profile);
    // The fault the recorded command injects; nothing below asks which one it is.
    let nemesis = command.nemesis;
    let mut scenarios = (lab.scenarios)();
    if let Err(e) = apply_moves(lab, &mut scenarios, &command.moves) {
        report.problem(P, format!("command: {}", fail::one_line(&e)));
        return;
    }
    let steps: Vec<(&Scenario, &Step)> = scenarios
        .iter()
        .flat_map(|s| s.steps.iter().map(move |step| (s, step)))
        .collect();
    if let Some(record) = &on_servers {
        servers::check_kills(report, record, &command, &steps, &processes.processes);
    }
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
    // A lossy store profile under power loss breaks where its design does, as a moved crash
    // does: what the run recorded is judged, not what the default design expects.
    if command.cut.is_some() && command.profile != crate::power::profile::DEFAULT {
        report.lossy_profile = Some(command.profile.name.to_string());
    }
    let study = !command.moves.is_empty() || report.lossy_profile.is_some();
    let mut verdicts: Vec<Option<Verdict>> = Vec::with_capacity(steps.len());
    // Each step's events and readback, for the scenarios' findings (findings.rs).
    let mut seen: Vec<findings::StepSeen> = Vec::with_capacity(steps.len());
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
            seen.push(Default::default());
            continue;
        };
        let (stdout_rel, stderr_rel) = output_files(scenario, step);
        check_record(
            report,
            record,
            step,
            nemesis,
            &label,
            (&stdout_rel, &stderr_rel),
        );
        let stdout = tree.text(report, &stdout_rel);
        let stderr = tree.text(report, &stderr_rel);
        let events_rel = events_file(scenario, step);
        let events_text = tree.text(report, &events_rel);
        let (Some(stdout), Some(stderr), Some(events_text)) = (stdout, stderr, events_text) else {
            verdicts.push(None);
            seen.push(Default::default());
            continue;
        };
        let events = parse_events(&events_text);
        if let Err(why) = &events {
            report.problem(&events_rel, format!("{label}: {why}"));
        }
        let no_events = Vec::new();
        let said = events.as_ref().unwrap_or(&no_events);
        if let Some(b) = step.background {
            if said.iter().any(|e| b.ready.is(e)) {
                ready.insert((scenario.name.clone(), step.name.clone()));
            }
        }
        let ran = Ran {
            argv: &record.argv,
            exit: record.exit,
            signal: record.signal,
            timed_out: record.timed_out,
            // A step killed from outside (a background process at the end, a hung one at its
            // bound) may have been cut mid-line; half a line is no line it printed.
            stdout: super::record::whole_stdout(&stdout, record.signal),
            stderr: &stderr,
            server_stores: crate::engine::fleet::server_stores(lab),
        };
        let threaded = crate::engine::replay::threaded(lab, step.phase);
        for (side, text) in bound::check(&ran, said, threaded) {
            if side == Side::Both {
                report.problem(&stdout_rel, format!("{label}: {text}"));
            }
            report.problem(&events_rel, format!("{label}: {text}"));
        }
        let mut problems = output::check_events(&ran, said, lab.points, &processes.pragmas);
        let crashed = said
            .iter()
            .any(|e| matches!(e, crate::events::Event::Crash { .. }));
        problems.extend(bound_to_step(&ran, step, crashed));
        problems.extend(
            preparer
                .check(ran.stdout)
                .into_iter()
                .map(|t| (Which::Stdout, t)),
        );
        for (which, text) in problems {
            let file = which.file(&stdout_rel, &stderr_rel, &events_rel);
            report.problem(file, format!("{label}: {text}"));
        }
        // The driver's own checker, on the raw output.
        let output = Output {
            exit: record.exit,
            timed_out: record.timed_out,
            stdout: &stdout,
            stderr: &stderr,
            events: match &events {
                Ok(events) => Ok(events),
                Err(why) => Err(why),
            },
        };
        let verdict = check(step, nemesis, &output);
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
        seen.push((said.clone(), readback_json(&stdout)));
    }
    let findings_ok = findings::check(report, lab, &steps, &seen, results.as_ref());
    if let Some(r) = &results {
        results::compare(report, lab, &steps, r, &verdicts, many, findings_ok);
    }
    if let Some(rows) = &rows {
        database::check_rows(report, lab, &scenarios, rows, &ready);
    }
    let mut pictures = pictures::check(report, tree, &processes, results.as_ref());
    let mut cut_files = None;
    if let Some(cut) = command.cut {
        let (file, changed) = cuts::check(
            report,
            tree,
            cut,
            &steps,
            &processes.processes,
            rows.as_deref(),
        );
        pictures.insert(file);
        cut_files = Some(changed);
    }
    kept::check(
        report,
        tree,
        lab,
        &scenarios,
        command.keep_db,
        rows.as_deref(),
        pictures,
    );
    let replay = (&steps[..], &scenarios[..], cut_files.as_deref());
    replayed::check(report, tree, lab, replay, &processes, many);
    traced::check(
        report,
        tree,
        lab,
        &steps,
        &processes.processes,
        rows.as_deref(),
        on_servers.as_ref(),
    );
}
