//! `crashlab driver --json`: the run as one JSON document on stdout, the same facts the table
//! shows (verdict, evidence directory, one entry per scenario and per step), for a script.

use serde_json::{json, Value};

use crate::engine::scenario::Scenario;
use crate::engine::LabStack;

use super::table::{scenario_state, step_state};
use super::{Options, Run};

/// The document; every step of `run` appears once, in the order it ran.
pub(super) fn document(
    lab: &LabStack,
    run: &Run,
    scenarios: &[Scenario],
    options: &Options,
) -> Value {
    let all_steps = scenarios.iter().flat_map(|s| s.steps.iter());
    let steps: Vec<Value> = run
        .processes
        .processes
        .iter()
        .zip(&run.results.steps)
        .zip(all_steps)
        .map(|((p, r), step)| {
            json!({
                "scenario": p.scenario,
                "step": p.step,
                "expected_exit": p.expected_exit,
                "exit": p.exit,
                "wall_ms": p.wall_ms,
                "crash_point": p.crash_point,
                "state": step_state(run, step, p, r),
                "ok": r.ok,
                "problems": r.problems,
            })
        })
        .collect();
    let scenarios: Vec<Value> = scenarios
        .iter()
        .map(|scenario| {
            let findings = run
                .results
                .scenarios
                .iter()
                .find(|f| f.scenario == scenario.name);
            let ok = run
                .results
                .steps
                .iter()
                .filter(|r| r.scenario == scenario.name)
                .all(|r| r.ok)
                && findings.is_none_or(|f| f.ok);
            let (state, readback) = scenario_state(run, scenario);
            json!({
                "name": scenario.name,
                "ok": ok,
                "final_state": state,
                "readback": readback,
                "anomalies": findings.map(|f| &f.anomalies),
                "bad_anomalies": findings.map(|f| &f.bad_anomalies),
                "expected_anomalies": findings.map(|f| &f.expected_anomalies),
                "findings": findings.map(|f| &f.summary),
            })
        })
        .collect();
    let failed = run.results.steps.iter().filter(|s| !s.ok).count();
    // Postcondition: the verdict is the results' verdict, and it agrees with the steps.
    assert_eq!(
        run.results.ok,
        failed == 0 && run.results.scenarios.iter().all(|f| f.ok),
        "the verdict agrees with the steps and the scenarios' findings"
    );
    assert_eq!(steps.len(), run.results.steps.len(), "one entry per step");
    json!({
        "lab": lab.full_name(),
        "id": lab.id(),
        "slug": lab.slug(),
        "title": lab.title,
        "evidence": options.out.display().to_string(),
        "verdict": if run.results.ok { "PASS" } else { "FAIL" },
        "ok": run.results.ok,
        "processes": run.processes.processes.len(),
        "failed_steps": failed,
        "total_wall_ms": run.processes.total_wall_ms,
        "crash_mode": run.processes.crash_mode,
        "moved_crashes": options.moves,
        "scenarios": scenarios,
        "steps": steps,
    })
}

/// `--junit FILE`: one test case per scenario, failed when a step's expectation or the
/// scenario's checker failed; the failure names the step and what it showed, and the bad
/// anomalies.
pub fn junit(results: &crate::engine::evidence::Results) -> crate::junit::Suite {
    let mut names: Vec<&str> = Vec::new();
    for s in &results.steps {
        if !names.contains(&s.scenario.as_str()) {
            names.push(&s.scenario);
        }
    }
    let cases = names
        .into_iter()
        .map(|name| {
            let mut failed: Vec<String> = results
                .steps
                .iter()
                .filter(|s| s.scenario == name && !s.ok)
                .map(|s| format!("{}: {}", s.step, s.problems.join("; ")))
                .collect();
            let findings = results.scenarios.iter().find(|f| f.scenario == name);
            for f in findings.iter().filter(|f| !f.ok) {
                failed.push(format!("anomalies: {}", f.summary));
                for a in &f.bad_anomalies {
                    failed.push(format!("{} {}: {}", a.anomaly.name(), a.item, a.detail));
                }
            }
            let outcome = match failed.first() {
                None => crate::junit::Outcome::Passed,
                Some(first) => crate::junit::Outcome::Failed {
                    message: first.clone(),
                    text: failed.join("\n"),
                },
            };
            crate::junit::Case {
                name: name.to_string(),
                classname: results.lab.clone(),
                time_s: 0.0,
                outcome,
                system_out: findings.map_or(String::new(), |f| f.summary.clone()),
            }
        })
        .collect();
    crate::junit::Suite {
        name: format!("crashlab driver {}", results.lab),
        time_s: 0.0,
        cases,
    }
}
