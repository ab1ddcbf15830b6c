//! `crashlab bench 14`: what the design costs, measured in one run.
//!
//! 1. Per-phase process cost: each role run R times on one message, spawn to exit (the
//!    median) and peak resident memory, beside `crashlab --version` as the floor of a spawn.
//! 2. Stage throughput at N messages: sender (contracts + Outbox rows), publisher, and K
//!    consumers at once, each stage alone, with the SQL trace going to files as always.
//! 3. End to end: the three stages at once (the chaos pipeline with no kills), start to
//!    quiescence, checked like a chaos run.
//! 4. The ceiling: the same rows written by plain batched inserts, in this process, into files
//!    with the same schema and the same pragmas (WAL, synchronous=FULL), no trace; measured
//!    before, between and after the passes, the median of the three.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::params;
use serde::Serialize;

use crate::engine::load::chaos;
use crate::engine::load::pipeline::{self, Logs, Plan};
use crate::engine::load::progress::Progress;
use crate::engine::process;
use crate::fail;
use crate::labs::outbox_inbox::model::{now_ms, Payload};
use crate::labs::outbox_inbox::schema::{QUEUE, RECEIVER, SENDER};
use crate::store::{self, Access};

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

#[derive(Debug, Clone, Serialize)]
pub struct PhaseCost {
    pub phase: String,
    pub runs: usize,
    pub median_wall_ms: f64,
    pub max_wall_ms: f64,
    pub median_max_rss_kb: i64,
    pub max_rss_kb: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub stage: String,
    pub rows: usize,
    pub wall_ms: f64,
    pub rows_per_s: f64,
    pub ceiling_wall_ms: f64,
    pub ceiling_rows_per_s: f64,
    /// rows_per_s / ceiling_rows_per_s.
    pub ratio_to_ceiling: f64,
    /// Bytes of stdout (the SQL trace) the stage wrote.
    pub trace_bytes: u64,
    pub processes: usize,
    pub max_rss_kb: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub lab: &'static str,
    pub messages: usize,
    pub batch: u32,
    pub consumers: usize,
    pub runs: usize,
    pub cpus: usize,
    pub sqlite_version: String,
    pub phase_costs: Vec<PhaseCost>,
    pub stages: Vec<Stage>,
    pub ok: bool,
    pub problems: Vec<String>,
    pub command: String,
}

fn validate(o: &Options) -> Result<()> {
    if o.messages == 0 || o.messages > chaos::MESSAGES_MAX {
        return Err(fail::usage(format!(
            "--messages {} is out of range (1 to {})",
            o.messages,
            chaos::MESSAGES_MAX
        )));
    }
    if o.consumers == 0 || o.consumers > chaos::CONSUMERS_MAX {
        return Err(fail::usage(format!(
            "--consumers {} is out of range (1 to {})",
            o.consumers,
            chaos::CONSUMERS_MAX
        )));
    }
    if o.runs == 0 || o.runs > RUNS_MAX {
        return Err(fail::usage(format!(
            "--runs {} is out of range (1 to {RUNS_MAX})",
            o.runs
        )));
    }
    Ok(())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1000.0
}

fn per_s(rows: usize, wall_ms: f64) -> f64 {
    if wall_ms <= 0.0 {
        return 0.0;
    }
    (rows as f64 * 1000.0 / wall_ms).round()
}

/// Run one child to its end in `dir`; exit 0 is required.
fn child(exe: &Path, dir: &Path, name: &str, args: &[String]) -> Result<process::Ended> {
    let ended = process::run(
        exe,
        args,
        dir,
        &dir.join(format!("{name}.stdout.txt")),
        &dir.join(format!("{name}.stderr.txt")),
        CHILD_TIMEOUT,
    )?;
    if ended.exit != 0 || ended.timed_out {
        let stderr =
            std::fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default();
        // A child's I/O failure (a full disk) is the bench's own: exit 74 as well.
        let fails = if ended.exit == fail::EXIT_IOERR {
            fail::io
        } else {
            fail::failed
        };
        return Err(fails(format!(
            "bench step {name} exited {}{}: {}",
            ended.exit,
            if ended.timed_out { " (timed out)" } else { "" },
            stderr.trim()
        )));
    }
    Ok(ended)
}

fn stdout_bytes(dir: &Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with(prefix) && name.ends_with(".stdout.txt")
                })
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn phase_costs(exe: &Path, runs: usize) -> Result<Vec<PhaseCost>> {
    let phases: [(&str, Vec<String>); 5] = [
        ("spawn (crashlab --version)", strings(&["--version"])),
        (
            "sender",
            strings(&[
                "sender",
                "--db",
                "sender.db",
                "--generate",
                "1",
                "--seed",
                "1",
            ]),
        ),
        (
            "publisher",
            strings(&["publisher", "--sender", "sender.db", "--queue", "queue.db"]),
        ),
        (
            "consumer",
            strings(&[
                "consumer",
                "--queue",
                "queue.db",
                "--receiver",
                "receiver.db",
            ]),
        ),
        (
            "verify",
            strings(&[
                "verify",
                "--sender",
                "sender.db",
                "--queue",
                "queue.db",
                "--receiver",
                "receiver.db",
                "--json",
            ]),
        ),
    ];
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); phases.len()];
    let mut rss: Vec<Vec<i64>> = vec![Vec::new(); phases.len()];
    for _ in 0..runs {
        let dir = tempfile::Builder::new()
            .prefix("crashlab-bench-")
            .tempdir()
            .context("creating a bench directory")?;
        for (i, (name, args)) in phases.iter().enumerate() {
            let tag: String = name.split_whitespace().next().unwrap_or("phase").into();
            let ended = child(exe, dir.path(), &tag, args)?;
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

/// Plain batched inserts of the rows each stage writes, into fresh files with the same schema
/// and pragmas, no trace: (outbox writes, publish, consume) wall times.
fn ceilings(messages: usize, batch: usize) -> Result<(f64, f64, f64)> {
    let dir = tempfile::Builder::new()
        .prefix("crashlab-ceiling-")
        .tempdir()
        .context("creating a ceiling directory")?;
    let amounts = crate::rng::amounts(SEED, messages);
    let rows: Vec<Payload> = (0..messages)
        .map(|i| {
            Payload::new(
                &format!("M{:06}", i + 1),
                &format!("C{:06}", i + 1),
                amounts[i],
            )
        })
        .collect();
    let e = |e: rusqlite::Error| anyhow::Error::new(e).context("ceiling inserts");

    let sender = store::open_traced(
        &dir.path().join("s.db"),
        &SENDER,
        Access::WriteCreate,
        false,
    )?;
    let started = Instant::now();
    for chunk in rows.chunks(batch) {
        sender.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        for p in chunk {
            sender
                .conn
                .prepare_cached("INSERT INTO contracts(contract_id, amount) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![p.contract, p.amount]))
                .map_err(e)?;
            sender
                .conn
                .prepare_cached("INSERT INTO outbox(message_id, contract_id, amount, status) VALUES (?1, ?2, ?3, 'pending')")
                .and_then(|mut s| s.execute(params![p.message, p.contract, p.amount]))
                .map_err(e)?;
        }
        sender.conn.execute_batch("COMMIT").map_err(e)?;
    }
    let outbox = ms(started.elapsed());

    let queue = store::open_traced(&dir.path().join("q.db"), &QUEUE, Access::WriteCreate, false)?;
    let started = Instant::now();
    for chunk in rows.chunks(batch) {
        queue.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        let now = now_ms();
        for p in chunk {
            queue
                .conn
                .prepare_cached("INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES (?1, ?2, 'pending', ?3)")
                .and_then(|mut s| s.execute(params![p.message, p.canonical(), now]))
                .map_err(e)?;
        }
        queue.conn.execute_batch("COMMIT").map_err(e)?;
    }
    let publish = ms(started.elapsed());

    let receiver = store::open_traced(
        &dir.path().join("r.db"),
        &RECEIVER,
        Access::WriteCreate,
        false,
    )?;
    let started = Instant::now();
    for (n, chunk) in rows.chunks(batch).enumerate() {
        receiver.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        let now = now_ms();
        for (i, p) in chunk.iter().enumerate() {
            receiver
                .conn
                .prepare_cached("INSERT INTO inbox(message_id, digest, contract_id, amount, delivery_id, applied_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .and_then(|mut s| s.execute(params![p.message, p.digest(), p.contract, p.amount, (n * batch + i + 1) as i64, now]))
                .map_err(e)?;
            receiver
                .conn
                .prepare_cached(
                    "INSERT INTO ledger(contract_id, balance, credits) VALUES (?1, ?2, 1)",
                )
                .and_then(|mut s| s.execute(params![p.contract, p.amount]))
                .map_err(e)?;
        }
        receiver.conn.execute_batch("COMMIT").map_err(e)?;
    }
    let consume = ms(started.elapsed());
    Ok((outbox, publish, consume))
}

/// Start `args_list` at once in `dir`, wait for all: wall from the first spawn to the last exit.
fn together(
    exe: &Path,
    dir: &Path,
    names: &[String],
    args_list: &[Vec<String>],
) -> Result<(f64, i64)> {
    let started = Instant::now();
    let mut pids = Vec::new();
    for (name, args) in names.iter().zip(args_list) {
        let out = std::fs::File::create(dir.join(format!("{name}.stdout.txt")))?;
        let err = std::fs::File::create(dir.join(format!("{name}.stderr.txt")))?;
        let mut command = Command::new(exe);
        command
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        process::die_with_parent(&mut command);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        pids.push(child.id() as libc::pid_t);
    }
    // Every child is waited for (each with its bound) before any failure is reported, so
    // none is left running behind an early return.
    let mut max_rss_kb = 0;
    let mut first_failure = None;
    for (pid, name) in pids.into_iter().zip(names) {
        let ended = process::wait_bounded(pid, started, CHILD_TIMEOUT);
        match ended {
            Ok(e) if e.exit == 0 && !e.timed_out => max_rss_kb = max_rss_kb.max(e.max_rss_kb),
            Ok(e) => {
                first_failure.get_or_insert_with(|| {
                    fail::failed(format!("bench step {name} exited {}", e.exit))
                });
            }
            Err(e) => {
                first_failure.get_or_insert(e);
            }
        }
    }
    if let Some(failure) = first_failure {
        return Err(failure);
    }
    Ok((ms(started.elapsed()), max_rss_kb))
}

/// Wall times of one pass over the stages, with the trace on or off.
struct Pass {
    sender: process::Ended,
    publisher: process::Ended,
    consume_ms: f64,
    consume_rss_kb: i64,
    e2e: pipeline::Outcome,
    trace_bytes: [u64; 4],
}

fn pass(exe: &Path, o: &Options, trace: bool, problems: &mut Vec<String>) -> Result<Pass> {
    let n = o.messages;
    let batch = o.batch.to_string();
    let n_text = n.to_string();
    let label = if trace { "trace on" } else { "trace off" };
    let with = |args: &[&str]| {
        let mut v = if trace {
            Vec::new()
        } else {
            vec!["--no-trace".to_string()]
        };
        v.extend(strings(args));
        v
    };
    let dir = tempfile::Builder::new()
        .prefix("crashlab-bench-")
        .tempdir()
        .context("creating a bench directory")?;
    let d = dir.path();
    let sender = child(
        exe,
        d,
        "sender",
        &with(&[
            "sender",
            "--db",
            pipeline::SENDER_DB,
            "--generate",
            &n_text,
            "--seed",
            "1",
            "--batch",
            &batch,
        ]),
    )?;
    let publisher = child(
        exe,
        d,
        "publisher",
        &with(&[
            "publisher",
            "--sender",
            pipeline::SENDER_DB,
            "--queue",
            pipeline::QUEUE_DB,
            "--batch",
            &batch,
        ]),
    )?;
    let names: Vec<String> = (1..=o.consumers)
        .map(|c| format!("consumer-c{c}"))
        .collect();
    let args: Vec<Vec<String>> = (1..=o.consumers)
        .map(|c| {
            with(&[
                "consumer",
                "--queue",
                pipeline::QUEUE_DB,
                "--receiver",
                pipeline::RECEIVER_DB,
                "--consumer-id",
                &format!("c{c}"),
                "--batch",
                &batch,
            ])
        })
        .collect();
    // The consumers create the receiver file; create it first so they do not race to.
    store::open_traced(
        &d.join(pipeline::RECEIVER_DB),
        &RECEIVER,
        Access::WriteCreate,
        false,
    )?;
    let (consume_ms, consume_rss_kb) = together(exe, d, &names, &args)?;
    let staged = chaos::check(d, n, SEED)?;
    problems.extend(
        staged
            .problems
            .iter()
            .map(|p| format!("stages ({label}): {p}")),
    );

    let e2e_dir = tempfile::Builder::new()
        .prefix("crashlab-bench-e2e-")
        .tempdir()
        .context("creating a bench directory")?;
    let work = e2e_dir.path().join("db");
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(e2e_dir.path().join(pipeline::LOGS))?;
    pipeline::create_files(&work)?;
    let plan = Plan {
        messages: n,
        consumers: o.consumers,
        batch: o.batch,
        seed: SEED,
        lease_ms: 30_000,
        kill_at: Vec::new(),
        process_timeout: CHILD_TIMEOUT,
        deadline: CHILD_TIMEOUT,
        trace,
    };
    let e2e = pipeline::run(
        exe,
        &work,
        &Logs::Dir(e2e_dir.path().to_path_buf()),
        &plan,
        &mut |_, _, _| {},
    )?;
    let e2e_check = chaos::check(&work, n, SEED)?;
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
    Ok(Pass {
        sender,
        publisher,
        consume_ms,
        consume_rss_kb,
        trace_bytes: [
            stdout_bytes(d, "sender"),
            stdout_bytes(d, "publisher"),
            stdout_bytes(d, "consumer"),
            stdout_bytes(&e2e_dir.path().join(pipeline::LOGS), ""),
        ],
        e2e,
    })
}

pub fn run(o: &Options) -> Result<i32> {
    validate(o)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let result = measure(o);
    // SIGINT or SIGTERM: the children were killed as the run unwound, and the temporary
    // directories removed; one line says so (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::interrupt::finish(signal, None));
    }
    result
}

fn measure(o: &Options) -> Result<i32> {
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let n = o.messages;
    let bar = Progress::new("bench", 4);
    let mut problems = Vec::new();

    bar.phase(&format!(
        "per-phase process cost, {}",
        crate::out::plural(o.runs, "run", "runs")
    ));
    let costs = phase_costs(&exe, o.runs)?;
    bar.phase(&format!(
        "stages one at a time, then all at once: {}, {}, trace on",
        crate::out::plural(n, "message", "messages"),
        crate::out::plural(o.consumers, "consumer", "consumers")
    ));
    // The ceiling is measured three times, before, between and after the two passes, and
    // the median taken: on a shared machine the load changes within one run.
    let mut samples = vec![ceilings(n, o.batch as usize)?];
    let traced = pass(&exe, o, true, &mut problems)?;
    samples.push(ceilings(n, o.batch as usize)?);
    bar.phase("the same with --no-trace, to show what the trace costs");
    let untraced = pass(&exe, o, false, &mut problems)?;
    bar.phase("ceiling: plain batched inserts, same schema and pragmas");
    samples.push(ceilings(n, o.batch as usize)?);
    bar.finish();
    let pick = |f: fn(&(f64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        median(&mut v)
    };
    let (c_outbox, c_publish, c_consume) = (pick(|c| c.0), pick(|c| c.1), pick(|c| c.2));

    let stage = |name: String,
                 wall_ms: f64,
                 ceiling_wall_ms: f64,
                 trace_bytes: u64,
                 processes: usize,
                 max_rss_kb: i64| {
        let rows_per_s = per_s(n, wall_ms);
        let ceiling_rows_per_s = per_s(n, ceiling_wall_ms);
        Stage {
            stage: name,
            rows: n,
            wall_ms: (wall_ms * 1000.0).round() / 1000.0,
            rows_per_s,
            ceiling_wall_ms,
            ceiling_rows_per_s,
            ratio_to_ceiling: if ceiling_rows_per_s > 0.0 {
                (rows_per_s / ceiling_rows_per_s * 1000.0).round() / 1000.0
            } else {
                0.0
            },
            trace_bytes,
            processes,
            max_rss_kb,
        }
    };
    let mut stages = Vec::new();
    for (p, suffix) in [(&traced, ""), (&untraced, ", no trace")] {
        let e2e_rss = p
            .e2e
            .processes
            .iter()
            .map(|x| x.max_rss_kb)
            .max()
            .unwrap_or(0);
        stages.push(stage(
            format!("outbox writes{suffix}"),
            p.sender.wall_ms,
            c_outbox,
            p.trace_bytes[0],
            1,
            p.sender.max_rss_kb,
        ));
        stages.push(stage(
            format!("publish{suffix}"),
            p.publisher.wall_ms,
            c_publish,
            p.trace_bytes[1],
            1,
            p.publisher.max_rss_kb,
        ));
        stages.push(stage(
            format!("consume x{}{suffix}", o.consumers),
            p.consume_ms,
            c_consume,
            p.trace_bytes[2],
            o.consumers,
            p.consume_rss_kb,
        ));
        stages.push(stage(
            format!("end to end{suffix}"),
            p.e2e.wall_ms,
            c_outbox + c_publish + c_consume,
            p.trace_bytes[3],
            p.e2e.processes.len(),
            e2e_rss,
        ));
    }
    let report = Report {
        lab: "14-outbox-inbox",
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
            "crashlab bench 14 --messages {n} --batch {} --consumers {} --runs {}",
            o.batch, o.consumers, o.runs
        ),
    };
    if o.json {
        crate::say!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

fn print_report(r: &Report) {
    crate::say!(
        "bench 14: {}, batch {}, {}, {}, SQLite {}",
        crate::out::plural(r.messages, "message", "messages"),
        r.batch,
        crate::out::plural(r.consumers, "consumer", "consumers"),
        crate::out::plural(r.cpus, "cpu", "cpus"),
        r.sqlite_version
    );
    crate::say!();
    crate::say!(
        "{:<28} {:>10} {:>10} {:>12}",
        "phase (1 message)",
        "median_ms",
        "max_ms",
        "max_rss_kb"
    );
    for c in &r.phase_costs {
        crate::say!(
            "{:<28} {:>10.2} {:>10.2} {:>12}",
            c.phase,
            c.median_wall_ms,
            c.max_wall_ms,
            c.max_rss_kb
        );
    }
    crate::say!();
    crate::say!(
        "{:<28} {:>10} {:>10} {:>12} {:>7} {:>12}",
        "stage",
        "wall_ms",
        "rows/s",
        "ceiling/s",
        "ratio",
        "trace_bytes"
    );
    for s in &r.stages {
        crate::say!(
            "{:<28} {:>10.1} {:>10.0} {:>12.0} {:>7.3} {:>12}",
            s.stage,
            s.wall_ms,
            s.rows_per_s,
            s.ceiling_rows_per_s,
            s.ratio_to_ceiling,
            s.trace_bytes
        );
    }
    crate::say!();
    crate::say!("command: {}", r.command);
    if r.ok {
        crate::say!("OK: every run ended with the N effects exactly once");
    } else {
        for p in &r.problems {
            crate::say!("  {p}");
        }
        crate::say!("FAIL");
    }
}
