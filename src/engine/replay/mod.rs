//! The audit's replay: a driver run's SQL trace, with its bound values, is a complete history
//! of its databases. Every traced statement is run again, step by step, against fresh
//! in-memory databases (one per database file of each scenario's work directory), and what
//! the evidence records is checked against the replayed state:
//!
//! - after every step, each file's `logical_sha256` in `database-files.json`;
//! - every field of every readback (the last JSON line of each readback step);
//! - the commit claims (each `COMMITTED` line's commit event, claims.rs) against the traced
//!   commits (commits.rs);
//! - the roles' claims against what their statements did (each lab's `LabReplay::claims`, through
//!   claims_api.rs).
//!
//! What the replay proves: that the recorded states and claims are the ones the traced
//! statements produce, given that the trace is what the roles printed. What it cannot
//! prove: that the trace itself is complete and true (a role that ran a statement and did not
//! trace it, or a consistently rewritten trace with rewritten digests and readbacks, replays
//! cleanly); when exactly a background process wrote (it finds the first prefix of that
//! process's commits that gives each recorded state, never moving back); the order of two
//! processes that write one file at the same time (reported, not guessed); statements
//! that a killed process ran after its last flushed line; wall times and anything else no
//! statement decides.
//!
//! Threads: lab 13's receiver serves requests on several workers, each with its own
//! connection, all printing to one stdout. A worker waiting for the write lock traces its
//! `BEGIN IMMEDIATE` inside another worker's transaction (real traces under concurrent
//! requests do this). Since `BEGIN IMMEDIATE` serializes writers, the statements after such
//! a BEGIN belong to the transaction that holds the lock, and the waiting one starts when it
//! ends: the replay queues it so (engine.rs), which reproduces the file exactly. What such a
//! role's other workers read inside that window, or while a traced COMMIT was not yet
//! reported, is not judged. In a single-connection role a BEGIN inside an open transaction
//! is reported as a problem (SQLite refuses it).

mod claims;
pub mod claims_api;
mod commits;
mod compare;
mod cut;
mod engine;
pub(crate) mod lines;
mod load;
mod trace;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::engine::evidence::{Process, DATABASE_FILES};
use crate::engine::scenario::{readback_json, Expect, Scenario};
use crate::engine::LabStack;
pub use claims_api::{LabReplay, RoleClaims};
pub use cut::Cut;
pub use load::Evidence;
pub use trace::complete as complete_lines;

/// Whether a phase serves on several threads that share one stdout (and one events file).
pub fn threaded(lab: &LabStack, phase: &str) -> bool {
    lab.replay.threaded.contains(&phase)
}

/// (evidence file, problem) pairs, in the order found.
pub type Problems = Vec<(String, String)>;

/// The files a process's argv names, by flag: `--sender sender.db` → (`sender`, …), only
/// files the lab has.
fn flags(argv: &[String], lab: &LabStack) -> BTreeMap<String, String> {
    argv.windows(2)
        .filter_map(|w| {
            let flag = w[0].strip_prefix("--")?;
            lab.databases
                .contains(&w[1].as_str())
                .then(|| (flag.to_string(), w[1].clone()))
        })
        .collect()
}

/// The file a traced database name stands for: `--<name> FILE`, or `--db FILE` of the role
/// whose own database it is (the sender's `sender`, the receiver's `receiver`).
/// A store on servers is named by its logical name, which is also its traces' name
/// (`--db sender` and `SQL sender …`).
fn resolve(files: &BTreeMap<String, String>, db: &str, phase: &str) -> Option<String> {
    files
        .get(db)
        .or_else(|| files.get("db").filter(|file| db == phase || *file == db))
        .cloned()
}

/// Replay every scenario of a driver run, read from the audit's snapshot of its directory,
/// and return what disagrees.
/// `pragmas`: the ones `processes.json` records every connection pinned. `cuts`: under power
/// loss, every cut (empty for a power-loss run that made none), else None.
pub fn check(
    evidence: &dyn Evidence,
    lab: &LabStack,
    scenarios: &[Scenario],
    processes: &[Process],
    pragmas: &std::collections::BTreeMap<String, String>,
    cuts: Option<&[Cut]>,
) -> Problems {
    let mut problems = Problems::new();
    let rows = match load::rows(evidence) {
        Ok(rows) => rows,
        Err(e) => {
            problems.push((
                DATABASE_FILES.to_string(),
                format!("the replay cannot read it: {e}"),
            ));
            Vec::new()
        }
    };
    for scenario in scenarios {
        if let Some(mut scene) = scene(evidence, lab, scenario, processes, &rows, &mut problems) {
            scene.cuts = cuts.map(|cuts| {
                cuts.iter()
                    .filter(|c| c.scenario == scenario.name)
                    .filter_map(|c| {
                        let at = scenario.steps.iter().position(|s| s.name == c.step)?;
                        Some((at, c.files.clone()))
                    })
                    .collect()
            });
            replay(&mut scene, lab, pragmas, &mut problems);
        }
    }
    problems
}

fn scene<'a>(
    evidence: &dyn Evidence,
    lab: &'a LabStack,
    scenario: &'a Scenario,
    processes: &'a [Process],
    rows: &'a [load::Row],
    problems: &mut Problems,
) -> Option<walk::Scene<'a>> {
    let mut procs = Vec::new();
    let mut readbacks = BTreeMap::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        let record: Option<&Process> = processes
            .iter()
            .find(|p| p.scenario == scenario.name && p.step == step.name);
        let Some(record) = record else {
            problems.push((
                crate::engine::evidence::PROCESSES.to_string(),
                format!(
                    "{}: no process recorded for step {}, so the scenario is not replayed",
                    scenario.name, step.name
                ),
            ));
            return None;
        };
        let text = match load::read_text(evidence, &record.stdout) {
            Ok(text) => text,
            Err(e) => {
                problems.push((record.stdout.clone(), format!("not replayed: {e}")));
                return None;
            }
        };
        if let Expect::Readback(_) = step.expect {
            if let Some(value) = readback_json(&text) {
                readbacks.insert(index, value);
            }
        }
        let mut lines = trace::parse(&text);
        // The claims are the commit events' (claims.rs); the trace says where they stand.
        let events_rel = crate::engine::report::model::events_rel(&record.stdout);
        let events = load::read_text(evidence, &events_rel)
            .and_then(|t| crate::events::parse(&t).map_err(|e| crate::fail::one_line(&e)));
        let unpaired = match events {
            Ok(events) => claims::from_events(&mut lines, &events, threaded(lab, step.phase)),
            Err(e) => Some(format!("its events cannot be read: {e}")),
        };
        if let Some(why) = unpaired {
            problems.push((
                events_rel,
                format!("{}/{}: {why}", scenario.name, step.name),
            ));
        }
        let files = flags(&record.argv, lab);
        let mut line_files = Vec::with_capacity(lines.len());
        for line in &lines {
            let db = match line {
                trace::Line::Sql { db, .. } | trace::Line::Committed { db, .. } => db,
                trace::Line::Other(_) => {
                    line_files.push(None);
                    continue;
                }
            };
            line_files.push(resolve(&files, db, step.phase));
        }
        let writes = trace::written(&lines, &line_files);
        let stop = step
            .background
            .and_then(|b| b.stop_after)
            .and_then(|name| scenario.steps.iter().position(|s| s.name == name));
        procs.push(walk::Proc {
            index,
            step,
            threaded: threaded(lab, step.phase),
            raw_reply: lab.replay.raw_replies.contains(&step.phase),
            record,
            lines,
            line_files,
            files,
            writes,
            stop,
            unjudged: Default::default(),
            pos: 0,
            ended: false,
            session: engine::Session::default(),
            empty: cut::EmptyReads::new(lab.stack.is_none().then_some(lab.schemas)),
        });
    }
    Some(walk::Scene {
        lab,
        name: &scenario.name,
        procs,
        rows: rows
            .iter()
            .filter(|r| r.scenario == scenario.name)
            .collect(),
        readbacks,
        databases: crate::engine::fleet::replayed_stores(lab),
        cuts: None,
    })
}

fn replay(
    scene: &mut walk::Scene<'_>,
    lab: &LabStack,
    pragmas: &std::collections::BTreeMap<String, String>,
    problems: &mut Problems,
) {
    scene.concurrent_writers(problems);
    let mut pins = walk::Pins::new();
    // Each failed search pins a new (observation, process) pair: at most two observations
    // per step (a readback and a snapshot) plus the end, times the processes.
    let bound = (2 * scene.procs.len() + 1) * scene.procs.len() + 1;
    for _ in 0..=bound {
        let mut found = Problems::new();
        match scene.pass(&pins, &mut found) {
            Ok(store) => {
                problems.extend(found);
                for p in &scene.procs {
                    for file in &p.empty.misread {
                        problems.push((
                            p.record.stdout.clone(),
                            format!(
                                "{}/{}: reads {file} as a file holding nothing (no quick_check), while the replayed history gives it content",
                                scene.name, p.step.name
                            ),
                        ));
                    }
                    lines::check(scene.name, p, lab, pragmas, problems);
                    commits::check(scene.name, p, &store, problems);
                    (lab.replay.claims)(&mut claims_api::RoleClaims {
                        scenario: scene.name,
                        proc: p,
                        procs: &scene.procs,
                        store: &store,
                        problems,
                    });
                }
                return;
            }
            Err(held) => {
                let fresh = pins
                    .insert((held.observation, held.proc), held.pos)
                    .is_none();
                assert!(fresh, "a pinned search never fails again");
            }
        }
    }
    problems.push((
        DATABASE_FILES.to_string(),
        format!(
            "{}: the replay did not settle within {bound} passes",
            scene.name
        ),
    ));
}
