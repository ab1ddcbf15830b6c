//! The driver: run a lab's scenarios, each step a fresh process in the run's work directory,
//! check every step as it ends, record everything, and print the table.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::engine::crash_mode;
use crate::engine::evidence::{self, Process, Processes, Results, StepResult};
use crate::engine::fleet;
use crate::engine::freeze;
use crate::engine::nemesis::{self, Nemesis};
use crate::engine::observed::ScenarioFindings;
use crate::engine::process;
use crate::engine::report;
use crate::engine::scenario::Scenario;
use crate::engine::state::{self, FileRow, SnapshotOf};
use crate::engine::LabStack;
use crate::fail;
use crate::power::profile::Profile;
use crate::store;

pub struct Options {
    pub out: PathBuf,
    pub keep_db: bool,
    /// `STEP=POINT[@N]` or `STEP=none`.
    pub moves: Vec<String>,
    /// The fault every crashing step injects (`nemesis::choose`).
    pub nemesis: &'static dyn Nemesis,
    /// The store profile every role pins (`--store-profile`).
    pub profile: Profile,
    pub step_timeout_ms: u64,
    /// The driver's own arguments after `crashlab`, for the record.
    pub command: Vec<String>,
    /// Print one JSON document on stdout instead of the table.
    pub json: bool,
    /// `--junit FILE`: one test case per scenario.
    pub junit: Option<PathBuf>,
    /// `--stack`, the server URLs and `--server` (a lab on servers).
    pub stack: crate::engine::stack::StackArgs,
}

/// The largest step timeout accepted: a step is milliseconds of work.
pub const STEP_TIMEOUT_MS_MAX: u64 = 600_000;

mod args;
mod guards;
mod observe;
mod pragmas;
mod step;
mod summary;
mod table;

use guards::{after_crash, cuttable, servers_killable, write_cuts};
use step::{io_failure, readback_key, Ctx};

pub use args::{apply_moves, check_out, claim_out, default_out, utc_stamp};
pub use pragmas::{pragmas, pragmas_of};

pub struct Run {
    pub processes: Processes,
    pub results: Results,
    pub files: Vec<FileRow>,
    pub readbacks: BTreeMap<String, String>,
}

/// The evidence file of a power-loss run: one line per cut, where it happened and what it
/// dropped (files, byte ranges).
pub const POWER_CUTS: &str = nemesis::POWER_CUTS_NAME;

/// Run the lab into `options.out`. Returns the process exit code: 0 when every expectation held.
pub fn run(lab: &LabStack, options: &Options) -> Result<i32> {
    if options.step_timeout_ms == 0 || options.step_timeout_ms > STEP_TIMEOUT_MS_MAX {
        return Err(fail::usage(format!(
            "--step-timeout-ms {} is out of range (1 to {STEP_TIMEOUT_MS_MAX})",
            options.step_timeout_ms
        )));
    }
    if let Some(junit) = &options.junit {
        crate::junit::check_path(junit)?;
    }
    let mut scenarios = (lab.scenarios)();
    apply_moves(lab, &mut scenarios, &options.moves)?;
    cuttable(lab, &scenarios, options.nemesis)?;
    fleet::check(lab, &options.stack)?;
    servers_killable(lab, options)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let partial = claim_out(&options.out)?;
    let started = Instant::now();
    // The servers start once the output is claimed (bad input is said before anything
    // starts) and stop when the session is dropped, however the run ends.
    let session = match fleet::Session::start(lab, &options.stack) {
        Ok(session) => session,
        Err(e) => {
            let _ = fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    let result = execute(
        lab,
        options,
        &scenarios,
        &partial,
        started,
        session.as_ref(),
    );
    let stopped = match session {
        Some(session) => session.finish(),
        None => Ok(()),
    };
    // SIGINT or SIGTERM: the steps' children were killed and the work directories removed
    // as the run unwound; what it wrote goes too, and one line says so (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::engine::process::interrupted(signal, Some(&partial)));
    }
    let run = match result.and_then(|run| stopped.map(|()| run)) {
        Ok(run) => run,
        Err(e) => {
            // Leave the partial directory for inspection; it is never mistaken for evidence.
            return Err(e.context(format!(
                "the run stopped; what it wrote is in {}",
                partial.display()
            )));
        }
    };
    evidence::publish(&partial, &options.out)?;
    if let Some(junit) = &options.junit {
        summary::junit(&run.results).write(junit)?;
    }
    if options.json {
        let document = summary::document(lab, &run, &scenarios, options);
        crate::say!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        table::print_report(lab, &run, &scenarios, options);
    }
    Ok(if run.results.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

fn execute(
    lab: &LabStack,
    options: &Options,
    scenarios: &[Scenario],
    dir: &Path,
    started: Instant,
    session: Option<&fleet::Session>,
) -> Result<Run> {
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    // The checkout's commit is asked of git while the steps run: two git processes cost
    // milliseconds a run should not wait for. The steps never touch the checkout.
    let git =
        std::thread::spawn(|| evidence::build_checkout().and_then(|c| evidence::git_state(&c)));
    let timeout = Duration::from_millis(options.step_timeout_ms);
    // The fault the run injects at each armed point; nothing below asks which one it is.
    let nemesis = options.nemesis;
    let mut cuts = Vec::new();
    let mut processes = Vec::new();
    let mut steps = Vec::new();
    let mut files = Vec::new();
    let mut readbacks = BTreeMap::new();
    let mut findings = Vec::new();
    let mut logical_cache = state::Cache::new();
    for (scenario_index, scenario) in scenarios.iter().enumerate() {
        let work = crate::owner::tempdir("work").context("creating the work directory")?;
        let sub = scenario.dir.clone().unwrap_or_default();
        if !sub.is_empty() {
            fs::create_dir_all(dir.join(&sub)).with_context(|| format!("creating {sub}"))?;
        }
        // A lab on servers: the scenario's own databases and queues, `stack.json` in its
        // work directory; released once its rows (and kept copies) are taken.
        let stackfile = match session {
            Some(session) => Some(session.prepare(&fleet::tag("s", scenario_index), work.path())?),
            None => None,
        };
        // One slot per step, filled when its process ends, so the record keeps step order
        // even when a background process ends after later steps.
        let mut slots: Vec<Option<(Process, StepResult)>> = vec![None; scenario.steps.len()];
        let mut running: Vec<(usize, process::Started)> = Vec::new();
        let mut reaper = process::Reaper(Vec::new());
        let env = crash_mode::role_env(nemesis, &options.profile, work.path());
        let ctx = Ctx {
            scenario,
            sub: &sub,
            dir,
            nemesis,
        };
        for (index, step) in scenario.steps.iter().enumerate() {
            let (stdout_rel, stderr_rel) = ctx.rel(step);
            let argv = step.argv(nemesis);
            let mut cut = false;
            match step.background {
                None => {
                    let ended = process::run_env(
                        &exe,
                        &argv,
                        work.path(),
                        (&dir.join(&stdout_rel), &dir.join(&stderr_rel)),
                        &env,
                        timeout,
                    )?;
                    io_failure(&scenario.name, step, &ended, &dir.join(&stderr_rel))?;
                    cut = after_crash(nemesis, work.path(), scenario, step, &ended, &mut cuts)?;
                    slots[index] = Some(ctx.finish(step, &ended, &mut readbacks));
                }
                Some(background) => {
                    let stdout = dir.join(&stdout_rel);
                    let started = process::spawn_env(
                        &exe,
                        &argv,
                        work.path(),
                        &stdout,
                        &dir.join(&stderr_rel),
                        Some(&process::events_file(&stdout)),
                        &env,
                    )?;
                    reaper.0.push(started.pid);
                    let ready = background.ready;
                    match process::await_event(
                        &started,
                        &process::events_file(&dir.join(&stdout_rel)),
                        |e| ready.is(e),
                        timeout,
                    )? {
                        // A paused role is ready once the kernel reports it stopped.
                        Ok(()) if !step::stopped_if_paused(ready, &started, timeout)? => {
                            let ended = process::stop(&started, false, Duration::from_millis(1))?;
                            reaper.0.retain(|p| *p != started.pid);
                            slots[index] = Some(ctx.finish(step, &ended, &mut readbacks));
                        }
                        Ok(()) => running.push((index, started)),
                        Err(ended) => {
                            let ended = match ended {
                                Some(ended) => ended,
                                None => process::stop(&started, false, Duration::from_millis(1))?,
                            };
                            reaper.0.retain(|p| *p != started.pid);
                            slots[index] = Some(ctx.finish(step, &ended, &mut readbacks));
                        }
                    }
                }
            }
            // Nothing writes a file while it is read: live background steps are stopped
            // for the snapshot and named in its rows (lab/freeze.rs says why).
            // A paused step is stopped already and stays so: it is named, never thawed.
            let live: Vec<libc::pid_t> = running
                .iter()
                .filter(|(i, _)| !step::paused(&scenario.steps[*i]))
                .map(|(_, s)| s.pid)
                .collect();
            let frozen_steps: Vec<String> = running
                .iter()
                .map(|(i, _)| scenario.steps[*i].name.clone())
                .collect();
            let frozen = freeze::freeze(&live)?;
            let mut rows = lab.store.snapshot_cached(
                &SnapshotOf::new(work.path(), lab.databases, &scenario.name, &step.name),
                &mut logical_cache,
            );
            drop(frozen);
            for row in rows.iter_mut().flatten() {
                row.frozen = frozen_steps.clone();
            }
            files.extend(rows?);
            if cut {
                // The files as the cut left them are recorded; the next step finds them as
                // a rebooted machine's first writer leaves them (a hot journal rolled back),
                // which a read-only step could not do itself.
                crate::power::settle_hot_journals(work.path(), lab.databases)?;
            }
            // Background processes whose time is up after this step.
            let due: Vec<usize> = running
                .iter()
                .enumerate()
                .filter(|(_, (i, _))| {
                    scenario.steps[*i]
                        .background
                        .and_then(|b| b.stop_after)
                        .is_some_and(|after| after == step.name)
                })
                .map(|(at, _)| at)
                .collect();
            for at in due.into_iter().rev() {
                let (i, started) = running.remove(at);
                let ended = ctx.stop(&scenario.steps[i], &started, timeout)?;
                reaper.0.retain(|p| *p != started.pid);
                slots[i] = Some(ctx.finish(&scenario.steps[i], &ended, &mut readbacks));
            }
        }
        // The scenario's end: nothing it started outlives it.
        for (i, started) in running.drain(..) {
            let ended = ctx.stop(&scenario.steps[i], &started, timeout)?;
            reaper.0.retain(|p| *p != started.pid);
            slots[i] = Some(ctx.finish(&scenario.steps[i], &ended, &mut readbacks));
        }
        drop(reaper);
        // Every process of the scenario has ended: the state it leaves, which a kept
        // database must show.
        let end = lab.store.snapshot_cached(
            &SnapshotOf::new(work.path(), lab.databases, &scenario.name, state::END),
            &mut logical_cache,
        )?;
        for slot in slots {
            let (process, result) = slot.expect("every step of a scenario has ended");
            processes.push(process);
            steps.push(result);
        }
        findings.extend(ctx.findings(lab, &readbacks));
        if options.keep_db {
            let db_dir = if sub.is_empty() {
                dir.join("db")
            } else {
                dir.join("db").join(&sub)
            };
            fs::create_dir_all(&db_dir)
                .with_context(|| format!("creating {}", db_dir.display()))?;
            for row in end.iter().filter(|r| r.exists) {
                if !lab.databases.contains(&row.file.as_str()) {
                    continue;
                }
                let logical = lab.store.keep(work.path(), &row.file, &db_dir)?;
                // Postcondition: the kept file holds the rows the `<end>` row records.
                anyhow::ensure!(
                    logical == row.logical_sha256,
                    "kept {} does not show the state recorded after scenario {}",
                    row.file,
                    scenario.name
                );
            }
        }
        files.extend(end);
        if let (Some(session), Some(file)) = (session, &stackfile) {
            session.release(file)?;
        }
    }
    let ok = steps.iter().all(|s| s.ok) && findings.iter().all(|f: &ScenarioFindings| f.ok);
    let mut command = vec!["crashlab".to_string()];
    command.extend(options.command.iter().cloned());
    let processes = Processes {
        lab: lab.full_name(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: git.join().unwrap_or(None),
        sqlite_version: store::sqlite_version(),
        pragmas: pragmas_of(&options.profile),
        command,
        crash_mode: nemesis.name().to_string(),
        step_timeout_ms: options.step_timeout_ms,
        moved_crashes: options.moves.clone(),
        total_wall_ms: 0.0,
        processes,
    };
    let results = Results {
        lab: lab.full_name(),
        ok,
        steps,
        scenarios: findings,
    };
    let mut run = Run {
        processes,
        results,
        files,
        readbacks,
    };
    evidence::write_json(dir, evidence::RESULTS, &run.results)?;
    if nemesis.name() == "power-loss" {
        write_cuts(dir, &cuts)?;
    }
    evidence::write_database_files(dir, &run.files)?;
    if let Some(session) = session {
        session.write(dir)?;
    }
    // The total covers every step and every snapshot, up to the last evidence file.
    run.processes.total_wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    evidence::write_json(dir, evidence::PROCESSES, &run.processes)?;
    report::write(dir)?;
    evidence::write_manifest(dir)?;
    Ok(run)
}
