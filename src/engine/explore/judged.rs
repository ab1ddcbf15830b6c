//! How a case is judged once its processes have ended: how each of them ended, the status
//! and invariants it comes to, and the acknowledged commits the files no longer hold.

use crate::engine::explore::invariant::{Invariant, Invariants, Status};
use crate::engine::explore::plan::Judgement;
use crate::engine::explore::steps::{Env, StepRecord, Steps};
use crate::fail;

/// The acknowledged commits a judgement found gone (`acknowledged_durable` broken): each
/// process's `commit` event whose words (`<db> <what>`) a problem of the lab names, with that
/// problem; when none is named (the files could not be read at all), one for all of them.
pub fn lost_commits(records: &[StepRecord], judgement: &Judgement) -> Vec<(String, String)> {
    if judgement.acknowledged_durable {
        return Vec::new();
    }
    let mut lost: Vec<(String, String)> = Vec::new();
    for (db, what) in records.iter().flat_map(|r| r.commits()) {
        let commit = format!("{db} {what}");
        let named = judgement.problems.iter().find(|p| p.contains(&commit));
        if let (Some(problem), false) = (named, lost.iter().any(|(c, _)| *c == commit)) {
            lost.push((commit, problem.clone()));
        }
    }
    if lost.is_empty() {
        lost.push((
            "acknowledged commits".to_string(),
            judgement.problems.join("; "),
        ));
    }
    lost
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
pub fn endings_wrong(
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
