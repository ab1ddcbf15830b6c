//! `crashlab bench LAB`: what the design costs, measured in one run, for a lab with a load
//! profile.
//!
//! 1. Per-phase process cost: each role run R times on one item, spawn to exit (the median)
//!    and peak resident memory, beside `crashlab --version` as the floor of a spawn.
//! 2. Stage throughput at N items: the profile's stages one at a time, each stage's roles at
//!    once, with the SQL trace going to files as always.
//! 3. End to end: every role at once (the chaos pipeline with no kills), start to
//!    quiescence, checked like a chaos run.
//! 4. The ceiling: the same rows written by plain batched inserts in this process (the
//!    profile's), measured right before and right after each stage, their mean the stage's
//!    bound. On a shared machine the cost of an fsync changes from minute to minute; a
//!    ceiling measured beside its stage sees the same disk the stage saw.

mod report;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::engine::load::chaos::range;
use crate::engine::load::pipeline::{self, Schedule, LOGS};
use crate::engine::load::profile::{LoadProfile, Shape};
use crate::engine::load::progress::Progress;
use crate::engine::load::roles::with_trace;
use crate::engine::process;
use crate::engine::LabStack;
use crate::fail;
use crate::store;
use report::{median, stage, PhaseCost, Report};

pub struct Options {
    pub messages: usize,
    pub batch: u32,
    pub consumers: usize,
    pub runs: usize,
    pub json: bool,
}

pub const RUNS_MAX: usize = 101;
const SEED: u64 = 1;
/// Bound on any one child of the bench.
const CHILD_TIMEOUT: Duration = Duration::from_secs(300);

fn validate(profile: &dyn LoadProfile, o: &Options) -> Result<()> {
    super::validate_shape(profile, o.messages, o.consumers)?;
    range("--runs", o.runs as u64, 1, RUNS_MAX as u64)?;
    Ok(())
}

fn shape(o: &Options) -> Shape {
    Shape {
        messages: o.messages,
        consumers: o.consumers,
        batch: o.batch,
        seed: SEED,
        lease_ms: 30_000,
        variant: None,
    }
}

/// The failure of a child that did not exit 0: its exit and stderr, exit 74 when it was an
/// I/O failure (a full disk is the bench's own failure as well).
fn child_failed(dir: &Path, name: &str, ended: &process::Ended) -> anyhow::Error {
    let stderr =
        std::fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default();
    let fails = if ended.exit == fail::EXIT_IOERR {
        fail::io
    } else {
        fail::failed
    };
    fails(format!(
        "bench step {name} exited {}{}: {}",
        ended.exit,
        if ended.timed_out { " (timed out)" } else { "" },
        stderr.trim()
    ))
}

/// Start `argvs` at once in `dir`, wait for all: wall from the first spawn to the last exit,
/// and the largest peak memory. Every child is waited for (each with its bound) before any
/// failure is reported, so none is left running behind an early return.
fn together(exe: &Path, dir: &Path, argvs: &[(String, Vec<String>)]) -> Result<(f64, i64)> {
    let started = std::time::Instant::now();
    let mut children = Vec::new();
    for (name, argv) in argvs {
        let out = dir.join(format!("{name}.stdout.txt"));
        let err = dir.join(format!("{name}.stderr.txt"));
        children.push((name, process::spawn(exe, argv, dir, &out, &err)));
    }
    let mut max_rss_kb = 0;
    let mut first_failure = None;
    for (name, spawned) in children {
        let ended = spawned.and_then(|s| process::wait_bounded(s.pid, s.started, CHILD_TIMEOUT));
        match ended {
            Ok(e) if e.exit == 0 && !e.timed_out => max_rss_kb = max_rss_kb.max(e.max_rss_kb),
            Ok(e) => {
                first_failure.get_or_insert_with(|| child_failed(dir, name, &e));
            }
            Err(e) => {
                first_failure.get_or_insert(e);
            }
        }
    }
    if let Some(failure) = first_failure {
        return Err(failure);
    }
    Ok((
        (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
        max_rss_kb,
    ))
}

/// Bytes of every `*.stdout.txt` in `dir` (the trace of a whole run).
fn stdout_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(".stdout.txt")
                })
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn phase_costs(exe: &Path, profile: &dyn LoadProfile, runs: usize) -> Result<Vec<PhaseCost>> {
    let mut phases: Vec<(&str, Vec<String>)> =
        vec![("spawn (crashlab --version)", vec!["--version".to_string()])];
    phases.extend(profile.phases());
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); phases.len()];
    let mut rss: Vec<Vec<i64>> = vec![Vec::new(); phases.len()];
    for _ in 0..runs {
        let dir = crate::owner::tempdir("bench").context("creating a bench directory")?;
        for (i, (name, argv)) in phases.iter().enumerate() {
            let tag: String = name.split_whitespace().next().unwrap_or("phase").into();
            let (out, err) = (
                dir.path().join(format!("{tag}.stdout.txt")),
                dir.path().join(format!("{tag}.stderr.txt")),
            );
            let ended = process::run(exe, argv, dir.path(), &out, &err, CHILD_TIMEOUT)?;
            if ended.exit != 0 || ended.timed_out {
                return Err(child_failed(dir.path(), &tag, &ended));
            }
            walls[i].push(ended.wall_ms);
            rss[i].push(ended.max_rss_kb);
        }
    }
    Ok(phases
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let mut r = rss[i].clone();
            r.sort_unstable();
            PhaseCost {
                phase: name.to_string(),
                runs,
                median_wall_ms: (median(&mut walls[i]) * 1000.0).round() / 1000.0,
                max_wall_ms: walls[i].iter().copied().fold(0.0, f64::max),
                median_max_rss_kb: r[r.len() / 2],
                max_rss_kb: *r.last().expect("runs >= 1"),
            }
        })
        .collect())
}

/// One stage's figures: wall, its ceiling, trace bytes, processes, peak memory.
struct Timed {
    wall_ms: f64,
    ceiling_wall_ms: f64,
    trace_bytes: u64,
    processes: usize,
    max_rss_kb: i64,
}

/// One pass over the stages and end to end, with the trace on or off.
fn pass(
    exe: &Path,
    profile: &dyn LoadProfile,
    o: &Options,
    trace: bool,
    problems: &mut Vec<String>,
) -> Result<Vec<Timed>> {
    let label = if trace { "trace on" } else { "trace off" };
    let shape = shape(o);
    let dir = crate::owner::tempdir("bench").context("creating a bench directory")?;
    let d = dir.path();
    // Every file exists before the first stage, so parallel roles never race to create one.
    profile.create(d)?;
    let mut timed = Vec::new();
    for (index, stage) in profile.stages(&shape).into_iter().enumerate() {
        let argvs: Vec<(String, Vec<String>)> = stage
            .roles
            .iter()
            .map(|r| (r.name.clone(), with_trace(&r.argv, trace)))
            .collect();
        let before_ms = ceiling(profile, &shape, index)?;
        let (wall_ms, max_rss_kb) = together(exe, d, &argvs)?;
        let after_ms = ceiling(profile, &shape, index)?;
        let trace_bytes = stage
            .roles
            .iter()
            .filter_map(|r| std::fs::metadata(d.join(format!("{}.stdout.txt", r.name))).ok())
            .map(|m| m.len())
            .sum();
        timed.push(Timed {
            wall_ms,
            ceiling_wall_ms: (before_ms + after_ms) / 2.0,
            trace_bytes,
            processes: argvs.len(),
            max_rss_kb,
        });
    }
    let staged = profile.check(d, &shape, &[])?;
    problems.extend(
        staged
            .problems
            .iter()
            .map(|p| format!("stages ({label}): {p}")),
    );

    let e2e_dir = crate::owner::tempdir("bench-e2e").context("creating a bench directory")?;
    let work = e2e_dir.path().join("db");
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(e2e_dir.path().join(LOGS))?;
    profile.create(&work)?;
    let schedule = Schedule {
        shape,
        kill_at: Vec::new(),
        process_timeout: CHILD_TIMEOUT,
        deadline: CHILD_TIMEOUT,
        trace,
        events: false,
        cut: None,
        env: Vec::new(),
    };
    let e2e = pipeline::run(
        exe,
        profile,
        &work,
        e2e_dir.path(),
        &schedule,
        &mut |_, _, _| {},
    )?;
    let e2e_check = profile.check(&work, &shape, &[])?;
    problems.extend(
        e2e_check
            .problems
            .iter()
            .map(|p| format!("end to end ({label}): {p}")),
    );
    if e2e.unexpected_exits + e2e.busy_exits + e2e.timed_out > 0 {
        problems.push(format!(
            "end to end ({label}): {} unexpected exits, {} busy exits, {} timed out",
            e2e.unexpected_exits, e2e.busy_exits, e2e.timed_out
        ));
    }
    // End to end is rated against doing every stage's inserts one after another.
    let ceiling_wall_ms = timed.iter().map(|t| t.ceiling_wall_ms).sum();
    timed.push(Timed {
        wall_ms: e2e.wall_ms,
        ceiling_wall_ms,
        trace_bytes: stdout_bytes(&e2e_dir.path().join(LOGS)),
        processes: e2e.processes.len(),
        max_rss_kb: e2e
            .processes
            .iter()
            .map(|x| x.max_rss_kb)
            .max()
            .unwrap_or(0),
    });
    Ok(timed)
}

pub fn run(lab: &'static LabStack, profile: &dyn LoadProfile, o: &Options) -> Result<i32> {
    // Bench runs each role in fresh directories and sets its stages against plain SQLite
    // inserts: a lab on servers would need servers per phase and a server-side ceiling.
    if let Some(def) = lab.stack {
        return Err(fail::usage(format!(
            "bench {} --stack {}: bench measures labs on SQLite files; on servers run chaos {} --stack {} (it prints the wall and messages/s)",
            lab.id(), def.name, lab.id(), def.name
        )));
    }
    validate(profile, o)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let result = measure(lab, profile, o);
    // SIGINT or SIGTERM: the children were killed as the run unwound, and the temporary
    // directories removed; one line says so (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::engine::process::interrupted(signal, None));
    }
    result
}

/// The plain-insert ceiling of one stage, in a fresh directory.
fn ceiling(profile: &dyn LoadProfile, shape: &Shape, stage: usize) -> Result<f64> {
    let dir = crate::owner::tempdir("ceiling").context("creating a ceiling directory")?;
    profile.ceiling(dir.path(), shape, stage)
}

fn measure(lab: &'static LabStack, profile: &dyn LoadProfile, o: &Options) -> Result<i32> {
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let n = o.messages;
    let bar = Progress::new("bench", 4);
    let mut problems = Vec::new();

    bar.phase(&format!(
        "per-phase process cost, {}",
        crate::out::plural(o.runs, "run", "runs")
    ));
    let costs = phase_costs(&exe, profile, o.runs)?;
    bar.phase(&format!(
        "stages one at a time, each between two plain-insert ceilings, then all at once: {}, {}, trace on",
        crate::out::plural(n, "message", "messages"),
        crate::out::plural(o.consumers, "consumer", "consumers")
    ));
    let shape = shape(o);
    let traced = pass(&exe, profile, o, true, &mut problems)?;
    bar.phase("the same with --no-trace, to show what the trace costs");
    let untraced = pass(&exe, profile, o, false, &mut problems)?;
    bar.finish();
    let mut names: Vec<String> = profile.stages(&shape).into_iter().map(|s| s.name).collect();
    names.push("end to end".to_string());
    let mut stages = Vec::new();
    for (timed, suffix) in [(&traced, ""), (&untraced, ", no trace")] {
        assert_eq!(timed.len(), names.len(), "every stage and end to end");
        for (t, name) in timed.iter().zip(&names) {
            stages.push(stage(
                format!("{name}{suffix}"),
                n,
                t.wall_ms,
                t.ceiling_wall_ms,
                t.trace_bytes,
                t.processes,
                t.max_rss_kb,
            ));
        }
    }
    let report = Report {
        lab: lab.full_name(),
        messages: n,
        batch: o.batch,
        consumers: o.consumers,
        runs: o.runs,
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        sqlite_version: store::sqlite_version(),
        phase_costs: costs,
        stages,
        ok: problems.is_empty(),
        problems,
        command: format!(
            "crashlab bench {} --messages {n} --batch {} --consumers {} --runs {}",
            lab.id(),
            o.batch,
            o.consumers,
            o.runs
        ),
    };
    if o.json {
        crate::say!("{}", serde_json::to_string(&report)?);
    } else {
        report::print(&report);
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}
