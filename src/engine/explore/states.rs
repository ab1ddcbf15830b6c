//! `--cut exhaustive` in explore: every state of a case's cut is recovered and judged like a
//! case (`case::finish`), in a fresh work directory that holds the state's images, its steps
//! before the cut replayed from the case's own records. The case then speaks for all of its
//! states: it breaks when one does, with every invariant any of them broke and every bad
//! anomaly; its `states` summary counts them, and `states.json` beside it names each broken
//! one. A broken state keeps its outputs and databases under `states/<k>/` (the lowest
//! `BROKEN_KEPT_MAX` indices); the case's own state, index 0, is always there.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::evidence;
use crate::engine::explore::case::{self, Case, CaseResult};
use crate::engine::explore::invariant::{Invariant, Invariants, Status};
use crate::engine::explore::plan::ExplorePlan;
use crate::engine::explore::steps::{Env, Forked, Prefix, Steps};
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::power::cut::image::State;
use crate::power::cut::FileCut;
use crate::power::states::{Bounds, Fate};

/// Broken states kept whole per case (outputs, databases): the lowest indices.
pub const BROKEN_KEPT_MAX: usize = 8;
/// A case's problems name at most this many of its broken states' problems.
const PROBLEM_STATES_MAX: usize = 3;

/// The states of one case's cut, as `explore.json` and the table give them.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Summary {
    /// The unsynced acts at the cut: writes and truncates since their file's last sync,
    /// creates and unlinks since their directory's.
    pub unsynced: usize,
    /// `523`, or `4096 of ~2^20 (bounded)`.
    pub states: String,
    pub enumerated: usize,
    /// All the states there are: exact when `exact`, else an upper bound.
    pub total: f64,
    pub exact: bool,
    pub bounded: bool,
    /// States whose images differ: each is run once.
    pub unique: usize,
    pub run: usize,
    pub broke: usize,
    /// States whose run said nothing (a process failed for another reason than the cut).
    pub errors: usize,
    /// The broken states, by index (`states.json` says how each is cut).
    pub broken: Vec<usize>,
}

/// What a case's fork shares with its states' runs.
pub struct Shared {
    pub case: Case,
    pub forked: Forked,
    pub prefix: Arc<Prefix>,
    /// The broken states whose directories are kept, at most `BROKEN_KEPT_MAX`.
    kept: Mutex<BTreeSet<usize>>,
}

impl Shared {
    pub fn new(case: Case, forked: Forked, prefix: Prefix) -> Shared {
        Shared {
            case,
            forked,
            prefix: Arc::new(prefix),
            kept: Mutex::new(BTreeSet::new()),
        }
    }

    /// The states left to run: every distinct image but the case's own.
    pub fn to_run(&self) -> &[usize] {
        &self.forked.unique[1..]
    }
}

/// One state's cut, as its `power-cuts.jsonl` line says it: which acts it kept, dropped and
/// tore (by their record's index in `states.json`'s `log`), and what that did to the files.
#[derive(Serialize)]
struct StateCut<'a> {
    cut: &'static str,
    seed: u64,
    state: usize,
    records: usize,
    first_record: usize,
    unsynced: usize,
    torn_tail_bytes: u64,
    kept: Vec<usize>,
    dropped: Vec<usize>,
    /// (act, sectors of it that reached the disk).
    torn: Vec<(usize, u32)>,
    files: &'a [FileCut],
    shm_removed: &'a [String],
    image_sha256: &'a str,
}

fn write_cut(
    shared: &Shared,
    bounds: Bounds,
    index: usize,
    state: &State,
    dir: &Path,
) -> Result<()> {
    let crashed = &shared.forked.crashed;
    let acts = crashed.named_acts();
    let mut cut = StateCut {
        cut: "exhaustive",
        seed: bounds.seed,
        state: index,
        records: crashed.records(),
        first_record: crashed.first_record(),
        unsynced: acts.len(),
        torn_tail_bytes: crashed.torn_tail_bytes(),
        kept: Vec::new(),
        dropped: Vec::new(),
        torn: Vec::new(),
        files: &state.files,
        shm_removed: &state.shm_removed,
        image_sha256: &state.sha256,
    };
    for ((at, _, _), fate) in acts.iter().zip(&shared.forked.space.states[index]) {
        match fate {
            Fate::Kept => cut.kept.push(*at),
            Fate::Dropped => cut.dropped.push(*at),
            Fate::Torn(sectors) => cut.torn.push((*at, *sectors)),
        }
    }
    let line = serde_json::to_string(&cut)? + "\n";
    std::fs::write(dir.join(POWER_CUTS_NAME), line)
        .with_context(|| format!("writing {POWER_CUTS_NAME} of state {index}"))
}

/// Run state `index` of a case's fork; its evidence under `states/<index>/`, removed when it
/// holds or past the kept broken ones.
pub fn run(
    plan: &dyn ExplorePlan,
    env: &Env<'_>,
    shared: &Shared,
    index: usize,
) -> Result<CaseResult> {
    let started = Instant::now();
    let case = &shared.case;
    let (case_env, design) = case::env_of(case, env);
    let env = &case_env;
    let bounds = env.states.expect("a state belongs to an exhaustive design");
    let rel = format!("{}/states/{index}", case.evidence_dir());
    let dir = env.dir.join(&rel);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {rel}"))?;
    let work =
        crate::owner::tempdir_in("state", env.work_root).context("creating a work directory")?;
    let crashed = Arc::clone(&shared.forked.crashed);
    let state = Arc::new(crashed.state(&shared.forked.space.states[index])?);
    let mut steps = Steps::new(env, case.crash, case.evidence_dir(), work.path());
    steps.replay(
        Arc::clone(&shared.prefix),
        crashed,
        Arc::clone(&state),
        index,
    );
    plan.scenario(design, &mut steps)?;
    let mut result = case::finish(plan, design, case, env, &mut steps, (&dir, &rel), started)?;
    // The processes this state ran: its steps before the cut are the case's.
    result.processes -= steps.replayed_processes();
    write_cut(shared, bounds, index, &state, &dir)?;
    evidence::write_json(&dir, "result.json", &result)?;
    // Keep the lowest broken indices only: a state past them goes, or pushes one out.
    let mut drop = (result.status == Status::Holds).then_some(index);
    if drop.is_none() {
        let mut kept = shared.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.insert(index);
        if kept.len() > BROKEN_KEPT_MAX {
            drop = kept.pop_last();
        }
    }
    if let Some(gone) = drop {
        let path = env
            .dir
            .join(format!("{}/states/{gone}", case.evidence_dir()));
        std::fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(result)
}

/// The case's own state (index 0): its cut record beside its later steps' outputs.
pub fn record_first(env: &Env<'_>, shared: &Shared) -> Result<()> {
    let (case_env, _) = case::env_of(&shared.case, env);
    let bounds = case_env
        .states
        .expect("a fork belongs to an exhaustive design");
    let dir = env
        .dir
        .join(format!("{}/states/0", shared.case.evidence_dir()));
    std::fs::create_dir_all(&dir)?;
    write_cut(shared, bounds, 0, &shared.forked.first, &dir)
}

/// The case, speaking for every state of its cut: broken when one broke, an error when one
/// said nothing; its invariants and bad anomalies those of all of them. Writes `states.json`
/// and the case's `result.json` again.
pub fn aggregate(
    env: &Env<'_>,
    shared: &Shared,
    result: &mut CaseResult,
    runs: &[(usize, CaseResult)],
) -> Result<()> {
    let space = &shared.forked.space;
    let mut all: Vec<(usize, &CaseResult)> = vec![(0, &*result)];
    all.extend(runs.iter().map(|(i, r)| (*i, r)));
    all.sort_by_key(|(i, _)| *i);
    let broken: Vec<usize> = all
        .iter()
        .filter(|(_, r)| r.status == Status::Breaks)
        .map(|(i, _)| *i)
        .collect();
    let errors = all
        .iter()
        .filter(|(_, r)| r.status == Status::Error)
        .count();
    let judged: Vec<&CaseResult> = all
        .iter()
        .map(|(_, r)| *r)
        .filter(|r| matches!(r.status, Status::Holds | Status::Breaks))
        .collect();
    let all_hold = |i: Invariant| -> Option<bool> {
        let seen: Vec<bool> = judged.iter().filter_map(|r| r.invariants.get(i)).collect();
        (!seen.is_empty()).then(|| seen.iter().all(|h| *h))
    };
    let invariants = Invariants {
        reached: all_hold(Invariant::Reached),
        no_lost_effect: all_hold(Invariant::NoLostEffect),
        no_duplicate_effect: all_hold(Invariant::NoDuplicateEffect),
        nothing_stuck: all_hold(Invariant::NothingStuck),
        acknowledged_durable: all_hold(Invariant::AcknowledgedDurable),
    };
    let union = |pick: fn(&CaseResult) -> &Vec<crate::engine::jepsen::Found>| {
        let mut out: Vec<crate::engine::jepsen::Found> = Vec::new();
        for r in &judged {
            for f in pick(r) {
                if !out
                    .iter()
                    .any(|o| o.anomaly == f.anomaly && o.item == f.item)
                {
                    out.push(f.clone());
                }
            }
        }
        out
    };
    let (anomalies, bad_anomalies) = (union(|r| &r.anomalies), union(|r| &r.bad_anomalies));
    let mut problems = result.problems.clone();
    for (i, r) in all
        .iter()
        .filter(|(i, r)| *i != 0 && r.status != Status::Holds)
        .take(PROBLEM_STATES_MAX)
    {
        problems.extend(r.problems.iter().map(|p| format!("state {i}: {p}")));
    }
    let summary = Summary {
        unsynced: shared.forked.crashed.acts().len(),
        states: space.describe(),
        enumerated: space.states.len(),
        total: space.total,
        exact: space.exact,
        bounded: space.bounded,
        unique: shared.forked.unique.len(),
        run: all.len(),
        broke: broken.len(),
        errors,
        broken,
    };
    result.status = if errors > 0 {
        Status::Error
    } else if summary.broke > 0 {
        Status::Breaks
    } else {
        result.status
    };
    result.invariants = invariants;
    result.anomalies = anomalies;
    result.bad_anomalies = bad_anomalies;
    result.problems = problems;
    result.processes += runs.iter().map(|(_, r)| r.processes).sum::<usize>();
    result.states = Some(summary.clone());
    let dir = env.dir.join(shared.case.evidence_dir());
    let (case_env, _) = case::env_of(&shared.case, env);
    let bounds = case_env
        .states
        .expect("a fork belongs to an exhaustive design");
    let acts: Vec<serde_json::Value> = shared
        .forked
        .crashed
        .named_acts()
        .into_iter()
        .map(|(at, op, path)| serde_json::json!({"record": at, "op": op, "path": path}))
        .collect();
    let kept: Vec<usize> = shared
        .kept
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .copied()
        .collect();
    let record = serde_json::json!({
        "max_states": bounds.max_states,
        "seed": bounds.seed,
        "tear": bounds.tear,
        "summary": summary,
        "kept": kept,
        "acts": acts,
        "first_record": shared.forked.crashed.first_record(),
        "log": shared.forked.crashed.record(),
    });
    evidence::write_json(&dir, "states.json", &record)?;
    evidence::write_json(&dir, "result.json", &*result)?;
    Ok(())
}
