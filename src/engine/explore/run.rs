//! The cases of a run on `jobs` threads: every design's probe first in the queue, and each
//! probe, as it ends, queues its design's cases (every point at every hit it saw, up to
//! `HITS_MAX`), so no thread waits for the slowest probe before the cases start.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use anyhow::{Context, Result};

use crate::engine::explore::case::{self, Case, CaseResult};
use crate::engine::explore::plan::ExplorePlan;
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

struct Queue {
    todo: VecDeque<Case>,
    /// Probes taken and not finished: their cases may still come.
    probing: usize,
    done: Vec<(Case, Result<CaseResult>)>,
    /// Set on the first error: no new case starts.
    stop: bool,
}

/// Run the probes of `designs` and then their cases; (probes, cases) come back in a fixed
/// order: designs in their order, points in theirs, hits rising.
pub fn run_all(
    plan: &dyn ExplorePlan,
    designs: &[&'static str],
    points: &[&'static str],
    env: &Env<'_>,
    jobs: usize,
    bar: &indicatif::ProgressBar,
) -> Result<(Vec<CaseResult>, Vec<CaseResult>)> {
    assert!(jobs >= 1);
    let probes: VecDeque<Case> = designs
        .iter()
        .map(|&design| Case {
            design,
            crash: None,
        })
        .collect();
    let queue = Mutex::new(Queue {
        todo: probes,
        probing: 0,
        done: Vec::new(),
        stop: false,
    });
    let wake = Condvar::new();
    // Each case is taken once; a thread leaves when nothing is queued and no probe can
    // queue more. The total is bounded: designs × (1 + points × HITS_MAX).
    let total_max = designs.len() * (1 + points.len() * HITS_MAX as usize);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                for _ in 0..total_max {
                    let case = {
                        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                        loop {
                            if q.stop || crate::interrupt::caught().is_some() {
                                break None;
                            }
                            if let Some(case) = q.todo.pop_front() {
                                if case.crash.is_none() {
                                    q.probing += 1;
                                }
                                break Some(case);
                            }
                            if q.probing == 0 {
                                break None;
                            }
                            q = wake.wait(q).unwrap_or_else(|p| p.into_inner());
                        }
                    };
                    let Some(case) = case else { break };
                    let result = case::run(plan, &case, env);
                    bar.inc(1);
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    if case.crash.is_none() {
                        q.probing -= 1;
                        match &result {
                            Ok(probe) => {
                                let more = cases_of(case.design, points, probe);
                                bar.inc_length(more.len() as u64);
                                q.todo.extend(more);
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
    let mut done = queue.into_inner().unwrap_or_else(|p| p.into_inner()).done;
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
