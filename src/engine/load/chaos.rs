//! `crashlab chaos 14`: the pipeline under seeded random SIGKILLs, then the end-to-end check.
//!
//! Lost effects are contracts whose amount never reached the ledger; duplicated effects are
//! credits beyond the first for a contract (each contract has exactly one message). Both
//! must be 0. Physical deliveries are the queue's rows; duplicates suppressed are the acked
//! deliveries that changed nothing because their message was already in the Inbox.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::driver::{claim_out, pragmas};
use crate::engine::evidence::{self, Processes};
use crate::engine::load::pipeline::{self, Logs, Plan};
use crate::engine::load::progress::Progress;
use crate::engine::state::SQLITE;
use crate::fail;
use crate::labs::outbox_inbox::readback::{self, Paths, State};
use crate::store;

pub struct Options {
    pub messages: usize,
    pub consumers: usize,
    pub kills: usize,
    pub seed: u64,
    pub batch: u32,
    pub lease_ms: i64,
    pub process_timeout_ms: u64,
    pub timeout_ms: u64,
    pub json: bool,
    pub out: Option<PathBuf>,
}

pub const MESSAGES_MAX: usize = crate::labs::outbox_inbox::sender::CONTRACTS_MAX;
pub const CONSUMERS_MAX: usize = 16;
pub const KILLS_MAX: usize = 100_000;
pub const TIMEOUT_MS_MAX: u64 = 3_600_000;

/// The end-to-end verdict on three files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub contracts: i64,
    pub inbox: i64,
    pub ledger: i64,
    pub ledger_expected: i64,
    pub outbox_pending: i64,
    pub queue_pending: i64,
    pub physical_deliveries: i64,
    /// Deliveries beyond the first of their message (publisher re-sends).
    pub duplicate_deliveries: i64,
    /// Acked deliveries that applied nothing: their message was already in the Inbox.
    pub duplicates_suppressed: i64,
    pub lost_effects: i64,
    pub duplicated_effects: i64,
    /// Contracts whose balance differs from their amount (a wrong effect, neither lost nor doubled).
    pub wrong_balances: i64,
    pub problems: Vec<String>,
}

/// Check the files in `work` against `messages` contracts with amounts from `seed`.
pub fn check(work: &Path, messages: usize, seed: u64) -> Result<Check> {
    let sender = work.join(pipeline::SENDER_DB);
    let queue = work.join(pipeline::QUEUE_DB);
    let receiver = work.join(pipeline::RECEIVER_DB);
    let paths = Paths {
        sender: &sender,
        queue: &queue,
        receiver: &receiver,
    };
    let state: State = readback::read(&paths, false)?;
    let detail = readback::detail(&paths)?;
    let amounts = crate::rng::amounts(seed, messages);
    let mut c = Check {
        contracts: state.sender.contracts,
        inbox: state.receiver.inbox,
        ledger: state.receiver.ledger,
        ledger_expected: amounts.iter().sum(),
        outbox_pending: state.sender.outbox_pending,
        queue_pending: state.queue.pending,
        physical_deliveries: state.queue.deliveries,
        duplicate_deliveries: detail.duplicates_in_queue,
        duplicates_suppressed: state.queue.acked - state.receiver.inbox,
        ..Check::default()
    };
    let ledger: BTreeMap<&str, (i64, i64)> = detail
        .ledger
        .iter()
        .map(|(id, balance, credits)| (id.as_str(), (*balance, *credits)))
        .collect();
    for (i, amount) in amounts.iter().enumerate() {
        let id = format!("C{:06}", i + 1);
        match ledger.get(id.as_str()) {
            None | Some((_, 0)) => c.lost_effects += 1,
            Some((balance, credits)) => {
                c.duplicated_effects += credits - 1;
                if *balance != amount * credits {
                    c.wrong_balances += 1;
                }
            }
        }
    }
    let n = messages as i64;
    let mut expect = |what: &str, got: i64, want: i64| {
        if got != want {
            c.problems.push(format!("{what} is {got}, expected {want}"));
        }
    };
    expect("contracts", c.contracts, n);
    expect("inbox", c.inbox, n);
    expect("ledger", c.ledger, c.ledger_expected);
    expect("outbox_pending", c.outbox_pending, 0);
    expect("queue_pending", c.queue_pending, 0);
    expect("lost_effects", c.lost_effects, 0);
    expect("duplicated_effects", c.duplicated_effects, 0);
    expect("wrong_balances", c.wrong_balances, 0);
    Ok(c)
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    lab: &'static str,
    ok: bool,
    seed: u64,
    messages: usize,
    consumers: usize,
    batch: u32,
    lease_ms: i64,
    kills_requested: usize,
    kills_done: usize,
    /// Kills sent as the process was ending by itself; each was made again on another.
    kills_missed: usize,
    kills_by_role: BTreeMap<String, usize>,
    processes: usize,
    busy_exits: usize,
    unexpected_exits: usize,
    timed_out: usize,
    wall_ms: f64,
    replay: String,
    check: &'a Check,
    problems: Vec<String>,
    evidence: Option<String>,
}

/// The command that replays this run: same seed, same schedule, same amounts.
pub fn replay_command(o: &Options) -> String {
    format!(
        "crashlab chaos 14 --messages {} --consumers {} --kills {} --seed {} --batch {} --lease-ms {}",
        o.messages, o.consumers, o.kills, o.seed, o.batch, o.lease_ms
    )
}

pub fn validate(o: &Options) -> Result<()> {
    let range = |what: &str, v: u64, low: u64, high: u64| -> Result<()> {
        if v < low || v > high {
            return Err(fail::usage(format!(
                "{what} {v} is out of range ({low} to {high})"
            )));
        }
        Ok(())
    };
    range("--messages", o.messages as u64, 1, MESSAGES_MAX as u64)?;
    range("--consumers", o.consumers as u64, 1, CONSUMERS_MAX as u64)?;
    range("--kills", o.kills as u64, 0, KILLS_MAX as u64)?;
    range("--timeout-ms", o.timeout_ms, 1, TIMEOUT_MS_MAX)?;
    range(
        "--process-timeout-ms",
        o.process_timeout_ms,
        1,
        TIMEOUT_MS_MAX,
    )?;
    Ok(())
}

pub fn run(o: &Options, command: Vec<String>) -> Result<i32> {
    validate(o)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let partial = match &o.out {
        Some(out) => Some(claim_out(out)?),
        None => None,
    };
    let temp = tempfile::Builder::new()
        .prefix("crashlab-chaos-")
        .tempdir()
        .context("creating the work directory")?;
    let root = partial.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let work = root.join("db");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    fs::create_dir_all(root.join(pipeline::LOGS)).context("creating the logs directory")?;
    pipeline::create_files(&work)?;
    let (kill_at, _) = pipeline::kill_schedule(o.seed, o.messages, o.kills);
    let plan = Plan {
        messages: o.messages,
        consumers: o.consumers,
        batch: o.batch,
        seed: o.seed,
        lease_ms: o.lease_ms,
        kill_at,
        process_timeout: Duration::from_millis(o.process_timeout_ms),
        deadline: Duration::from_millis(o.timeout_ms),
        trace: true,
    };
    let started = Instant::now();
    let mut bar = Progress::new("chaos", 3 * o.messages as u64);
    let kills = o.kills;
    let outcome = pipeline::run(
        &exe,
        &work,
        &Logs::Dir(root.clone()),
        &plan,
        &mut |done, total, k| bar.update(done, total, &format!("kills {k}/{kills}")),
    );
    bar.finish();
    // SIGINT or SIGTERM: the pipeline killed and reaped its children; the work directory
    // goes with `temp`, what the run wrote goes here (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        drop(temp);
        return Err(crate::interrupt::finish(signal, partial.as_deref()));
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            let at = partial.as_ref().map_or(String::new(), |p| {
                format!("; what it wrote is in {}", p.display())
            });
            return Err(e.context(format!("chaos run (seed {}){at}", o.seed)));
        }
    };
    let checked = check(&work, o.messages, o.seed)?;
    let mut problems = checked.problems.clone();
    if outcome.unexpected_exits > 0 {
        problems.push(format!(
            "{} exited with an unexpected code (see processes.json)",
            crate::out::plural(outcome.unexpected_exits, "process", "processes")
        ));
    }
    if outcome.timed_out > 0 {
        problems.push(format!(
            "{} hung past --process-timeout-ms (killed)",
            crate::out::plural(outcome.timed_out, "process", "processes")
        ));
    }
    let mut kills_by_role = BTreeMap::new();
    for k in outcome.kills.iter().filter(|k| k.landed) {
        *kills_by_role.entry(k.role.clone()).or_insert(0) += 1;
    }
    let report = Report {
        lab: "14-outbox-inbox",
        ok: problems.is_empty(),
        seed: o.seed,
        messages: o.messages,
        consumers: o.consumers,
        batch: o.batch,
        lease_ms: o.lease_ms,
        kills_requested: o.kills,
        kills_done: outcome.kills.iter().filter(|k| k.landed).count(),
        kills_missed: outcome.kills.iter().filter(|k| !k.landed).count(),
        kills_by_role,
        processes: outcome.processes.len(),
        busy_exits: outcome.busy_exits,
        unexpected_exits: outcome.unexpected_exits,
        timed_out: outcome.timed_out,
        wall_ms: outcome.wall_ms,
        replay: replay_command(o),
        check: &checked,
        problems: problems.clone(),
        evidence: o.out.as_deref().map(evidence::recorded_path),
    };
    if let Some(partial) = &partial {
        write_evidence(partial, o, &command, &outcome, &report, started)?;
        let out = o.out.as_ref().expect("partial implies out");
        evidence::publish(partial, out)?;
    }
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

fn write_evidence(
    dir: &Path,
    o: &Options,
    command: &[String],
    outcome: &pipeline::Outcome,
    report: &Report<'_>,
    started: Instant,
) -> Result<()> {
    let mut full = vec!["crashlab".to_string()];
    full.extend(command.iter().cloned());
    let mut processes = Processes {
        lab: "14-outbox-inbox".into(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: evidence::build_checkout().and_then(|c| evidence::git_state(&c)),
        sqlite_version: store::sqlite_version(),
        pragmas: pragmas(),
        command: full,
        crash_mode: "sigkill".into(),
        step_timeout_ms: o.process_timeout_ms,
        moved_crashes: Vec::new(),
        total_wall_ms: 0.0,
        processes: outcome.processes.clone(),
    };
    let databases = [
        "db/".to_string() + pipeline::SENDER_DB,
        "db/".to_string() + pipeline::QUEUE_DB,
        "db/".to_string() + pipeline::RECEIVER_DB,
    ];
    let databases: Vec<&str> = databases.iter().map(String::as_str).collect();
    let rows = SQLITE.snapshot(dir, &databases, "chaos", "final")?;
    evidence::write_database_files(dir, &rows)?;
    evidence::write_json(dir, "chaos.json", report)?;
    evidence::write_json(dir, "kills.json", &outcome.kills)?;
    processes.total_wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    evidence::write_json(dir, evidence::PROCESSES, &processes)?;
    evidence::write_manifest(dir)?;
    Ok(())
}

fn print_report(r: &Report<'_>) {
    let c = r.check;
    crate::say!(
        "chaos 14: {}, {}, batch {}, seed {}: {} of {}, {}, wall_ms {:.1}",
        crate::out::plural(r.messages, "message", "messages"),
        crate::out::plural(r.consumers, "consumer", "consumers"),
        r.batch,
        r.seed,
        r.kills_done,
        crate::out::plural(r.kills_requested, "kill", "kills"),
        crate::out::plural(r.processes, "process", "processes"),
        r.wall_ms
    );
    let by_role: Vec<String> = r
        .kills_by_role
        .iter()
        .map(|(role, n)| format!("{role} {n}"))
        .collect();
    if !by_role.is_empty() {
        crate::say!("kills by role: {}", by_role.join(", "));
    }
    crate::say!(
        "physical deliveries {} (duplicate deliveries {}), duplicates suppressed {}, busy exits {}",
        c.physical_deliveries,
        c.duplicate_deliveries,
        c.duplicates_suppressed,
        r.busy_exits
    );
    crate::say!(
        "inbox {} of {}, ledger {} (expected {}), outbox pending {}, queue pending {}",
        c.inbox,
        r.messages,
        c.ledger,
        c.ledger_expected,
        c.outbox_pending,
        c.queue_pending
    );
    crate::say!(
        "lost effects {}, duplicated effects {}",
        c.lost_effects,
        c.duplicated_effects
    );
    if r.kills_done < r.kills_requested {
        crate::say!(
            "note: {} of {} were made: the work ended before the rest found a running process",
            r.kills_done,
            crate::out::plural(r.kills_requested, "kill", "kills")
        );
    }
    if let Some(dir) = &r.evidence {
        crate::say!("evidence in {dir}");
    }
    crate::say!("replay: {}", r.replay);
    if r.ok {
        crate::say!("PASS");
    } else {
        for p in &r.problems {
            crate::say!("  {p}");
        }
        crate::say!("FAIL");
    }
}
