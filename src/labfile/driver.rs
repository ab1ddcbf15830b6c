//! `crashlab driver FILE`: each scenario once, in one design, each step crashing where the
//! lab file says, its checks read back and its invariants held as predicted.

use std::path::Path;

use anyhow::Result;

use super::evidence::{self, RunRecord};
use super::explore::{designs, names, step_faults, Options};
use super::lab::{DesignDef, ScenarioDef, StepDef, UserLab};
use super::out::into_out;
use super::run::ScenarioRun;
use super::run::{self, Arm, Setup};
use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;
use crate::fail;

/// `crashlab driver FILE`: each scenario once in the first design chosen, crashing each step
/// where the file says, its checks read, every invariant held as predicted.
pub fn driver(lab: &UserLab, options: &Options) -> Result<i32> {
    let design = designs(lab, "--variants", &options.designs)?[0];
    super::out::check_given(&options.out)?;
    // Before the output directory: a server that cannot start leaves nothing behind.
    let servers =
        super::servers::Server::start(lab, options.pg_url.as_deref(), options.amqp_url.as_deref())?;
    let setup = Setup {
        lab,
        design,
        mode: options.mode,
        timeout: options.timeout,
        servers: servers.as_ref(),
    };
    into_out(lab, &options.out, "", |out, named, printed| {
        driver_into(&setup, options, out, named, printed)
    })
}

/// The driver's run, written into `out` (the partial directory), published as `named`;
/// what it prints goes to `printed`.
fn driver_into(
    setup: &Setup<'_>,
    options: &Options,
    out: &Path,
    named: &Path,
    printed: &mut Vec<String>,
) -> Result<i32> {
    let (lab, design) = (setup.lab, setup.design);
    let mut code = fail::EXIT_OK;
    let mut runs = Vec::new();
    printed.push(format!(
        "{:<18} {:>6} {:>5} {:>8}  state",
        "step", "expect", "exit", "wall_ms"
    ));
    for scenario in &lab.scenarios {
        let arms: Vec<Arm> = scenario
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                StepDef::Run {
                    crash: Some((p, h)),
                    ..
                } => Some((i, p.clone(), *h)),
                _ => None,
            })
            .collect();
        let ran = run::scenario(setup, scenario, &out.join(&scenario.name), &arms)?;
        for (i, (def, step)) in scenario.steps.iter().zip(&ran.steps).enumerate() {
            let armed = arms.iter().find(|a| a.0 == i);
            let expect = match (def, armed) {
                (_, Some(_)) => options.mode.expected_exit(),
                (StepDef::Run { exit, .. }, None) => *exit,
                (StepDef::Check { .. } | StepDef::Stop { .. }, None) => 0,
            };
            let state = match (&step.crashed, &step.check) {
                (Some((p, h)), _) => format!("CRASH {p}@{h}"),
                (None, Some((got, want))) => format!("{got} (expected {want})"),
                (None, None) => format!("{} points", step.points.len()),
            };
            printed.push(format!(
                "{:<18} {:>6} {:>5} {:>8.2}  {state}",
                step.name, expect, step.exit, step.wall_ms
            ));
        }
        let found = ran.anomalies();
        let verdict = verdict(design, scenario, &ran, &arms, options.mode);
        printed.push(format!(
            "scenario {}: {} (anomalies {})",
            scenario.name,
            verdict,
            names(&found)
        ));
        if verdict != "ok" {
            code = fail::EXIT_FAILED;
        }
        runs.push(RunRecord {
            dir: scenario.name.clone(),
            design: design.name.clone(),
            scenario: scenario.name.clone(),
            arms,
            kills: Vec::new(),
            run: ran,
            verdict,
        });
    }
    evidence::write(
        lab,
        out,
        "driver",
        options.mode,
        &options.command,
        runs,
        None,
    )?;
    let word = if code == fail::EXIT_OK {
        "PASS"
    } else {
        "FAIL"
    };
    printed.push(format!(
        "{word}: lab {} in design {}; evidence in {}",
        lab.id,
        design.name,
        named.display()
    ));
    Ok(code)
}

/// A driver scenario's verdict: `ok`, or its first step fault, or its anomalies against the
/// design's predictions at every arm.
pub fn verdict(
    design: &DesignDef,
    scenario: &ScenarioDef,
    ran: &ScenarioRun,
    arms: &[Arm],
    mode: Mode,
) -> String {
    // One arm per crashing step: the predictions of each count.
    let mut predicted: Vec<Anomaly> = arms
        .iter()
        .flat_map(|a| {
            design
                .predict
                .iter()
                .filter(|p| p.covers(&a.1, a.2, mode))
                .flat_map(|p| p.anomalies.clone())
        })
        .collect();
    predicted.sort_by_key(|a| a.name());
    predicted.dedup();
    let verdict = step_faults(scenario, ran, arms, mode, true);
    let found = ran.anomalies();
    verdict.unwrap_or_else(|| match found == predicted {
        true => "ok".into(),
        false => format!("predicted {}, found {}", names(&predicted), names(&found)),
    })
}
