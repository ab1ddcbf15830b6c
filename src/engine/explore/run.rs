//! The cases of a run on `jobs` threads: every design's probe first in the queue, and each
//! probe, as it ends, queues its design's cases (every point at every hit it saw, up to
//! `HITS_MAX`), so no thread waits for the slowest probe before the cases start. Under `--cut
//! exhaustive` each case, as it ends, queues the states of its cut in front of the queue.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{Context, Result};

use crate::engine::explore::case::{self, Case, CaseResult};
use crate::engine::explore::plan::ExplorePlan;
use crate::engine::explore::shard::{Plan, Shard};
use crate::engine::explore::states::{self, Shared};
use crate::engine::explore::steps::{Crash, Env};

/// The largest `@N` explored per point: the scenarios reach none more than 3 times.
pub const HITS_MAX: u32 = 8;

/// A probe's cases: every point, every hit the probe saw (up to HITS_MAX); a point the probe
/// never saw gets one case at @1, to show that arming it crashes nothing.
pub fn cases_of(design: &'static str, points: &[&'static str], probe: &CaseResult) -> Vec<Case> {
    let mut cases = Vec::new();
    for point in points {
        let seen = probe.hits.get(*point).copied().unwrap_or(0);
        if seen == 0 {
            cases.push(Case {
                design,
                crash: Some(Crash {
                    point,
                    hit: 1,
                    expect_reached: false,
                }),
            });
        }
        for hit in 1..=seen.min(HITS_MAX) {
            cases.push(Case {
                design,
                crash: Some(Crash {
                    point,
                    hit,
                    expect_reached: true,
                }),
            });
        }
    }
    cases
}

/// One piece of work: a case (a probe when it has no crash), or a state of a case's fork.
enum Work {
    Case(Case),
    State(usize, usize),
}

struct Queue {
    todo: VecDeque<Work>,
    /// Probes and cases taken and not finished: their cases and states may still come.
    producing: usize,
    done: Vec<(Case, Result<CaseResult>)>,
    /// Each case's fork (`--cut exhaustive`), and its states' results by index.
    forks: Vec<Arc<Shared>>,
    states: Vec<(usize, usize, Result<CaseResult>)>,
    /// Set on the first error: no new work starts.
    stop: bool,
}

/// Run the probes of `designs` and then their cases, and each case's states under `--cut
/// exhaustive` (before any later case, so a fork's capture is held briefly); (probes, cases)
/// come back in a fixed order: designs in their order, points in theirs, hits rising. With a
/// shard, every probe runs and only the cases of its bucket.
#[allow(clippy::too_many_arguments)]
pub fn run_all(
    plan: &dyn ExplorePlan,
    designs: &[&'static str],
    points: &[&'static str],
    env: &Env<'_>,
    jobs: usize,
    shard: Option<(Shard, &Plan)>,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<CaseResult>, Vec<CaseResult>)> {
    assert!(jobs >= 1);
    let probes: VecDeque<Work> = designs
        .iter()
        .map(|&design| {
            Work::Case(Case {
                design,
                crash: None,
            })
        })
        .collect();
    let queue = Mutex::new(Queue {
        todo: probes,
        producing: 0,
        done: Vec::new(),
        forks: Vec::new(),
        states: Vec::new(),
        stop: false,
    });
    let wake = Condvar::new();
    // Each piece is taken once; a thread leaves when nothing is queued and nothing running
    // can queue more. The total is bounded: designs × (1 + points × HITS_MAX) cases, each
    // with at most its design's bound of states.
    let states_max = env
        .power
        .iter()
        .filter_map(|d| d.states)
        .map(|b| b.max_states)
        .max()
        .unwrap_or(0);
    let total_max = designs.len() * (1 + points.len() * HITS_MAX as usize) * (1 + states_max);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                for _ in 0..total_max {
                    let work = {
                        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                        loop {
                            if q.stop || crate::interrupt::caught().is_some() {
                                break None;
                            }
                            if let Some(work) = q.todo.pop_front() {
                                if matches!(work, Work::Case(_)) {
                                    q.producing += 1;
                                }
                                break Some(work);
                            }
                            if q.producing == 0 {
                                break None;
                            }
                            q = wake.wait(q).unwrap_or_else(|p| p.into_inner());
                        }
                    };
                    let Some(work) = work else { break };
                    let case = match work {
                        Work::State(fork, index) => {
                            let shared = {
                                let q = queue.lock().unwrap_or_else(|p| p.into_inner());
                                Arc::clone(&q.forks[fork])
                            };
                            let result = states::run(plan, env, &shared, index);
                            bar.inc(1);
                            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                            q.stop |= result.is_err();
                            q.states.push((fork, index, result));
                            drop(q);
                            wake.notify_all();
                            continue;
                        }
                        Work::Case(case) => case,
                    };
                    let ran = case::run(plan, &case, env);
                    bar.inc(1);
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    q.producing -= 1;
                    let result = match ran {
                        Ok(ran) => {
                            if let Some((forked, prefix)) = ran.fork {
                                let shared = Arc::new(Shared::new(case, forked, prefix));
                                let fork = q.forks.len();
                                let more = shared.to_run().to_vec();
                                bar.inc_length(more.len() as u64);
                                // Before any later case: the capture is held until they end.
                                for &index in more.iter().rev() {
                                    q.todo.push_front(Work::State(fork, index));
                                }
                                q.forks.push(shared);
                            }
                            Ok(ran.result)
                        }
                        Err(e) => Err(e),
                    };
                    if case.crash.is_none() {
                        match &result {
                            Ok(probe) => {
                                let more = cases_of(case.design, points, probe);
                                let more = match shard {
                                    Some((shard, identity)) => shard.keep(identity, more),
                                    None => more,
                                };
                                bar.inc_length(more.len() as u64);
                                q.todo.extend(more.into_iter().map(Work::Case));
                            }
                            Err(_) => q.stop = true,
                        }
                    }
                    if result.is_err() {
                        q.stop = true;
                    }
                    q.done.push((case, result));
                    drop(q);
                    wake.notify_all();
                }
            });
        }
    });
    crate::interrupt::check()?;
    let queue = queue.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut done = queue.done;
    let mut state_runs: Vec<Vec<(usize, CaseResult)>> = vec![Vec::new(); queue.forks.len()];
    for (fork, index, result) in queue.states {
        let shared = &queue.forks[fork];
        let result =
            result.with_context(|| format!("case {} state {index}", shared.case.evidence_dir()))?;
        state_runs[fork].push((index, result));
    }
    for (shared, runs) in queue.forks.iter().zip(&state_runs) {
        let Some((_, Ok(result))) = done.iter_mut().find(|(c, _)| *c == shared.case) else {
            continue;
        };
        states::record_first(env, shared)?;
        states::aggregate(env, shared, result, runs)?;
    }
    let order = |c: &Case| {
        let d = designs
            .iter()
            .position(|x| *x == c.design)
            .unwrap_or(usize::MAX);
        let p = c.crash.map_or(0, |k| {
            1 + points.iter().position(|x| *x == k.point).unwrap_or(0)
        });
        (d, p, c.hit())
    };
    done.sort_by_key(|(c, _)| order(c));
    let mut probes = Vec::new();
    let mut cases = Vec::new();
    for (case, result) in done {
        let result = result.with_context(|| format!("case {}", case.evidence_dir()))?;
        if case.crash.is_none() {
            probes.push(result);
        } else {
            cases.push(result);
        }
    }
    assert_eq!(probes.len(), designs.len(), "one probe per design");
    Ok((probes, cases))
}
