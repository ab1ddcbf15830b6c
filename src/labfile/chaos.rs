//! `crashlab chaos FILE`: a lab file's scenarios with their role steps SIGKILLed from
//! outside, at moments drawn from the seed. A process crash at a point is where the role
//! says; a kill is where the clock says, between any two instructions. Each scenario first
//! runs once with no kill (its steps' walls are the windows the kills are drawn in), then
//! once per seed with up to `--kills` of its run steps killed; a kill lands only on a step a
//! later step of its role restarts, and the steps after it run as written. A killed run is
//! judged by the invariants: what it found must be predicted by the design at a point of a
//! killed step's role, or it broke where no prediction says so.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::evidence::{self, RunRecord};
use super::explore::{designs, judge, names, step_faults, Options};
use super::lab::{DesignDef, ScenarioDef, StepDef, UserLab};
use super::run::{self, Kill, ScenarioRun, Setup};
use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;
use crate::fail;
use crate::rng::SplitMix64;

/// The most scenario runs one chaos makes (seeds x scenarios).
const RUNS_MAX: usize = 10_000;

/// What chaos takes beyond explore's options.
pub struct Plan {
    pub seed: u64,
    pub runs: u64,
    /// Kills per scenario run, at most one per run step.
    pub kills: usize,
    /// The whole run: past it, no further seed starts.
    pub whole: Duration,
}

/// A kill is a SIGKILL: its crash mode, as the evidence records it.
pub const MODE: Mode = Mode::Kill;

/// `crashlab chaos FILE`.
pub fn chaos(lab: &UserLab, options: &Options, plan: &Plan) -> Result<i32> {
    if options.designs == "all" || options.designs.contains(',') {
        return Err(fail::usage(format!(
            "--variant {}: chaos runs one design; name one of {}",
            options.designs,
            lab.designs
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let design = designs(lab, "--variant", &options.designs)?[0];
    let runs = usize::try_from(plan.runs).unwrap_or(usize::MAX);
    if runs.saturating_mul(lab.scenarios.len()) > RUNS_MAX {
        return Err(fail::usage(format!(
            "--runs {}: more than {RUNS_MAX} scenario runs ({} scenarios each)",
            plan.runs,
            lab.scenarios.len()
        )));
    }
    if lab.invariants.is_empty() {
        return Err(fail::usage(format!(
            "{}: chaos judges a killed run by the lab's invariants, and it declares none ([[invariants]])",
            lab.path.display()
        )));
    }
    if let Some(scenario) = lab.scenarios.iter().find(|s| !killable(s).contains(&true)) {
        return Err(fail::usage(format!(
            "{}: scenario {}: no run step is followed by a later step of its role, so a kill would have no restart to judge; add one (docs/own-system.md, chaos)",
            lab.path.display(),
            scenario.name
        )));
    }
    super::out::check_given(&options.out)?;
    // Before the output directory: a server that cannot start leaves nothing behind.
    let servers =
        super::servers::Server::start(lab, options.pg_url.as_deref(), options.amqp_url.as_deref())?;
    let setup = Setup {
        lab,
        design,
        mode: MODE,
        timeout: options.timeout,
        servers: servers.as_ref(),
    };
    super::out::into_out(lab, &options.out, "chaos-", |out, named, printed| {
        chaos_into(&setup, options, plan, out, named, printed)
    })
}

/// The kills of one scenario run under `seed`: up to `kills` distinct run steps, each at a
/// moment uniform in its wall without a kill (`walls_ms`, one per step, None for a step no
/// kill may land on).
pub fn draw(seed: u64, scenario_index: usize, walls_ms: &[Option<f64>], kills: usize) -> Vec<Kill> {
    // A stream per seed and scenario, so adding a scenario does not move another's kills.
    let mut rng = SplitMix64::new(
        seed ^ 0x6368_616f_735f_6c66 ^ (scenario_index as u64).wrapping_mul(0x9e37_79b9),
    );
    let mut steps: Vec<usize> = (0..walls_ms.len())
        .filter(|&i| walls_ms[i].is_some())
        .collect();
    // A partial Fisher-Yates: the first `kills` of a seeded shuffle.
    let count = kills.min(steps.len());
    for i in 0..count {
        let j = rng.range(i as u64, steps.len() as u64 - 1) as usize;
        steps.swap(i, j);
    }
    let mut chosen: Vec<Kill> = steps[..count]
        .iter()
        .map(|&step| {
            // A share of the wall, so the same seed lands at the same share of the step's
            // work whatever this machine's speed.
            let share = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let wall_ms = walls_ms[step].unwrap_or(0.0).max(0.0);
            Kill {
                step,
                after_ms: (wall_ms * share) as u64,
            }
        })
        .collect();
    chosen.sort_by_key(|k| k.step);
    assert!(chosen.windows(2).all(|w| w[0].step < w[1].step));
    chosen
}

/// A killed run's verdict: a step's fault first (its checks are not read: a kill may leave
/// what a check counts short, and the invariants judge it); then what it found, which must
/// be among what the design predicts at the points of the killed steps' roles.
pub fn verdict(
    lab: &UserLab,
    design: &DesignDef,
    scenario: &ScenarioDef,
    ran: &ScenarioRun,
    kills: &[Kill],
) -> String {
    // No kill landed (each step it named ended first): a run like the one without a kill,
    // judged by its checks too.
    if !ran.steps.iter().any(|s| s.killed_after_ms.is_some()) {
        return judge(lab, design, scenario, ran, None, MODE).2;
    }
    if let Some(fault) = step_faults(scenario, ran, &[], MODE, false) {
        return fault;
    }
    let found = ran.anomalies();
    let allowed = allowed(lab, design, ran, kills);
    let beyond: Vec<Anomaly> = found
        .iter()
        .copied()
        .filter(|a| !allowed.contains(a))
        .collect();
    match (beyond.is_empty(), allowed.is_empty()) {
        (true, _) => "ok".into(),
        (false, true) => format!("broke ({}) where no prediction says so", names(&found)),
        (false, false) => format!(
            "found {}, beyond the {} the design predicts for the killed roles",
            names(&beyond),
            names(&allowed)
        ),
    }
}

/// What the design predicts at the points of the killed steps' roles. Not only at the points
/// a killed step announced: a kill between a commit and the point that follows it is that
/// point's crash, announced or not.
fn allowed(lab: &UserLab, design: &DesignDef, ran: &ScenarioRun, kills: &[Kill]) -> Vec<Anomaly> {
    let mut allowed: Vec<Anomaly> = kills
        .iter()
        .filter_map(|k| ran.steps.get(k.step))
        .filter(|s| s.killed_after_ms.is_some())
        .filter_map(|s| lab.role(&s.role))
        .flat_map(|role| role.points.iter())
        .flat_map(|(point, _)| {
            design
                .predict
                .iter()
                .filter(move |p| p.point == *point && p.mode.is_none_or(|m| m == MODE))
                .flat_map(|p| p.anomalies.iter().copied())
        })
        .collect();
    allowed.sort_by_key(|a| a.name());
    allowed.dedup();
    allowed
}

/// Where a scenario's run is kept: `no-kill/SCENARIO`, or `seed-S/SCENARIO`.
pub fn dir_of(seed: Option<u64>, scenario: &ScenarioDef) -> String {
    match seed {
        None => format!("no-kill/{}", scenario.name),
        Some(seed) => format!("seed-{seed}/{}", scenario.name),
    }
}

/// The windows kills are drawn in, from the run without a kill: each step's wall where a
/// kill may land on it, None elsewhere.
pub fn walls_of(scenario: &ScenarioDef, ran: &ScenarioRun) -> Vec<Option<f64>> {
    ran.steps
        .iter()
        .zip(killable(scenario))
        .map(|(s, may)| may.then_some(s.wall_ms))
        .collect()
}

/// The steps a kill may land on: a run step, in the foreground or the background, that a
/// later step of the same role follows, so the scenario restarts what the kill stopped. A
/// kill of a role's last step would have no restart to judge.
pub fn killable(scenario: &ScenarioDef) -> Vec<bool> {
    let role = |s: &StepDef| match s {
        StepDef::Run { role, .. } => Some(role.clone()),
        StepDef::Check { .. } | StepDef::Stop { .. } => None,
    };
    let steps = &scenario.steps;
    (0..steps.len())
        .map(|i| {
            role(&steps[i])
                .is_some_and(|r| steps[i + 1..].iter().any(|s| role(s).as_ref() == Some(&r)))
        })
        .collect()
}

/// chaos' run, written into `out` (the partial directory), published as `named`; what it
/// prints goes to `printed`.
fn chaos_into(
    setup: &Setup<'_>,
    options: &Options,
    plan: &Plan,
    out: &Path,
    named: &Path,
    printed: &mut Vec<String>,
) -> Result<i32> {
    let (lab, design) = (setup.lab, setup.design);
    let began = Instant::now();
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut walls: Vec<Vec<Option<f64>>> = Vec::new();
    for scenario in &lab.scenarios {
        let dir = dir_of(None, scenario);
        let ran = run::scenario(setup, scenario, &out.join(&dir), &[])?;
        walls.push(walls_of(scenario, &ran));
        let verdict = verdict(lab, design, scenario, &ran, &[]);
        rows.push([
            "-".into(),
            scenario.name.clone(),
            "no kill".into(),
            names(&ran.anomalies()),
            verdict.clone(),
        ]);
        runs.push(record(dir, design, scenario, Vec::new(), ran, verdict));
    }
    let mut stopped_at = None;
    // The route refuses a last seed past u64::MAX.
    let last = plan
        .seed
        .checked_add(plan.runs - 1)
        .expect("the last seed is a u64");
    for seed in plan.seed..=last {
        // Whole seeds only: the audit knows which runs a stopped run holds.
        if began.elapsed() > plan.whole {
            stopped_at = Some(seed);
            break;
        }
        for (index, scenario) in lab.scenarios.iter().enumerate() {
            let kills = draw(seed, index, &walls[index], plan.kills);
            let dir = dir_of(Some(seed), scenario);
            let ran = run::scenario_killed(setup, scenario, &out.join(&dir), &[], &kills)?;
            let verdict = verdict(lab, design, scenario, &ran, &kills);
            let at: Vec<String> = kills
                .iter()
                .map(|k| {
                    let step = &ran.steps[k.step];
                    let landed = match (step.killed_after_ms, step.timed_out) {
                        (Some(_), _) => "",
                        (None, true) => " (timed out first)",
                        (None, false) => " (ended first)",
                    };
                    format!("{}@{}ms{landed}", scenario.steps[k.step].name(), k.after_ms)
                })
                .collect();
            rows.push([
                seed.to_string(),
                scenario.name.clone(),
                at.join(" "),
                names(&ran.anomalies()),
                verdict.clone(),
            ]);
            runs.push(record(dir, design, scenario, kills, ran, verdict));
        }
    }
    let failed = runs.iter().filter(|r| r.verdict != "ok").count();
    let landed: usize = runs
        .iter()
        .flat_map(|r| &r.run.steps)
        .filter(|s| s.killed_after_ms.is_some())
        .count();
    let scenario_runs = runs.len();
    evidence::write(lab, out, "chaos", MODE, &options.command, runs, stopped_at)?;
    let code = match (failed, stopped_at) {
        (0, None) => fail::EXIT_OK,
        _ => fail::EXIT_FAILED,
    };
    if options.json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|[seed, scenario, killed, found, verdict]| {
                serde_json::json!({"seed": seed, "scenario": scenario, "killed": killed,
                    "found": found, "verdict": verdict})
            })
            .collect();
        printed.push(serde_json::to_string_pretty(&serde_json::json!({
            "lab": lab.id, "design": design.name, "runs": rows, "steps_killed": landed,
            "not_as_predicted": failed, "stopped_before_seed": stopped_at,
            "wall_ms": began.elapsed().as_secs_f64() * 1000.0, "exit": code,
            "out": crate::engine::evidence::recorded_path(named),
        }))?);
        return Ok(code);
    }
    printed.push(format!(
        "{:<6} {:<12} {:<40} {:<12} verdict",
        "seed", "scenario", "killed", "found"
    ));
    for [seed, scenario, at, found, verdict] in &rows {
        printed.push(format!(
            "{seed:<6} {scenario:<12} {at:<40} {found:<12} {verdict}"
        ));
    }
    if let Some(seed) = stopped_at {
        printed.push(format!(
            "stopped at --timeout-ms {} before seed {seed}: the seeds after it were not run",
            plan.whole.as_millis()
        ));
    }
    let word = if code == fail::EXIT_OK {
        "PASS"
    } else {
        "FAIL"
    };
    printed.push(format!(
        "{word}: lab {} in design {}: {}, {} killed, {failed} not as predicted; {:.1} s; evidence in {}",
        lab.id,
        design.name,
        crate::out::plural(scenario_runs, "scenario run", "scenario runs"),
        crate::out::plural(landed, "step", "steps"),
        began.elapsed().as_secs_f64(),
        named.display()
    ));
    Ok(code)
}

fn record(
    dir: String,
    design: &DesignDef,
    scenario: &ScenarioDef,
    kills: Vec<Kill>,
    run: ScenarioRun,
    verdict: String,
) -> RunRecord {
    RunRecord {
        dir,
        design: design.name.clone(),
        scenario: scenario.name.clone(),
        arms: Vec::new(),
        kills,
        run,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_kills_and_only_run_steps_inside_their_walls() {
        let walls = [Some(120.0), None, Some(40.0), Some(0.0)];
        let a = draw(7, 0, &walls, 2);
        assert_eq!(a, draw(7, 0, &walls, 2));
        assert_eq!(a.len(), 2);
        for k in &a {
            let wall = walls[k.step].expect("a run step, never a check");
            assert!((k.after_ms as f64) < wall.max(1.0), "{k:?}");
        }
        // More kills than run steps: each run step once.
        let all = draw(7, 0, &walls, 10);
        assert_eq!(
            all.iter().map(|k| k.step).collect::<Vec<_>>(),
            vec![0, 2, 3]
        );
        // Another seed or scenario draws on a stream of its own.
        let seeds: Vec<Vec<Kill>> = (0..20).map(|s| draw(s, 0, &walls, 1)).collect();
        assert!(seeds.iter().any(|k| *k != seeds[0]), "{seeds:?}");
        assert!(draw(7, 0, &[None, None], 3).is_empty());
        // The same share of a slower step's wall.
        let slower = [Some(1200.0), None, Some(400.0), Some(0.0)];
        for (fast, slow) in a.iter().zip(draw(7, 0, &slower, 2)) {
            assert_eq!(fast.step, slow.step);
            assert!(
                slow.after_ms.abs_diff(fast.after_ms * 10) <= 10,
                "{fast:?} {slow:?}"
            );
        }
    }
}
