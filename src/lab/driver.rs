//! The driver: run a lab's scenarios, each step a fresh process in the run's work directory,
//! check every step as it ends, record everything, and print the table.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::crash::{self, Mode};
use crate::fail;
use crate::lab::check::check;
use crate::lab::evidence::{self, Process, Processes, Results, StepResult};
use crate::lab::files::{self, FileRow};
use crate::lab::freeze;
use crate::lab::process;
use crate::lab::report;
use crate::lab::scenario::{Expect, Scenario, Step, Stop};
use crate::lab::Lab;
use crate::store;

pub struct Options {
    pub out: PathBuf,
    pub keep_db: bool,
    /// `STEP=POINT[@N]` or `STEP=none`.
    pub moves: Vec<String>,
    pub crash_mode: Mode,
    pub step_timeout_ms: u64,
    /// The driver's own arguments after `crashlab`, for the record.
    pub command: Vec<String>,
}

/// The largest step timeout accepted: a step is milliseconds of work.
pub const STEP_TIMEOUT_MS_MAX: u64 = 600_000;

/// Apply `--move-crash` to the scenarios; every error is a usage error naming the move.
pub fn apply_moves(lab: &Lab, scenarios: &mut [Scenario], moves: &[String]) -> Result<()> {
    for spec in moves {
        let (name, point) = spec.split_once('=').ok_or_else(|| {
            fail::usage(format!(
                "--move-crash {spec}: expected STEP=POINT[@N] or STEP=none"
            ))
        })?;
        // `SCENARIO/STEP` names one step; a bare `STEP` every step of that name.
        let (only, step_name) = match name.split_once('/') {
            Some((scenario, step)) => (Some(scenario), step),
            None => (None, name),
        };
        let matching: Vec<&mut crate::lab::scenario::Step> = scenarios
            .iter_mut()
            .filter(|s| only.is_none_or(|o| o == s.name))
            .flat_map(|s| s.steps.iter_mut())
            .filter(|s| s.name == step_name)
            .collect();
        if matching.is_empty() {
            return Err(fail::usage(format!(
                "--move-crash {spec}: lab {} has no step '{name}'",
                lab.id
            )));
        }
        for step in matching {
            if point == "none" {
                // No crash: the step runs to its end and must exit 0 (results.json says so).
                step.crash = None;
                step.expected_exit = fail::EXIT_OK;
                continue;
            }
            if !lab.points.iter().any(|p| p.phase() == step.phase) {
                return Err(fail::usage(format!(
                    "--move-crash {spec}: step {name} runs {}, which has no crash points",
                    step.phase
                )));
            }
            crash::parse(point, lab.points, Some(step.phase))?;
            step.crash = Some(point.to_string());
        }
    }
    Ok(())
}

/// A path a user gave, refused when it exists; its `.partial` sibling is where the run writes
/// until it is complete, so the final directory appears whole or not at all.
pub fn claim_out(out: &Path) -> Result<PathBuf> {
    if out.exists() {
        return Err(fail::usage(format!(
            "output directory {} already exists; choose a new one (evidence is never overwritten)",
            out.display()
        )));
    }
    let name = out
        .file_name()
        .ok_or_else(|| fail::usage(format!("output directory {} has no name", out.display())))?;
    let partial = out.with_file_name(format!("{}.partial", name.to_string_lossy()));
    if partial.exists() {
        return Err(fail::usage(format!(
            "{} exists: another run is writing there, or one was interrupted (remove it)",
            partial.display()
        )));
    }
    // A parent that is a file (`--out afile/sub`) is bad input, said before anything is made.
    if let Some(file) = out.ancestors().skip(1).find(|a| a.is_file()) {
        return Err(fail::usage(format!(
            "output directory {}: {} is a file, not a directory",
            out.display(),
            file.display()
        )));
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| out_error(e, parent))?;
    }
    fs::create_dir(&partial).map_err(|e| out_error(e, &partial))?;
    Ok(partial)
}

/// A directory for the output that cannot be made: a path the user may not write or that
/// names no directory is bad input (exit 2); anything else (a full disk) an I/O error (74).
fn out_error(error: std::io::Error, path: &Path) -> anyhow::Error {
    use std::io::ErrorKind;
    let message = format!("creating {}: {error}", path.display());
    match error.kind() {
        ErrorKind::PermissionDenied
        | ErrorKind::ReadOnlyFilesystem
        | ErrorKind::NotADirectory
        | ErrorKind::AlreadyExists
        | ErrorKind::InvalidFilename => fail::usage(message),
        _ => fail::io(message),
    }
}

pub struct Run {
    pub processes: Processes,
    pub results: Results,
    pub files: Vec<FileRow>,
    pub readbacks: BTreeMap<String, String>,
}

pub fn pragmas() -> BTreeMap<String, String> {
    store::PRAGMAS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Run the lab into `options.out`. Returns the process exit code: 0 when every expectation held.
pub fn run(lab: &Lab, options: &Options) -> Result<i32> {
    if options.step_timeout_ms == 0 || options.step_timeout_ms > STEP_TIMEOUT_MS_MAX {
        return Err(fail::usage(format!(
            "--step-timeout-ms {} is out of range (1 to {STEP_TIMEOUT_MS_MAX})",
            options.step_timeout_ms
        )));
    }
    let mut scenarios = (lab.scenarios)();
    apply_moves(lab, &mut scenarios, &options.moves)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let partial = claim_out(&options.out)?;
    let started = Instant::now();
    let result = execute(lab, options, &scenarios, &partial, started);
    // SIGINT or SIGTERM: the steps' children were killed and the work directories removed
    // as the run unwound; what it wrote goes too, and one line says so (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::interrupt::finish(signal, Some(&partial)));
    }
    let run = match result {
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
    print_report(lab, &run, &scenarios, options);
    Ok(if run.results.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

fn execute(
    lab: &Lab,
    options: &Options,
    scenarios: &[Scenario],
    dir: &Path,
    started: Instant,
) -> Result<Run> {
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    // The checkout's commit is asked of git while the steps run: two git processes cost
    // milliseconds a run should not wait for. The steps never touch the checkout.
    let git =
        std::thread::spawn(|| evidence::build_checkout().and_then(|c| evidence::git_state(&c)));
    let timeout = Duration::from_millis(options.step_timeout_ms);
    let mut processes = Vec::new();
    let mut steps = Vec::new();
    let mut files = Vec::new();
    let mut readbacks = BTreeMap::new();
    let mut logical_cache = files::LogicalCache::new();
    for scenario in scenarios {
        let work = tempfile::Builder::new()
            .prefix("crashlab-work-")
            .tempdir()
            .context("creating the work directory")?;
        let sub = scenario.dir.clone().unwrap_or_default();
        if !sub.is_empty() {
            fs::create_dir_all(dir.join(&sub)).with_context(|| format!("creating {sub}"))?;
        }
        // One slot per step, filled when its process ends, so the record keeps step order
        // even when a background process ends after later steps.
        let mut slots: Vec<Option<(Process, StepResult)>> = vec![None; scenario.steps.len()];
        let mut running: Vec<(usize, process::Started)> = Vec::new();
        let mut reaper = process::Reaper(Vec::new());
        let ctx = Ctx {
            scenario,
            sub: &sub,
            dir,
            mode: options.crash_mode,
        };
        for (index, step) in scenario.steps.iter().enumerate() {
            let (stdout_rel, stderr_rel) = ctx.rel(step);
            let argv = step.argv(options.crash_mode);
            match step.background {
                None => {
                    let ended = process::run(
                        &exe,
                        &argv,
                        work.path(),
                        &dir.join(&stdout_rel),
                        &dir.join(&stderr_rel),
                        timeout,
                    )?;
                    io_failure(&scenario.name, step, &ended, &dir.join(&stderr_rel))?;
                    slots[index] = Some(ctx.finish(step, &ended, &mut readbacks));
                }
                Some(background) => {
                    let started = process::spawn(
                        &exe,
                        &argv,
                        work.path(),
                        &dir.join(&stdout_rel),
                        &dir.join(&stderr_rel),
                    )?;
                    reaper.0.push(started.pid);
                    match process::await_ready(
                        &started,
                        &dir.join(&stdout_rel),
                        background.ready,
                        timeout,
                    )? {
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
            let live: Vec<libc::pid_t> = running.iter().map(|(_, s)| s.pid).collect();
            let frozen_steps: Vec<String> = running
                .iter()
                .map(|(i, _)| scenario.steps[*i].name.clone())
                .collect();
            let frozen = freeze::freeze(&live)?;
            let mut rows = files::snapshot_cached(
                work.path(),
                lab.databases,
                &scenario.name,
                &step.name,
                &mut logical_cache,
            );
            drop(frozen);
            for row in rows.iter_mut().flatten() {
                row.frozen = frozen_steps.clone();
            }
            files.extend(rows?);
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
        let end = files::snapshot_cached(
            work.path(),
            lab.databases,
            &scenario.name,
            files::END,
            &mut logical_cache,
        )?;
        for slot in slots {
            let (process, result) = slot.expect("every step of a scenario has ended");
            processes.push(process);
            steps.push(result);
        }
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
                let logical = files::keep(work.path(), &row.file, &db_dir)?;
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
    }
    let ok = steps.iter().all(|s| s.ok);
    let mut command = vec!["crashlab".to_string()];
    command.extend(options.command.iter().cloned());
    let processes = Processes {
        lab: lab.full_name(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: git.join().unwrap_or(None),
        sqlite_version: store::sqlite_version(),
        pragmas: pragmas(),
        command,
        crash_mode: options.crash_mode.name().to_string(),
        step_timeout_ms: options.step_timeout_ms,
        moved_crashes: options.moves.clone(),
        total_wall_ms: 0.0,
        processes,
    };
    let results = Results {
        lab: lab.full_name(),
        ok,
        steps,
    };
    let mut run = Run {
        processes,
        results,
        files,
        readbacks,
    };
    evidence::write_json(dir, evidence::RESULTS, &run.results)?;
    evidence::write_database_files(dir, &run.files)?;
    // The total covers every step and every snapshot, up to the last evidence file.
    run.processes.total_wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    evidence::write_json(dir, evidence::PROCESSES, &run.processes)?;
    report::write(dir)?;
    evidence::write_manifest(dir)?;
    Ok(run)
}

/// A step that ended with an I/O error (exit 74: a full disk, a file past its size limit)
/// says nothing about the protocol: every later step would fail for the same reason and the
/// table would read as a broken design. The run stops here, naming the step and its error.
fn io_failure(scenario: &str, step: &Step, ended: &process::Ended, stderr: &Path) -> Result<()> {
    if ended.exit != fail::EXIT_IOERR {
        return Ok(());
    }
    let said = fs::read_to_string(stderr).unwrap_or_default();
    let said = said.lines().next().unwrap_or("no message").trim();
    let said = said.strip_prefix("crashlab: ").unwrap_or(said);
    Err(fail::io(format!(
        "step {scenario}/{} ended with an I/O error (exit 74: {said}); is the work directory's or the evidence directory's disk full?",
        step.name
    )))
}

/// What finishing a step needs to know of its scenario.
struct Ctx<'a> {
    scenario: &'a Scenario,
    sub: &'a str,
    dir: &'a Path,
    mode: Mode,
}

impl Ctx<'_> {
    /// The step's stdout and stderr files, relative to the run's directory.
    fn rel(&self, step: &Step) -> (String, String) {
        let rel = |kind: &str| {
            if self.sub.is_empty() {
                format!("{}.{kind}.txt", step.name)
            } else {
                format!("{}/{}.{kind}.txt", self.sub, step.name)
            }
        };
        (rel("stdout"), rel("stderr"))
    }

    fn stop(
        &self,
        step: &Step,
        started: &process::Started,
        timeout: Duration,
    ) -> Result<process::Ended> {
        let term = step.background.is_some_and(|b| b.stop == Stop::Term);
        process::stop(started, term, timeout)
    }

    /// Check an ended step and make its record.
    fn finish(
        &self,
        step: &Step,
        ended: &process::Ended,
        readbacks: &mut BTreeMap<String, String>,
    ) -> (Process, StepResult) {
        let (stdout_rel, stderr_rel) = self.rel(step);
        let stdout = fs::read_to_string(self.dir.join(&stdout_rel)).unwrap_or_default();
        let stderr = fs::read_to_string(self.dir.join(&stderr_rel)).unwrap_or_default();
        let verdict = check(
            step,
            self.mode,
            ended.exit,
            ended.timed_out,
            &stdout,
            &stderr,
        );
        if let Expect::Readback(_) = step.expect {
            if let Some(line) = stdout.lines().rev().find(|l| l.starts_with('{')) {
                readbacks.insert(
                    readback_key(&self.scenario.name, &step.name),
                    line.to_string(),
                );
            }
        }
        let mut argv = vec!["crashlab".to_string()];
        argv.extend(step.argv(self.mode));
        let process = Process {
            scenario: self.scenario.name.clone(),
            step: step.name.clone(),
            argv,
            expected_exit: verdict.expected["exit"].as_i64().unwrap_or_default() as i32,
            exit: ended.exit,
            signal: ended.signal,
            crash_point: step.crash.clone(),
            crash_mode: step.crash.as_ref().map(|_| self.mode.name().to_string()),
            stdout: stdout_rel,
            stderr: stderr_rel,
            wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
            max_rss_kb: ended.max_rss_kb,
            timed_out: ended.timed_out,
        };
        let result = StepResult {
            scenario: self.scenario.name.clone(),
            step: step.name.clone(),
            ok: verdict.problems.is_empty(),
            expected: verdict.expected,
            observed: verdict.observed,
            problems: verdict.problems,
        };
        (process, result)
    }
}

/// Readbacks are kept by scenario and step: lab 13 repeats step names across scenarios.
fn readback_key(scenario: &str, step: &str) -> String {
    format!("{scenario}/{step}")
}

fn print_report(lab: &Lab, run: &Run, scenarios: &[Scenario], options: &Options) {
    crate::say!(
        "lab {} ({}): {}; evidence in {}",
        lab.id,
        lab.slug,
        lab.title,
        options.out.display()
    );
    crate::say!();
    let width = scenarios
        .iter()
        .flat_map(|s| s.steps.iter())
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(18);
    crate::say!(
        "{:<width$} {:>6} {:>5} {:>8}  state",
        "step",
        "expect",
        "exit",
        "wall_ms"
    );
    let all_steps = scenarios.iter().flat_map(|s| s.steps.iter());
    let mut current: Option<&str> = None;
    for ((p, r), step) in run
        .processes
        .processes
        .iter()
        .zip(&run.results.steps)
        .zip(all_steps)
    {
        if scenarios.len() > 1 && current != Some(p.scenario.as_str()) {
            current = Some(p.scenario.as_str());
            crate::say!("[{}]", p.scenario);
        }
        let state = match &step.expect {
            Expect::Readback(stage) => {
                let readback = run
                    .readbacks
                    .get(&readback_key(&p.scenario, &p.step))
                    .and_then(|l| serde_json::from_str(l).ok());
                stage.describe(readback.as_ref())
            }
            Expect::Crash => match (&step.crash, r.observed["crash_line"] == true) {
                (Some(point), true) => format!("CRASH {point}"),
                (Some(spec), false) if r.observed["not_reached"] == true => {
                    let (point, hit) = crash::split_spec(spec);
                    crash::not_reached_line(point, hit)
                }
                (Some(point), false) => format!("no CRASH line (armed {point})"),
                (None, _) => "no crash (moved away)".to_string(),
            },
            Expect::Output(text) if r.observed["output"] == true => format!("'{text}'"),
            Expect::Output(text) => format!("no '{text}' in the output"),
            Expect::Exit => String::new(),
        };
        let mark = if r.ok { "" } else { "  <-- FAILED" };
        crate::say!(
            "{:<width$} {:>6} {:>5} {:>8.2}  {state}{mark}",
            p.step,
            p.expected_exit,
            p.exit,
            p.wall_ms
        );
    }
    crate::say!();
    if scenarios.len() > 1 {
        print_scenarios(run, scenarios);
    }
    let failed: Vec<&StepResult> = run.results.steps.iter().filter(|s| !s.ok).collect();
    for s in &failed {
        for problem in &s.problems {
            if scenarios.len() > 1 {
                crate::say!("  {}/{}: {problem}", s.scenario, s.step);
            } else {
                crate::say!("  {}: {problem}", s.step);
            }
        }
    }
    let total = run.processes.total_wall_ms;
    let n = run.processes.processes.len();
    if failed.is_empty() {
        crate::say!("PASS: {n} processes, every expectation held; total wall_ms {total:.1}");
        if !options.moves.is_empty() {
            crate::say!(
                "note: the moved crash ({}) broke no expectation",
                options.moves.join(", ")
            );
        }
    } else {
        crate::say!(
            "FAIL: {} of {n} steps did not hold their expectations; total wall_ms {total:.1}",
            failed.len()
        );
    }
}

/// One line per scenario: its last readback (the counts it must end with) and whether every
/// step held.
fn print_scenarios(run: &Run, scenarios: &[Scenario]) {
    crate::say!("{:<28} {:<4} final state", "scenario", "ok");
    for scenario in scenarios {
        let ok = run
            .results
            .steps
            .iter()
            .filter(|r| r.scenario == scenario.name)
            .all(|r| r.ok);
        let last = scenario.steps.iter().rev().find_map(|s| match &s.expect {
            Expect::Readback(stage) => Some((s, stage)),
            _ => None,
        });
        let state = match last {
            Some((step, stage)) => {
                let readback = run
                    .readbacks
                    .get(&readback_key(&scenario.name, &step.name))
                    .and_then(|l| serde_json::from_str(l).ok());
                stage.describe(readback.as_ref())
            }
            None => String::new(),
        };
        crate::say!(
            "{:<28} {:<4} {state}",
            scenario.name,
            if ok { "yes" } else { "NO" }
        );
    }
    crate::say!();
}

/// `target/lab/14-outbox-inbox-20261202T190000Z`: the default output directory.
pub fn default_out(lab: &Lab) -> PathBuf {
    PathBuf::from("target")
        .join("lab")
        .join(format!("{}-{}", lab.full_name(), utc_stamp()))
}

/// The UTC time as `YYYYMMDDTHHMMSSZ` (civil-from-days, Howard Hinnant's algorithm).
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
