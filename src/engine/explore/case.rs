//! One case: a fresh work directory, the lab's scenario as real child processes with the
//! crash armed in one of them, recovery to quiescence, and the judgement in the lab's
//! invariants and in Jepsen's anomalies.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::evidence;
use crate::engine::explore::invariant::{Invariant, Invariants, Status};
use crate::engine::explore::plan::{Counts, ExplorePlan, Judgement};
use crate::engine::explore::steps::{Crash, Env, StepRecord, Steps};
use crate::engine::jepsen::{self, Found};
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::events::Event;
use crate::fail;

/// Recovery rounds before a case counts as stuck: one is enough for every design of the
/// labs, the bound keeps a broken one from looping.
pub const ROUNDS_MAX: u32 = 3;

/// One case of any lab: a design and its crash (None for the probe that counts hits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub design: &'static str,
    pub crash: Option<Crash>,
}

impl Case {
    /// `cases/<design>/<point>@<hit>`, or `cases/<design>/probe`.
    pub fn evidence_dir(&self) -> String {
        match self.crash {
            Some(c) => format!("cases/{}/{}@{}", self.design, c.point, c.hit),
            None => format!("cases/{}/probe", self.design),
        }
    }

    pub fn hit(&self) -> u32 {
        self.crash.map_or(0, |c| c.hit)
    }
}

/// The result of one case, as `explore.json` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub variant: &'static str,
    /// None for the probe.
    pub point: Option<&'static str>,
    pub hit: u32,
    pub expect_reached: bool,
    pub status: Status,
    pub invariants: Invariants,
    /// Every anomaly of the case's history (Jepsen's words), allowed ones included.
    pub anomalies: Vec<Found>,
    /// The anomalies the design does not allow: the case is valid when this is empty.
    pub bad_anomalies: Vec<Found>,
    pub counts: Counts,
    /// The crashed step's exit status (128 + signal for a signal).
    pub crash_exit: Option<i32>,
    /// The highest hit of every point over the scenario's processes (its `point` events).
    pub hits: BTreeMap<String, u32>,
    /// The same over the recovery's processes.
    pub recovery_hits: BTreeMap<String, u32>,
    pub recovery_rounds: u32,
    pub processes: usize,
    pub problems: Vec<String>,
    pub wall_ms: f64,
    pub evidence: String,
}

/// Run one case into `env.dir/<case.evidence_dir()>`.
pub fn run(plan: &dyn ExplorePlan, case: &Case, env: &Env<'_>) -> Result<CaseResult> {
    if let Some(c) = case.crash {
        assert!(
            (1..=crate::crash::HIT_MAX).contains(&c.hit),
            "{}@{}: a hit counts from 1",
            c.point,
            c.hit
        );
    }
    let started = Instant::now();
    // A power design runs the lab's own design under its profile, cut by its nemesis.
    let power = env.power.iter().find(|d| d.name == case.design);
    let case_env;
    let env = match power {
        Some(d) => {
            case_env = Env {
                nemesis: d.nemesis,
                profile: d.profile,
                ..*env
            };
            &case_env
        }
        None => env,
    };
    let design = power.map_or(case.design, |d| d.lab_design);
    let rel = case.evidence_dir();
    let case_dir = env.dir.join(&rel);
    fs::create_dir_all(&case_dir).with_context(|| format!("creating {rel}"))?;
    let work = tempfile::Builder::new()
        .prefix("crashlab-explore-")
        .tempdir_in(env.work_root)
        .context("creating a work directory")?;
    // A lab on servers: the case's own databases and queues, `stack.json` in its work
    // directory; dropped once the case's rows (and kept copies) are taken.
    let stackfile = match env.session {
        Some(session) => Some(session.prepare(&crate::engine::fleet::next_tag(), work.path())?),
        None => None,
    };
    let mut steps = Steps::new(env, case.crash, rel.clone(), work.path());
    plan.scenario(design, &mut steps)?;
    let scenario_steps = steps.records.len();
    assert!(scenario_steps > 0, "a scenario runs at least one step");

    let mut problems = Vec::new();
    let mut crash_exit = None;
    let mut crashed = false;
    if let Some(r) = steps.records.iter().find(|r| r.armed) {
        let expected = env.nemesis.expected_exit();
        crash_exit = Some(r.ended.exit);
        crashed = r.crashed() || r.ended.exit == expected;
        if crashed && !(r.crashed() && r.ended.exit == expected) {
            problems.push(format!(
                "{}: exit {} and {} crash event, expected exit {expected} with the event",
                r.name,
                r.ended.exit,
                if r.crashed() { "a" } else { "no" },
            ));
        }
    }

    if env.nemesis.name() == "power-loss" {
        super::power::settle_hot_journals(work.path(), plan.databases())?;
    }
    // Recovery: the lab's roles again, the same code, no crash, while anything is owed.
    steps.recovering();
    let cut = env.nemesis.name() == "power-loss";
    // Under power loss a file the cut left unusable (corrupt, a foreign header) is refused by
    // the lab's reading of it as bad input: the case is judged as having lost what it held.
    let mut unreadable = None;
    let mut rounds = 0;
    for round in 1..=ROUNDS_MAX {
        match plan.recover(design, round, &mut steps) {
            Ok(true) => rounds = round,
            Ok(false) => break,
            Err(e) if cut && super::power::unreadable(&e) => {
                unreadable = Some(super::power::relative(&e, work.path()));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    assert!(steps.all_stopped(), "every background step was stopped");

    let error = endings_wrong(&steps, crashed, env, &mut problems);
    if let Some(c) = case.crash.filter(|c| c.expect_reached && !crashed) {
        problems.push(format!(
            "the probe reached {} at least {}, this case never crashed there",
            c.point,
            crate::out::plural(c.hit, "time", "times")
        ));
    }
    let judgement = match unreadable {
        Some(why) => super::power::unreadable_judgement(why),
        None => match plan.judge(&steps) {
            Ok(j) => j,
            Err(e) if cut && super::power::unreadable(&e) => {
                super::power::unreadable_judgement(super::power::relative(&e, work.path()))
            }
            Err(e) => return Err(e),
        },
    };
    let findings = jepsen::check(&judgement.history, judgement.allowed);
    let (status, invariants) = settle(
        error,
        case.crash.is_some(),
        crashed,
        &judgement,
        !findings.valid(),
        &mut problems,
    );
    let judged = matches!(status, Status::Holds | Status::Breaks);

    let (scenario, recovery) = steps.records.split_at(scenario_steps);
    evidence::write_json(&case_dir, "processes.json", &steps.processes)?;
    // What each cut took back (files, byte ranges): evidence; the undo log is not.
    let cuts = work.path().join(POWER_CUTS_NAME);
    if cuts.is_file() {
        fs::copy(&cuts, case_dir.join(POWER_CUTS_NAME))
            .with_context(|| format!("keeping {POWER_CUTS_NAME} of {rel}"))?;
    }
    // The files as recovery left them: sizes, raw and logical digests.
    let rows = env
        .store
        .snapshot_settled(work.path(), plan.databases(), &rel, "final")?;
    evidence::write_json(&case_dir, evidence::DATABASE_FILES, &rows)?;
    if matches!(status, Status::Breaks | Status::Error) {
        let existing: Vec<&str> = plan
            .databases()
            .iter()
            .copied()
            .filter(|d| rows.iter().any(|r| r.file == *d && r.exists))
            .collect();
        keep_databases(env.store, work.path(), &case_dir.join("db"), &existing)?;
    }
    if let (Some(session), Some(file)) = (env.session, &stackfile) {
        session.release(file)?;
    }
    let result = CaseResult {
        variant: case.design,
        point: case.crash.map(|c| c.point),
        hit: case.hit(),
        expect_reached: case.crash.is_some_and(|c| c.expect_reached),
        status,
        invariants,
        anomalies: if judged {
            findings.anomalies
        } else {
            Vec::new()
        },
        bad_anomalies: if judged {
            findings.bad_anomalies
        } else {
            Vec::new()
        },
        counts: judgement.counts,
        crash_exit,
        hits: hits(scenario),
        recovery_hits: hits(recovery),
        recovery_rounds: rounds,
        processes: steps.processes.len(),
        problems,
        wall_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
        evidence: rel,
    };
    evidence::write_json(&case_dir, "result.json", &result)?;
    Ok(result)
}

/// The highest hit of every point over the given processes, from their `point` events.
pub fn hits(records: &[StepRecord]) -> BTreeMap<String, u32> {
    let mut hits: BTreeMap<String, u32> = BTreeMap::new();
    for event in records.iter().flat_map(|r| &r.events) {
        if let Event::Point { point, hit } = event {
            let max = hits.entry(point.clone()).or_insert(0);
            *max = (*max).max(*hit);
        }
    }
    hits
}

/// Keep a broken case's databases for `sqlite3`, each as one file (the store's `keep` says why).
pub fn keep_databases(
    store: &dyn crate::engine::state::StateStore,
    work: &Path,
    to: &Path,
    databases: &[&str],
) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for db in databases {
        // A server's store is no file in the work directory: the caller names existing ones.
        if store.kind() != "sqlite" || work.join(db).is_file() {
            store.keep(work, db, to)?;
        }
    }
    Ok(())
}

/// A case's status and invariants from how it ran and what its checker found: an error
/// judges nothing, an armed point that never crashed is not reached (never a pass), and
/// otherwise every invariant and every bad anomaly counts. The checker's reasons join
/// `problems` only when the invariants were judged.
pub fn settle(
    error: bool,
    armed: bool,
    crashed: bool,
    judgement: &Judgement,
    bad_anomalies: bool,
    problems: &mut Vec<String>,
) -> (Status, Invariants) {
    let reached_ok = crashed && problems.is_empty();
    let (status, invariants) = if error {
        (Status::Error, Invariants::default())
    } else if armed && !crashed {
        (Status::NotReached, Invariants::default())
    } else {
        let invariants = Invariants {
            reached: armed.then_some(reached_ok),
            no_lost_effect: Some(judgement.no_lost_effect),
            no_duplicate_effect: Some(judgement.no_duplicate_effect),
            nothing_stuck: Some(judgement.nothing_stuck),
            acknowledged_durable: Some(judgement.acknowledged_durable),
        };
        let all = Invariant::ALL
            .iter()
            .all(|i| invariants.get(*i) != Some(false));
        let holds = all && !bad_anomalies;
        (
            if holds { Status::Holds } else { Status::Breaks },
            invariants,
        )
    };
    if matches!(status, Status::Holds | Status::Breaks) {
        problems.extend(judgement.problems.iter().cloned());
    }
    (status, invariants)
}

/// Every process but the crashed one must end as expected; anything else makes the case an
/// error. One problem per process that did not; true when any did not.
fn endings_wrong(
    steps: &Steps<'_>,
    crashed: bool,
    env: &Env<'_>,
    problems: &mut Vec<String>,
) -> bool {
    let mut error = false;
    for (r, p) in steps.records.iter().zip(&steps.processes) {
        assert_eq!(r.name, p.step, "one record per process, in order");
        // A hang is the crash of a nemesis that leaves the killing to the engine: the
        // timeout's SIGKILL ends it.
        let hung = r.armed && env.nemesis.needs_kill() && r.crashed();
        let problem = if let Some(why) = &r.events_error {
            Some(format!("{}: its events: {why}", r.name))
        } else if r.ended.timed_out && !hung {
            Some(format!(
                "{}: killed after the {} ms step timeout",
                r.name,
                env.timeout.as_millis()
            ))
        } else if !r.armed
            && r.ended.exit == fail::EXIT_USAGE
            && env.nemesis.name() == "power-loss"
            && super::power::refused_broken_file(&steps.stderr_of(&r.name))
        {
            // A role that refused a file the cut broke (one line, exit 2) did its job.
            None
        } else if !r.armed && r.ended.exit != p.expected_exit {
            Some(format!(
                "{}: exit {}, expected {}",
                r.name, r.ended.exit, p.expected_exit
            ))
        } else if !r.armed && r.crashed() {
            Some(format!(
                "{}: a crash event in a process with no crash",
                r.name
            ))
        } else if r.armed
            && !crashed
            && !(r.ended.exit == fail::EXIT_NOT_REACHED && r.not_reached())
        {
            // Armed and not reached: the phase ran to its end and said so (a `not-reached`
            // event, exit 78); anything else is no evidence of either.
            Some(format!(
                "{}: exit {} without its crash event or a not-reached event with exit {}",
                r.name,
                r.ended.exit,
                fail::EXIT_NOT_REACHED
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            error = true;
            problems.push(problem);
        }
    }
    error
}
