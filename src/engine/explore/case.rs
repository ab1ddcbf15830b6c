//! One case: a fresh work directory, the scenario as real child processes with the crash armed
//! in one of them, recovery to quiescence, the readback and the invariants.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::crash::{self, Mode};
use crate::engine::evidence::{self, Process};
use crate::engine::explore::check::{self, CaseCounts, Invariant};
use crate::engine::explore::state;
use crate::engine::process;
use crate::engine::state::SQLITE;
use crate::fail;
use crate::labs::outbox_inbox::variant::Variant;

/// Contracts the scenario writes: two, so the consumer's second delivery gives `@2` hits.
pub const CONTRACTS: usize = 2;
/// The seed of the generated amounts.
pub const SEED: u64 = 1;
/// Recovery rounds (publisher and consumer again) before a case counts as stuck: one is
/// enough for every design here, the bound keeps a broken one from looping.
pub const ROUNDS_MAX: u32 = 3;
/// Database files of lab 14, relative to the work directory.
pub const DATABASES: &[&str] = &["sender.db", "queue.db", "receiver.db"];

/// What to run: a variant, and the crash (None for the probe that counts hits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseDef {
    pub variant: Variant,
    pub crash: Option<(&'static str, u32)>,
    /// The probe saw the point reached at least `hit` times.
    pub expect_reached: bool,
}

impl CaseDef {
    /// `cases/<variant>/<point>@<hit>`, or `cases/<variant>/probe`.
    pub fn evidence_dir(&self) -> String {
        match self.crash {
            Some((point, hit)) => format!("cases/{}/{point}@{hit}", self.variant.name()),
            None => format!("cases/{}/probe", self.variant.name()),
        }
    }
}

/// How a case ended, as the matrix colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Reached, every invariant held.
    Holds,
    /// Reached, at least one invariant broke.
    Breaks,
    /// The crash never happened: nothing to judge, never a pass.
    NotReached,
    /// A process failed or timed out for another reason than the crash: the case says nothing.
    Error,
}

/// The invariants of one case; `None` where nothing was judged (not reached, or an error).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Invariants {
    pub reached: Option<bool>,
    pub no_lost_effect: Option<bool>,
    pub no_duplicate_effect: Option<bool>,
    pub nothing_stuck: Option<bool>,
    pub acknowledged_durable: Option<bool>,
}

impl Invariants {
    pub fn get(&self, invariant: Invariant) -> Option<bool> {
        match invariant {
            Invariant::Reached => self.reached,
            Invariant::NoLostEffect => self.no_lost_effect,
            Invariant::NoDuplicateEffect => self.no_duplicate_effect,
            Invariant::NothingStuck => self.nothing_stuck,
            Invariant::AcknowledgedDurable => self.acknowledged_durable,
        }
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
    pub counts: CaseCounts,
    /// The crashed step's exit status (128 + signal for a signal).
    pub crash_exit: Option<i32>,
    /// Hits of every point in the scenario's processes: `(point, hits)`.
    pub hits: BTreeMap<String, u32>,
    pub recovery_rounds: u32,
    pub processes: usize,
    pub problems: Vec<String>,
    pub wall_ms: f64,
    pub evidence: String,
}

/// What every case shares.
pub struct Env<'a> {
    pub exe: &'a Path,
    /// The run's directory being written (the `.partial` one).
    pub dir: &'a Path,
    /// Where the cases' work directories are made.
    pub work_root: &'a Path,
    pub mode: Mode,
    pub timeout: Duration,
}

/// One planned process.
struct Plan {
    name: String,
    phase: &'static str,
    args: Vec<String>,
    crash: Option<String>,
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn phase_args(phase: &'static str, variant: Variant) -> Vec<String> {
    let mut a = match phase {
        "sender" => args(&[
            "--db",
            "sender.db",
            "--generate",
            &CONTRACTS.to_string(),
            "--seed",
            &SEED.to_string(),
        ]),
        "publisher" => args(&["--sender", "sender.db", "--queue", "queue.db"]),
        "enqueue" => {
            // A faulty upstream redelivers the first message, same payload: the Inbox's job.
            let amount = crate::rng::amounts(SEED, CONTRACTS)[0];
            args(&[
                "--queue",
                "queue.db",
                "--message",
                "M000001",
                "--contract",
                "C000001",
                "--amount",
                &amount.to_string(),
            ])
        }
        "consumer" => args(&["--queue", "queue.db", "--receiver", "receiver.db"]),
        other => unreachable!("lab 14 has no phase {other}"),
    };
    if variant.phase() == Some(phase) {
        a.push("--variant".to_string());
        a.push(variant.name().to_string());
    }
    a
}

/// The scenario's phases, in order: the business writes two contracts, the publisher sends
/// them, a faulty upstream redelivers the first, the consumer applies.
pub const SCENARIO: &[&str] = &["sender", "publisher", "enqueue", "consumer"];

struct Ran {
    name: String,
    ended: process::Ended,
    stdout: String,
    crashed_line: bool,
}

/// Run one case into `env.dir/<evidence_dir>`.
pub fn run(def: &CaseDef, env: &Env<'_>) -> Result<CaseResult> {
    if let Some((point, hit)) = def.crash {
        assert!(
            (1..=crash::HIT_MAX).contains(&hit),
            "{point}@{hit}: a hit counts from 1"
        );
    }
    let started = Instant::now();
    let rel = def.evidence_dir();
    let case_dir = env.dir.join(&rel);
    fs::create_dir_all(&case_dir).with_context(|| format!("creating {rel}"))?;
    let work = tempfile::Builder::new()
        .prefix("crashlab-explore-")
        .tempdir_in(env.work_root)
        .context("creating a work directory")?;
    let crash_phase = def
        .crash
        .map(|(point, _)| point.split('.').next().unwrap_or(point));
    let mut processes: Vec<Process> = Vec::new();
    let mut ran: Vec<Ran> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut crash_exit = None;
    let mut crashed = false;

    let step = |plan: Plan, processes: &mut Vec<Process>, ran: &mut Vec<Ran>| -> Result<()> {
        let index = processes.len() + 1;
        let name = format!("{index:02}-{}", plan.name);
        let stdout_rel = format!("{name}.stdout.txt");
        let stderr_rel = format!("{name}.stderr.txt");
        let mut argv = vec![plan.phase.to_string()];
        argv.extend(plan.args);
        if let Some(at) = &plan.crash {
            argv.extend([
                "--crash-at".to_string(),
                at.clone(),
                "--crash-mode".to_string(),
                env.mode.name().to_string(),
            ]);
        }
        let ended = process::run(
            env.exe,
            &argv,
            work.path(),
            &case_dir.join(&stdout_rel),
            &case_dir.join(&stderr_rel),
            env.timeout,
        )?;
        let stdout = fs::read_to_string(case_dir.join(&stdout_rel)).unwrap_or_default();
        let crash_line = plan
            .crash
            .as_ref()
            .map(|at| crash::crash_line(at.split('@').next().unwrap_or(at), env.mode));
        let crashed_line = crash_line
            .as_ref()
            .is_some_and(|l| stdout.lines().any(|s| s == l));
        let expected_exit = match (&plan.crash, def.expect_reached) {
            (Some(_), true) => env.mode.expected_exit(),
            // Armed where the probe never saw the point: the phase says NOT-REACHED.
            (Some(_), false) => fail::EXIT_NOT_REACHED,
            (None, _) => fail::EXIT_OK,
        };
        let mut full = vec!["crashlab".to_string()];
        full.extend(argv);
        processes.push(Process {
            scenario: rel.clone(),
            step: name.clone(),
            argv: full,
            expected_exit,
            exit: ended.exit,
            signal: ended.signal,
            crash_point: plan.crash.clone(),
            crash_mode: plan.crash.as_ref().map(|_| env.mode.name().to_string()),
            stdout: stdout_rel,
            stderr: stderr_rel,
            wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
            max_rss_kb: ended.max_rss_kb,
            timed_out: ended.timed_out,
        });
        ran.push(Ran {
            name,
            ended,
            stdout,
            crashed_line,
        });
        Ok(())
    };

    // The scenario, the crash armed in its phase.
    for phase in SCENARIO {
        let crash = match def.crash {
            Some((point, hit)) if crash_phase == Some(*phase) => Some(format!("{point}@{hit}")),
            _ => None,
        };
        let armed = crash.is_some();
        step(
            Plan {
                name: phase.to_string(),
                phase,
                args: phase_args(phase, def.variant),
                crash,
            },
            &mut processes,
            &mut ran,
        )?;
        let last = ran.last().expect("a step just ran");
        if armed {
            crash_exit = Some(last.ended.exit);
            crashed = last.crashed_line || last.ended.exit == env.mode.expected_exit();
            if crashed && !(last.crashed_line && last.ended.exit == env.mode.expected_exit()) {
                problems.push(format!(
                    "{}: exit {} and {} CRASH line, expected exit {} with the line",
                    last.name,
                    last.ended.exit,
                    if last.crashed_line { "a" } else { "no" },
                    env.mode.expected_exit()
                ));
            }
        }
    }
    let scenario_steps = ran.len();
    assert_eq!(
        scenario_steps,
        SCENARIO.len(),
        "every scenario phase ran once"
    );

    // Recovery: the phases again, the same code, no crash, until nothing is pending. A phase
    // runs when it has work: the crashed sender (the business retries; a restarted generator
    // skips what it committed), the publisher while an Outbox row is pending, the consumer
    // while a delivery is. One with nothing pending would only read and leave.
    let sender_owed = crashed && crash_phase == Some("sender");
    let mut rounds = 0;
    let mut observed = state::read(work.path())?;
    while rounds < ROUNDS_MAX && ((sender_owed && rounds == 0) || !observed.quiescent()) {
        rounds += 1;
        for phase in ["sender", "publisher", "consumer"] {
            let due = match phase {
                "sender" => sender_owed && rounds == 1,
                "publisher" => observed.outbox_pending() > 0,
                _ => observed.queue_pending() > 0,
            };
            if !due {
                continue;
            }
            step(
                Plan {
                    name: format!("recover{rounds}-{phase}"),
                    phase,
                    args: phase_args(phase, def.variant),
                    crash: None,
                },
                &mut processes,
                &mut ran,
            )?;
            observed = state::read(work.path())?;
        }
    }
    assert!(
        rounds <= ROUNDS_MAX,
        "recovery runs a bounded number of rounds"
    );

    let endings = ran.iter().enumerate().map(|(i, r)| Ending {
        name: &r.name,
        ended: &r.ended,
        stdout: &r.stdout,
        armed: processes[i].crash_point.is_some(),
        crashed_line: r.crashed_line,
        expected_exit: fail::EXIT_OK,
    });
    let error = endings_wrong(endings, crashed, env, &mut problems);
    if def.crash.is_some() && def.expect_reached && !crashed {
        problems.push(format!(
            "the probe reached {} at least {}, this case never crashed there",
            def.crash.map_or("", |c| c.0),
            crate::out::plural(def.hit(), "time", "times")
        ));
    }

    let stdouts: Vec<(String, String)> = ran
        .iter()
        .map(|r| (r.name.clone(), r.stdout.clone()))
        .collect();
    let judgement = check::judge(&observed, &stdouts);
    let (status, invariants) = settle(
        error,
        def.crash.is_some(),
        crashed,
        &judgement,
        &mut problems,
    );

    assert_eq!(processes.len(), ran.len(), "one record per process");
    state::cross_check(work.path(), &observed)?;
    let hits = hits(&ran[..scenario_steps]);
    evidence::write_json(&case_dir, "processes.json", &processes)?;
    // The files as recovery left them: sizes, raw and logical digests.
    let rows = SQLITE.snapshot(work.path(), DATABASES, &rel, "final")?;
    evidence::write_json(&case_dir, evidence::DATABASE_FILES, &rows)?;
    if matches!(status, Status::Breaks | Status::Error) {
        keep_databases(work.path(), &case_dir.join("db"), DATABASES)?;
    }
    let result = CaseResult {
        variant: def.variant.name(),
        point: def.crash.map(|c| c.0),
        hit: def.hit(),
        expect_reached: def.expect_reached,
        status,
        invariants,
        counts: CaseCounts::Outbox(judgement.counts),
        crash_exit,
        hits,
        recovery_rounds: rounds,
        processes: processes.len(),
        problems,
        wall_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
        evidence: rel,
    };
    evidence::write_json(&case_dir, "result.json", &result)?;
    Ok(result)
}

impl CaseDef {
    pub fn hit(&self) -> u32 {
        self.crash.map_or(0, |c| c.1)
    }
}

/// The highest `POINT <name> #<n>` of every point, over the scenario's processes.
fn hits(ran: &[Ran]) -> BTreeMap<String, u32> {
    point_hits(ran.iter().map(|r| r.stdout.as_str()))
}

/// The highest `POINT <name> #<n>` of every point, over the given stdouts.
pub fn point_hits<'a>(stdouts: impl Iterator<Item = &'a str>) -> BTreeMap<String, u32> {
    let mut hits: BTreeMap<String, u32> = BTreeMap::new();
    for stdout in stdouts {
        for line in stdout.lines() {
            let Some(rest) = line.strip_prefix("POINT ") else {
                continue;
            };
            let Some((name, n)) = rest.split_once(" #") else {
                continue;
            };
            let Ok(n) = n.parse::<u32>() else { continue };
            let max = hits.entry(name.to_string()).or_insert(0);
            *max = (*max).max(n);
        }
    }
    hits
}

/// Keep a broken case's databases for `sqlite3`, each as one file (the store's `keep` says why).
pub fn keep_databases(work: &Path, to: &PathBuf, databases: &[&str]) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for db in databases {
        if work.join(db).is_file() {
            SQLITE.keep(work, db, to)?;
        }
    }
    Ok(())
}

/// A case's status and invariants from how it ran and what its checker found: an error
/// judges nothing, an armed point that never crashed is not reached (never a pass), and
/// otherwise every invariant counts. The checker's reasons join `problems` only when the
/// invariants were judged.
pub fn settle<C>(
    error: bool,
    armed: bool,
    crashed: bool,
    judgement: &check::Judgement<C>,
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
        (if all { Status::Holds } else { Status::Breaks }, invariants)
    };
    if matches!(status, Status::Holds | Status::Breaks) {
        problems.extend(judgement.problems.iter().cloned());
    }
    (status, invariants)
}

/// Whether a process armed with a crash point ended as one that never reached it: exit 78
/// and its `NOT-REACHED <point>@<n>` line.
pub fn said_not_reached(exit: i32, stdout: &str) -> bool {
    exit == fail::EXIT_NOT_REACHED && stdout.lines().any(|l| l.starts_with("NOT-REACHED "))
}

/// How one process of a case ended, beside the exit it had to end with.
pub struct Ending<'a> {
    pub name: &'a str,
    pub ended: &'a process::Ended,
    pub stdout: &'a str,
    pub armed: bool,
    pub crashed_line: bool,
    pub expected_exit: i32,
}

/// Every process but the crashed one must end as expected; anything else makes the case an
/// error. One problem per process that did not; true when any did not.
pub fn endings_wrong<'a>(
    endings: impl IntoIterator<Item = Ending<'a>>,
    crashed: bool,
    env: &Env<'_>,
    problems: &mut Vec<String>,
) -> bool {
    let mut error = false;
    for e in endings {
        // A hang is the crash of `--crash-mode hang`: the timeout's SIGKILL ends it.
        let hung = e.armed && env.mode == Mode::Hang && e.crashed_line;
        let problem = if e.ended.timed_out && !hung {
            Some(format!(
                "{}: killed after the {} ms step timeout",
                e.name,
                env.timeout.as_millis()
            ))
        } else if !e.armed && e.ended.exit != e.expected_exit {
            Some(format!(
                "{}: exit {}, expected {}",
                e.name, e.ended.exit, e.expected_exit
            ))
        } else if !e.armed && e.stdout.lines().any(|l| l.starts_with("CRASH ")) {
            Some(format!(
                "{}: a CRASH line in a process with no crash",
                e.name
            ))
        } else if e.armed && !crashed && !said_not_reached(e.ended.exit, e.stdout) {
            // Armed and not reached: the phase ran to its end and said so (`NOT-REACHED`,
            // exit 78); anything else is no evidence of either.
            Some(format!(
                "{}: exit {} without its CRASH line or a NOT-REACHED line with exit {}",
                e.name,
                e.ended.exit,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_process_that_never_crashed_must_say_not_reached() {
        assert!(said_not_reached(78, "POINT x #1\nNOT-REACHED x@2\n"));
        assert!(
            !said_not_reached(0, "POINT x #1\n"),
            "the old silent exit 0"
        );
        assert!(
            !said_not_reached(78, "POINT x #1\n"),
            "the code without the line"
        );
        assert!(
            !said_not_reached(1, "NOT-REACHED x@2\n"),
            "the line with another code"
        );
    }
}
