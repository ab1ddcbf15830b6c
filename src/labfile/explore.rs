//! `crashlab explore FILE`: it first runs each scenario of
//! each design without a crash, recording every point and hit its roles announce; then it
//! crashes at each of them, one case each, and judges every case by the invariants against
//! the design's predictions. An armed point the role never announced is NOT-REACHED.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::evidence::{self, RunRecord};
use super::lab::{DesignDef, ScenarioDef, StepDef, UserLab};
use super::run::{self, Arm, ScenarioRun, Setup};
use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;
use crate::fail;

/// The most cases one explore runs (points x hits x designs x scenarios).
const CASES_MAX: usize = 10_000;

/// What explore and driver take of the command line.
pub struct Options {
    pub designs: String,
    pub mode: Mode,
    pub out: Option<PathBuf>,
    pub timeout: Duration,
    pub json: bool,
    /// `--pg-url`: the PostgreSQL server of the lab's PostgreSQL stores, instead of a private
    /// one.
    pub pg_url: Option<String>,
    /// `--amqp-url`: the broker of the lab's RabbitMQ stores, instead of a private one.
    pub amqp_url: Option<String>,
    /// Scenario runs at once (explore's `--jobs`; 1 elsewhere).
    pub jobs: usize,
    /// The command line as the evidence records it (`crashlab` first, no machine path).
    pub command: Vec<String>,
}

/// One case: a scenario of a design, crashed at one point and hit of one step (or not at all).
#[derive(Debug, Serialize)]
pub struct Case {
    pub design: String,
    pub scenario: String,
    /// `step:point@hit`, or `no crash`.
    pub at: String,
    pub anomalies: Vec<Anomaly>,
    pub predicted: Vec<Anomaly>,
    /// `ok`, `NOT-REACHED`, or what went wrong.
    pub verdict: String,
    pub dir: String,
}

pub(super) fn names(anomalies: &[Anomaly]) -> String {
    match anomalies.is_empty() {
        true => "-".into(),
        false => anomalies
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The designs `flag` names: `all`, or names separated by commas. Each gives every role a
/// program, or the run is refused before it starts.
pub(super) fn designs<'a>(lab: &'a UserLab, flag: &str, given: &str) -> Result<Vec<&'a DesignDef>> {
    let chosen = named(lab, flag, given)?;
    for design in &chosen {
        for role in &lab.roles {
            let argv = run::argv(lab, design, &role.name, &run::Places::recorded(lab));
            if argv.first().is_none_or(|program| program.is_empty()) {
                return Err(fail::usage(format!(
                    "{}: role '{}' has no program once design '{}' puts its arguments in",
                    lab.path.display(),
                    role.name,
                    design.name
                )));
            }
        }
    }
    Ok(chosen)
}

fn named<'a>(lab: &'a UserLab, flag: &str, given: &str) -> Result<Vec<&'a DesignDef>> {
    if given == "all" {
        return Ok(lab.designs.iter().collect());
    }
    given
        .split(',')
        .map(|name| {
            lab.designs.iter().find(|d| d.name == name).ok_or_else(|| {
                let known: Vec<&str> = lab.designs.iter().map(|d| d.name.as_str()).collect();
                fail::usage(format!(
                    "{flag}: lab {} has no design '{name}'; its designs: {}",
                    lab.id,
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// What a run's steps did wrong, beyond the anomalies: the armed step not crashing where
/// asked, another step's unexpected exit, a role's fault; a check's value when `checks`.
pub(super) fn step_faults(
    scenario: &super::lab::ScenarioDef,
    ran: &ScenarioRun,
    arms: &[Arm],
    mode: Mode,
    checks: bool,
) -> Option<String> {
    for (i, (def, step)) in scenario.steps.iter().zip(&ran.steps).enumerate() {
        if !checks && matches!(def, StepDef::Check { .. }) {
            continue;
        }
        if let Some(fault) = step.faults.first() {
            return Some(format!("step {} (role {}): {fault}", step.name, step.role));
        }
        let armed = arms.iter().find(|a| a.0 == i);
        let expected = match (def, armed) {
            (_, Some(_)) => mode.expected_exit(),
            (StepDef::Run { exit, .. }, None) => *exit,
            (StepDef::Check { .. } | StepDef::Stop { .. }, None) => 0,
        };
        if let Some((point, hit, _)) = armed.map(|a| (&a.1, a.2, ())) {
            if step.crashed.as_ref() != Some(&(point.clone(), hit)) {
                // Ended whole, or running until its stop: it never came to the point.
                if (step.exit == 0 || step.stopped) && !step.timed_out {
                    return Some(crate::crash::not_reached_line(point, hit));
                }
                return Some(format!(
                    "step {} (role {}) exited {} without announcing its crash at {point}@{hit}",
                    step.name, step.role, step.exit
                ));
            }
        }
        // A step chaos SIGKILLed exits as killed, and a background step its stop ended exits
        // as the stop made it: what either left is for the invariants.
        if step.exit != expected && step.killed_after_ms.is_none() && !step.stopped {
            let why = match (&step.check, step.timed_out) {
                (Some((got, want)), _) => format!("check gave {got}, expected {want}"),
                (None, true) => "killed past its step timeout".to_string(),
                (None, false) => format!("exit {}, expected {expected}", step.exit),
            };
            return Some(format!("step {} (role {}): {why}", step.name, step.role));
        }
    }
    ran.unreadable.clone()
}

/// Judge one run: what was found against what the design predicts at its arm.
pub fn judge(
    lab: &UserLab,
    design: &DesignDef,
    scenario: &super::lab::ScenarioDef,
    ran: &ScenarioRun,
    arm: Option<&Arm>,
    mode: Mode,
) -> (Vec<Anomaly>, Vec<Anomaly>, String) {
    let mut predicted: Vec<Anomaly> = Vec::new();
    if let Some((_, point, hit)) = arm {
        for p in design
            .predict
            .iter()
            .filter(|p| p.covers(point, *hit, mode))
        {
            predicted.extend(p.anomalies.iter().copied());
        }
    }
    predicted.sort_by_key(|a| a.name());
    predicted.dedup();
    let found = ran.anomalies();
    let undeclared = ran
        .steps
        .iter()
        .flat_map(|s| s.points.iter().map(move |p| (s, p)))
        .find(|(_, (p, _))| lab.point(p).is_none());
    let verdict = if let Some(fault) = step_faults(
        scenario,
        ran,
        arm.map(std::slice::from_ref).unwrap_or(&[]),
        mode,
        // A crash case is judged by the invariants; the checks say what a run without one shows.
        arm.is_none(),
    ) {
        fault
    } else if let Some((step, (point, _))) = undeclared {
        format!(
            "step {} (role {}) announced '{point}', which no role declares",
            step.name, step.role
        )
    } else if found == predicted {
        "ok".to_string()
    } else if predicted.is_empty() {
        format!("broke ({}) where no prediction says so", names(&found))
    } else {
        format!("predicted {}, found {}", names(&predicted), names(&found))
    };
    (found, predicted, verdict)
}

/// `crashlab explore FILE`.
pub fn explore(lab: &UserLab, options: &Options) -> Result<i32> {
    let chosen = designs(lab, "--variants", &options.designs)?;
    super::out::check_given(&options.out)?;
    // Before the output directory: a server that cannot start leaves nothing behind.
    let servers =
        super::servers::Server::start(lab, options.pg_url.as_deref(), options.amqp_url.as_deref())?;
    super::out::into_out(lab, &options.out, "explore-", |out, named, printed| {
        explore_into(lab, options, &chosen, servers.as_ref(), out, named, printed)
    })
}

/// explore's run, written into `out` (the partial directory), published as `named`;
/// what it prints goes to `printed`.
fn explore_into(
    lab: &UserLab,
    options: &Options,
    chosen: &[&DesignDef],
    servers: Option<&super::servers::Server>,
    out: &Path,
    named: &Path,
    printed: &mut Vec<String>,
) -> Result<i32> {
    let began = Instant::now();
    let setups: Vec<Setup> = chosen
        .iter()
        .map(|design| Setup {
            lab,
            design,
            mode: options.mode,
            timeout: options.timeout,
            servers,
        })
        .collect();
    // First each design's scenarios without a crash, which say where the cases crash; then
    // every case. Each run has its own directory, SQLite files, databases and queues, so
    // `--jobs` of them run at once; their records keep the order of a serial run.
    let plain: Vec<Job> = setups
        .iter()
        .flat_map(|setup| lab.scenarios.iter().map(move |scenario| (setup, scenario)))
        .map(|(setup, scenario)| Job {
            setup,
            scenario,
            dir: out
                .join(&setup.design.name)
                .join(&scenario.name)
                .join("no-crash"),
            at: "no crash".into(),
            arm: None,
        })
        .collect();
    let plain_runs = run_all(&plain, options.jobs)?;
    let mut crashed: Vec<Job> = Vec::new();
    // How many of them each run without a crash gave, in its order.
    let mut given: Vec<usize> = Vec::new();
    for (job, ran) in plain.iter().zip(&plain_runs) {
        let before = crashed.len();
        // The points a role declares: one it announced without declaring is the run
        // without a crash's fault (judge), never a case.
        let arms = ran
            .steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.points.iter().map(move |(p, h)| (i, p.clone(), *h)))
            .filter(|(_, p, _)| lab.point(p).is_some());
        for arm in arms {
            if plain.len() + crashed.len() >= CASES_MAX {
                return Err(fail::usage(format!(
                    "more than {CASES_MAX} cases: name fewer designs with --variants"
                )));
            }
            let step = job.scenario.steps[arm.0].name();
            let base = job.dir.parent().expect("a scenario's directory");
            crashed.push(Job {
                dir: base.join(format!("{:02}-{step}-{}@{}", arm.0 + 1, arm.1, arm.2)),
                at: format!("{step}:{}@{}", arm.1, arm.2),
                arm: Some(arm),
                ..*job
            });
        }
        given.push(crashed.len() - before);
    }
    let crashed_runs = run_all(&crashed, options.jobs)?;
    let mut cases: Vec<Case> = Vec::new();
    let mut announced_at: Vec<(String, String)> = Vec::new();
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut rest = crashed.iter().zip(crashed_runs);
    for ((job, ran), n) in plain.iter().zip(plain_runs).zip(given) {
        let mine: Vec<_> = rest.by_ref().take(n).collect();
        for (job, ran) in std::iter::once((job, ran)).chain(mine) {
            let design = job.setup.design;
            let (found, predicted, verdict) = judge(
                lab,
                design,
                job.scenario,
                &ran,
                job.arm.as_ref(),
                options.mode,
            );
            if let Some(arm) = &job.arm {
                announced_at.push((design.name.clone(), arm.1.clone()));
            }
            runs.push(RunRecord {
                dir: rel(out, &job.dir),
                design: design.name.clone(),
                scenario: job.scenario.name.clone(),
                arms: job.arm.iter().cloned().collect(),
                kills: Vec::new(),
                run: ran,
                verdict: verdict.clone(),
            });
            cases.push(Case {
                design: design.name.clone(),
                scenario: job.scenario.name.clone(),
                at: job.at.clone(),
                anomalies: found,
                predicted,
                verdict,
                dir: rel(out, &job.dir),
            });
        }
    }
    // A prediction whose point was never announced proves nothing: it is NOT-REACHED.
    let mut unproven = Vec::new();
    for design in chosen {
        for p in design
            .predict
            .iter()
            .filter(|p| p.mode.is_none_or(|m| m == options.mode))
        {
            if !announced_at
                .iter()
                .any(|(d, point)| *d == design.name && *point == p.point)
            {
                unproven.push(format!(
                    "design {}: predicted at {}, never announced: {}",
                    design.name,
                    p.at(),
                    crate::crash::not_reached_line(&p.point, p.hit.unwrap_or(1))
                ));
            }
        }
    }
    // The cases are the points the run without a crash announced: a point a role declares
    // that it never announced was never crashed, said rather than passed over.
    let mut declared: Vec<(&str, &str)> = Vec::new();
    for scenario in &lab.scenarios {
        for step in &scenario.steps {
            let StepDef::Run { role, .. } = step else {
                continue;
            };
            for (point, _) in lab.role(role).map_or(&[][..], |r| &r.points[..]) {
                if !declared.contains(&(role, point)) {
                    declared.push((role, point));
                }
            }
        }
    }
    for (role, point) in declared {
        if !announced_at.iter().any(|(_, p)| p == point) {
            unproven.push(format!(
                "role {role} declares {point}, which the run without a crash never announced, so no case crashed there: {}",
                crate::crash::not_reached_line(point, 1)
            ));
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    let code = exit_code(&cases, &unproven);
    // The same keys as a built-in lab's explore.json (`wall_ms`, `cases_per_s`), and no
    // path of the machine: an absolute path is recorded by its name.
    let report = serde_json::json!({
        "lab": lab.id, "file": crate::engine::evidence::recorded_path(&lab.path),
        "crash_mode": options.mode.name(),
        "cases": cases, "unproven": unproven, "wall_ms": seconds * 1000.0,
        "cases_per_s": cases.len() as f64 / seconds.max(1e-9), "exit": code,
        "out": crate::engine::evidence::recorded_path(named),
    });
    let text = serde_json::to_string_pretty(&report)?;
    std::fs::write(out.join("explore.json"), &text)
        .map_err(|e| fail::io(format!("writing explore.json: {e}")))?;
    evidence::write(
        lab,
        out,
        "explore",
        options.mode,
        &options.command,
        runs,
        None,
    )?;
    if options.json {
        printed.push(text);
        return Ok(code);
    }
    printed.push(format!(
        "{:<22} {:<12} {:<40} {:<12} {:<12} verdict",
        "design", "scenario", "crash at", "found", "predicted"
    ));
    for c in &cases {
        printed.push(format!(
            "{:<22} {:<12} {:<40} {:<12} {:<12} {}",
            c.design,
            c.scenario,
            c.at,
            names(&c.anomalies),
            names(&c.predicted),
            c.verdict
        ));
    }
    for line in &unproven {
        printed.push(line.clone());
    }
    let failed = cases.iter().filter(|c| c.verdict != "ok").count() + unproven.len();
    let word = if code == fail::EXIT_OK {
        "PASS"
    } else {
        "FAIL"
    };
    printed.push(format!(
        "{word}: {} cases, {failed} not as predicted; {:.1} s, {:.1} cases/s; evidence in {}",
        cases.len(),
        seconds,
        cases.len() as f64 / seconds.max(1e-9),
        named.display()
    ));
    Ok(code)
}

/// 0 when every case is as predicted; 78 when the only misses are points not reached; else 1.
fn exit_code(cases: &[Case], unproven: &[String]) -> i32 {
    let missed = |v: &str| v.starts_with("NOT-REACHED");
    let bad: Vec<&str> = cases
        .iter()
        .map(|c| c.verdict.as_str())
        .filter(|v| *v != "ok")
        .collect();
    if bad.iter().any(|v| !missed(v)) {
        fail::EXIT_FAILED
    } else if !bad.is_empty() || !unproven.is_empty() {
        fail::EXIT_NOT_REACHED
    } else {
        fail::EXIT_OK
    }
}

/// One scenario run of explore: a design's scenario without a crash, or crashed at one arm.
struct Job<'a> {
    setup: &'a Setup<'a>,
    scenario: &'a ScenarioDef,
    dir: PathBuf,
    /// `no crash`, or `step:point@hit`.
    at: String,
    arm: Option<Arm>,
}

/// Run every job, `jobs` at a time; the runs in the jobs' order. The first error (in the
/// jobs' order) stops the jobs not yet started and is returned; so does an interrupt.
fn run_all(all: &[Job], jobs: usize) -> Result<Vec<ScenarioRun>> {
    assert!(jobs >= 1, "--jobs is at least 1");
    let one = |job: &Job| {
        let arms = job.arm.as_slice();
        run::scenario(job.setup, job.scenario, &job.dir, arms)
    };
    if jobs == 1 {
        return all.iter().map(one).collect();
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let done: Mutex<Vec<Option<Result<ScenarioRun>>>> =
        Mutex::new(all.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(all.len()) {
            scope.spawn(|| {
                // Each job is taken once: at most all.len() turns.
                for _ in 0..all.len() {
                    if stop.load(Ordering::SeqCst) || crate::interrupt::caught().is_some() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = all.get(i) else { break };
                    let ran = one(job);
                    if ran.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(ran);
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = done.iter().position(|r| matches!(r, Some(Err(_)))) {
        let Some(Some(Err(e))) = done.into_iter().nth(e) else {
            unreachable!("found above")
        };
        return Err(e);
    }
    done.into_iter()
        .map(|r| match r {
            Some(ran) => ran,
            // Not started: only an interrupt leaves a job so without an error.
            None => Err(anyhow::Error::new(crate::interrupt::Interrupted(
                crate::interrupt::caught().unwrap_or(libc::SIGINT),
            ))),
        })
        .collect()
}

fn rel(out: &Path, dir: &Path) -> String {
    dir.strip_prefix(out).unwrap_or(dir).display().to_string()
}
