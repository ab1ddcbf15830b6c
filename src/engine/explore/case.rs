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
use crate::engine::explore::invariant::{Invariants, Status};
use crate::engine::explore::plan::{Counts, ExplorePlan};
use crate::engine::explore::steps::{Crash, Env, Forked, Prefix, StepRecord, Steps};
use crate::engine::jepsen::{self, Found};
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::engine::state::SnapshotOf;
use crate::events::Event;

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
        evidence_dir(self.design, self.crash.map(|c| (c.point, c.hit)))
    }

    pub fn hit(&self) -> u32 {
        self.crash.map_or(0, |c| c.hit)
    }
}

/// `cases/<design>/<point>@<hit>`, or `cases/<design>/probe` when there is no crash.
fn evidence_dir(design: &str, crash: Option<(&str, u32)>) -> String {
    match crash {
        Some((point, hit)) => format!("cases/{design}/{point}@{hit}"),
        None => format!("cases/{design}/probe"),
    }
}

/// The result of one case, as `explore.json` lists it (and `merge` reads it back).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CaseResult {
    pub variant: &'static str,
    /// None for the probe.
    #[serde(borrow)]
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
    /// Under `--cut exhaustive`: the states of the case's cut, and how many broke.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<super::states::Summary>,
}

impl CaseResult {
    /// Where this case's evidence belongs, from its design, point and hit: a result read back
    /// (`merge`) must name this directory and no other.
    pub fn evidence_dir(&self) -> String {
        evidence_dir(self.variant, self.point.map(|p| (p, self.hit)))
    }
}

/// A case run: its result and, under `--cut exhaustive`, the fork its states start from.
pub struct Ran {
    pub result: CaseResult,
    pub fork: Option<(Forked, Prefix)>,
}

/// The environment of a case's design: a power design runs the lab's own design under its
/// profile, cut by its nemesis. The env, and the lab's design to run.
pub fn env_of<'a>(case: &Case, env: &Env<'a>) -> (Env<'a>, &'static str) {
    match env.power.iter().find(|d| d.name == case.design) {
        Some(d) => (
            Env {
                nemesis: d.nemesis,
                profile: d.profile,
                states: d.states,
                ..*env
            },
            d.lab_design,
        ),
        None => (Env { ..*env }, case.design),
    }
}

/// Run one case into `env.dir/<case.evidence_dir()>`.
pub fn run(plan: &dyn ExplorePlan, case: &Case, env: &Env<'_>) -> Result<Ran> {
    if let Some(c) = case.crash {
        assert!(
            (1..=crate::crash::HIT_MAX).contains(&c.hit),
            "{}@{}: a hit counts from 1",
            c.point,
            c.hit
        );
    }
    let started = Instant::now();
    let (case_env, design) = env_of(case, env);
    let env = &case_env;
    let rel = case.evidence_dir();
    let case_dir = env.dir.join(&rel);
    fs::create_dir_all(&case_dir).with_context(|| format!("creating {rel}"))?;
    let work =
        crate::owner::tempdir_in("explore", env.work_root).context("creating a work directory")?;
    // A lab on servers: the case's own databases and queues, `stack.json` in its work
    // directory; dropped once the case's rows (and kept copies) are taken.
    let stackfile = match env.session {
        Some(session) => Some(session.prepare(&crate::engine::fleet::next_tag(), work.path())?),
        None => None,
    };
    let mut steps = Steps::new(env, case.crash, rel.clone(), work.path());
    plan.scenario(design, &mut steps)?;
    let result = finish(
        plan,
        design,
        case,
        env,
        &mut steps,
        (&case_dir, &rel),
        started,
    )?;
    if let (Some(session), Some(file)) = (env.session, &stackfile) {
        session.release(file)?;
    }
    evidence::write_json(&case_dir, "result.json", &result)?;
    Ok(Ran {
        result,
        fork: steps.take_fork(),
    })
}

/// Everything after a case's scenario: recovery to quiescence, the judgement, and the
/// evidence (`processes.json`, `database-files.json`, the databases of a broken case) in
/// `dir` (`rel` in the run's directory).
pub fn finish(
    plan: &dyn ExplorePlan,
    design: &'static str,
    case: &Case,
    env: &Env<'_>,
    steps: &mut Steps<'_>,
    (dir, rel): (&Path, &str),
    started: Instant,
) -> Result<CaseResult> {
    let work = steps.work().to_path_buf();
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

    let cut = env.nemesis.name() == "power-loss";
    if cut {
        crate::power::settle_hot_journals(&work, plan.databases())?;
    }
    // Recovery: the lab's roles again, the same code, no crash, while anything is owed.
    steps.recovering();
    // Under power loss a file the cut left unusable (corrupt, a foreign header) is refused by
    // the lab's reading of it as bad input: the case is judged as having lost what it held.
    let mut unreadable = None;
    let mut rounds = 0;
    for round in 1..=ROUNDS_MAX {
        match plan.recover(design, round, steps) {
            Ok(true) => rounds = round,
            Ok(false) => break,
            Err(e) if cut && super::power::unreadable(&e) => {
                unreadable = Some(super::power::relative(&e, &work));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    assert!(steps.all_stopped(), "every background step was stopped");

    let error = super::judged::endings_wrong(steps, crashed, env, &mut problems);
    if let Some(c) = case.crash.filter(|c| c.expect_reached && !crashed) {
        problems.push(format!(
            "the probe reached {} at least {}, this case never crashed there",
            c.point,
            crate::out::plural(c.hit, "time", "times")
        ));
    }
    let judgement = match unreadable {
        Some(why) => super::power::unreadable_judgement(why),
        None => match plan.judge(steps) {
            Ok(j) => j,
            Err(e) if cut && super::power::unreadable(&e) => {
                super::power::unreadable_judgement(super::power::relative(&e, &work))
            }
            Err(e) => return Err(e),
        },
    };
    let mut findings = jepsen::check(&judgement.history, judgement.allowed);
    jepsen::lost_commits(
        &mut findings,
        super::judged::lost_commits(&steps.records, &judgement),
        judgement.allowed,
    );
    let (status, invariants) = super::judged::settle(
        error,
        case.crash.is_some(),
        crashed,
        &judgement,
        !findings.valid(),
        &mut problems,
    );
    let judged = matches!(status, Status::Holds | Status::Breaks);

    let (scenario, recovery) = steps.records.split_at(scenario_steps);
    evidence::write_json(dir, "processes.json", &steps.processes)?;
    // What each cut took back (files, byte ranges): evidence; the undo log is not.
    let cuts = work.join(POWER_CUTS_NAME);
    if cuts.is_file() {
        fs::copy(&cuts, dir.join(POWER_CUTS_NAME))
            .with_context(|| format!("keeping {POWER_CUTS_NAME} of {rel}"))?;
    }
    // The files as recovery left them: sizes, raw and logical digests.
    let rows =
        env.store
            .snapshot_settled(&SnapshotOf::new(&work, plan.databases(), rel, "final"))?;
    evidence::write_json(dir, evidence::DATABASE_FILES, &rows)?;
    if matches!(status, Status::Breaks | Status::Error) {
        let existing: Vec<&str> = plan
            .databases()
            .iter()
            .copied()
            .filter(|d| rows.iter().any(|r| r.file == *d && r.exists))
            .collect();
        keep_databases(env.store, &work, &dir.join("db"), &existing)?;
    }
    Ok(CaseResult {
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
        evidence: rel.to_string(),
        states: None,
    })
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
