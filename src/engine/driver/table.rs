//! The table a driver run prints: one row per step, one per scenario, then the verdict.

use crate::crash;
use crate::engine::evidence::{Process, StepResult};
use crate::engine::scenario::{Expect, Scenario, Step};
use crate::engine::LabStack;
use crate::out::plural;

use super::{readback_key, Options, Run};

pub(super) fn print_report(lab: &LabStack, run: &Run, scenarios: &[Scenario], options: &Options) {
    crate::say!(
        "lab {} ({}): {}; evidence in {}",
        lab.id(),
        lab.slug(),
        lab.title,
        options.out.display()
    );
    crate::say!();
    let width = scenarios
        .iter()
        .flat_map(|s| s.steps.iter())
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(18);
    crate::say!(
        "{:<width$} {:>6} {:>5} {:>8}  state",
        "step",
        "expect",
        "exit",
        "wall_ms"
    );
    let all_steps = scenarios.iter().flat_map(|s| s.steps.iter());
    let mut current: Option<&str> = None;
    for ((p, r), step) in run
        .processes
        .processes
        .iter()
        .zip(&run.results.steps)
        .zip(all_steps)
    {
        if scenarios.len() > 1 && current != Some(p.scenario.as_str()) {
            current = Some(p.scenario.as_str());
            crate::say!("[{}]", p.scenario);
        }
        let state = step_state(run, step, p, r);
        let mark = if r.ok { "" } else { "  <-- FAILED" };
        crate::say!(
            "{:<width$} {:>6} {:>5} {:>8.2}  {state}{mark}",
            p.step,
            p.expected_exit,
            p.exit,
            p.wall_ms
        );
    }
    crate::say!();
    if scenarios.len() > 1 {
        print_scenarios(run, scenarios);
    }
    let unexpected = super::observe::print_findings(run);
    let failed: Vec<&StepResult> = run.results.steps.iter().filter(|s| !s.ok).collect();
    for s in &failed {
        for problem in &s.problems {
            if scenarios.len() > 1 {
                crate::say!("  {}/{}: {problem}", s.scenario, s.step);
            } else {
                crate::say!("  {}: {problem}", s.step);
            }
        }
    }
    let total = run.processes.total_wall_ms;
    let n = run.processes.processes.len();
    if failed.is_empty() && unexpected == 0 {
        crate::say!(
            "PASS: {}, every expectation held; total wall_ms {total:.1}",
            plural(n, "process", "processes")
        );
        if !options.moves.is_empty() {
            crate::say!(
                "note: the moved crash ({}) broke no expectation",
                options.moves.join(", ")
            );
        }
    } else if failed.is_empty() {
        crate::say!(
            "FAIL: {unexpected} scenarios show other anomalies than they expect; total wall_ms {total:.1}"
        );
    } else {
        crate::say!(
            "FAIL: {} of {} did not hold their expectations; total wall_ms {total:.1}",
            failed.len(),
            plural(n, "step", "steps")
        );
    }
}

/// One line per scenario: its last readback (the counts it must end with) and whether every
/// step held.
fn print_scenarios(run: &Run, scenarios: &[Scenario]) {
    crate::say!("{:<28} {:<4} final state", "scenario", "ok");
    for scenario in scenarios {
        let ok = run
            .results
            .steps
            .iter()
            .filter(|r| r.scenario == scenario.name)
            .all(|r| r.ok);
        let state = scenario_state(run, scenario).0;
        crate::say!(
            "{:<28} {:<4} {state}",
            scenario.name,
            if ok { "yes" } else { "NO" }
        );
    }
    crate::say!();
}

/// What a step's row says in the state column: the readback against its stage, the crash
/// line, the output it had to print.
pub(super) fn step_state(run: &Run, step: &Step, p: &Process, r: &StepResult) -> String {
    match &step.expect {
        Expect::Readback(stage) => {
            let readback = run
                .readbacks
                .get(&readback_key(&p.scenario, &p.step))
                .and_then(|l| serde_json::from_str(l).ok());
            stage.describe(readback.as_ref())
        }
        Expect::Crash => match (&step.crash, r.observed["crash_line"] == true) {
            (Some(point), true) => format!("CRASH {point}"),
            (Some(spec), false) if r.observed["not_reached"] == true => {
                let (point, hit) = crash::split_spec(spec);
                crash::not_reached_line(point, hit)
            }
            (Some(point), false) => format!("no CRASH line (armed {point})"),
            (None, _) => "no crash (moved away)".to_string(),
        },
        Expect::Output(text) if r.observed["output"] == true => format!("'{text}'"),
        Expect::Output(text) => format!("no '{text}' in the output"),
        Expect::Exit => String::new(),
    }
}

/// A scenario's final state: its last readback described against its stage, and the
/// readback itself (`None` when the scenario has no readback step or it printed none).
pub(super) fn scenario_state(
    run: &Run,
    scenario: &Scenario,
) -> (String, Option<serde_json::Value>) {
    let last = scenario.steps.iter().rev().find_map(|s| match &s.expect {
        Expect::Readback(stage) => Some((s, stage)),
        _ => None,
    });
    match last {
        Some((step, stage)) => {
            let readback: Option<serde_json::Value> = run
                .readbacks
                .get(&readback_key(&scenario.name, &step.name))
                .and_then(|l| serde_json::from_str(l).ok());
            (stage.describe(readback.as_ref()), readback)
        }
        None => (String::new(), None),
    }
}
