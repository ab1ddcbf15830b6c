//! Lab 14 under load, on the built binary: real processes, real files, no mocks.
//!
//! No test asserts a timing; each asserts effects that a broken design would get wrong.

mod common;
#[path = "tamper/support.rs"]
mod support;
use common::crashlab;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crashlab::crash::Mode;
use crashlab::engine::nemesis;
use crashlab::labs::outbox_inbox::roles::{Consumer, Enqueue, Publisher, Sender, Verify};
use crashlab::labs::outbox_inbox::stack::Stack::Sqlite;
use crashlab::labs::outbox_inbox::variant::Variant;
use crashlab::role::{Argv, Role};
use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_crashlab");

/// Lab 14's consumer of the contract: one delivery at a time, default name and lease.
fn consumer() -> Consumer {
    Consumer::of(Sqlite, Variant::Correct)
}

/// A role's argv from lab 14's roles, as words.
fn words(argv: Argv) -> Vec<String> {
    argv.into_vec()
}

/// The same role armed to crash (exit mode) at `point`.
fn crashing(argv: Argv, point: &str) -> Vec<String> {
    let mut words = argv.into_vec();
    words.extend(nemesis::of_mode(Mode::Exit).arm(point));
    words
}

fn strs(words: &[String]) -> Vec<&str> {
    words.iter().map(String::as_str).collect()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = crashlab(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "crashlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A child whose stdout and stderr go to files in `dir` (a pipe nobody reads would fill up
/// and stall it).
struct Running {
    child: Child,
    stdout: std::path::PathBuf,
    stderr: std::path::PathBuf,
}

fn spawn(dir: &Path, args: &[&str]) -> Running {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stdout = dir.join(format!("child-{n}.stdout.txt"));
    let stderr = dir.join(format!("child-{n}.stderr.txt"));
    let child = Command::new(EXE)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("crashlab starts");
    Running {
        child,
        stdout,
        stderr,
    }
}

/// Wait for a child with a bound; a hung child is killed and fails the test. Its exit code
/// and stdout.
fn wait_bounded(mut running: Running, what: &str) -> (Option<i32>, String) {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = running.child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = running.child.kill();
            let _ = running.child.wait();
            panic!("{what} hung for 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let code = status.code();
    if code != Some(0) && code != Some(EXIT_BUSY) {
        panic!(
            "{what}: exit {code:?}: {}",
            std::fs::read_to_string(&running.stderr).unwrap_or_default()
        );
    }
    (code, std::fs::read_to_string(&running.stdout).unwrap())
}

/// A role that found its database locked past its busy timeout exits 75 (EX_TEMPFAIL),
/// having changed nothing in the transaction it could not begin.
const EXIT_BUSY: i32 = 75;

/// Wait for a child that must exit 0.
fn finish(running: Running, what: &str) -> String {
    let (code, stdout) = wait_bounded(running, what);
    assert_eq!(code, Some(0), "{what}: exit {code:?}");
    stdout
}

fn last_json(stdout: &str) -> Value {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in: {stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bad JSON ({e}): {line}"))
}

fn verify(dir: &Path) -> Value {
    last_json(&ok(dir, &strs(&words(Verify::of(Sqlite, None).argv()))))
}

/// `CONSUMED applied=A duplicates=D rejected=R` → (A, D).
fn consumed(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("CONSUMED "))
        .unwrap_or_else(|| panic!("no CONSUMED line in: {stdout}"));
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    (field("applied="), field("duplicates="))
}

/// What a consumer's lines say it applied and found duplicate, for one that ended before its
/// `CONSUMED` summary.
fn said(stdout: &str) -> (u64, u64) {
    let count = |prefix: &str| stdout.lines().filter(|l| l.starts_with(prefix)).count() as u64;
    (
        count("COMMITTED receiver inbox and ledger "),
        count("DUPLICATE "),
    )
}

fn sql_i64(path: &Path, sql: &str) -> i64 {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open read-only");
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn small_chaos_run_loses_nothing_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(
        dir.path(),
        &[
            "chaos",
            "14",
            "--messages",
            "300",
            "--consumers",
            "2",
            "--kills",
            "30",
            "--seed",
            "7",
            "--batch",
            "10",
            "--json",
            "--out",
            "ev",
        ],
    );
    let r = last_json(&out);
    assert_eq!(r["ok"], true, "{r}");
    // A kill due as the last roles finish may find nothing left to kill; nearly all land.
    let kills_done = r["kills_done"].as_u64().unwrap();
    assert!((25..=30).contains(&kills_done), "{r}");
    assert_eq!(r["check"]["lost_effects"], 0);
    assert_eq!(r["check"]["duplicated_effects"], 0);
    assert_eq!(r["check"]["inbox"], 300);
    assert_eq!(r["check"]["ledger"], r["check"]["ledger_expected"]);
    assert!(r["replay"].as_str().unwrap().contains("--seed 7"));
    // processes.json records every process, the killed ones with their signal.
    let p: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ev/processes.json")).unwrap(),
    )
    .unwrap();
    let procs = p["processes"].as_array().unwrap();
    let killed = procs
        .iter()
        .filter(|x| x["signal"] == 9 && x["crash_mode"] == "sigkill")
        .count();
    assert_eq!(
        killed as u64, kills_done,
        "each kill is a process ended by SIGKILL"
    );
    assert!(procs.iter().all(|x| x["exit"] == x["expected_exit"]));
    for x in procs {
        let stdout = x["stdout"].as_str().unwrap();
        assert!(dir.path().join("ev").join(stdout).is_file(), "{stdout}");
    }
}

#[test]
fn chaos_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["chaos", "14", "--messages", "0"][..],
        &["chaos", "14", "--consumers", "99"][..],
        &["chaos", "13"][..],
        &["bench", "14", "--runs", "0"][..],
    ] {
        let out = crashlab(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    let out = crashlab(
        dir.path(),
        &["chaos", "14", "--messages", "5", "--out", "taken"],
    );
    assert_eq!(out.status.code(), Some(2), "an existing --out is refused");
}

#[test]
fn consumers_racing_on_one_message_make_exactly_one_effect() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let deliveries = 24;
    let consumers = 4;
    let enqueue = words(Enqueue::of(Sqlite, "M1", "R1", 25).argv());
    ok(d, &strs(&enqueue));
    // Create the receiver file before the race (the crash comes before the claim commits).
    let first = crashing(consumer().argv(), "consumer.before-claim-commit");
    let out = crashlab(d, &strs(&first));
    assert_eq!(out.status.code(), Some(73));
    for _ in 1..deliveries {
        ok(d, &strs(&enqueue));
    }
    let children: Vec<Running> = (1..=consumers)
        .map(|c| {
            let id = format!("c{c}");
            let how = Consumer {
                consumer_id: Some(id.clone()),
                batch: 1,
                ..consumer()
            };
            spawn(d, &strs(&words(how.argv())))
        })
        .collect();
    let (mut applied, mut duplicates, mut races) = (0, 0, 0);
    // On a loaded machine one consumer can lose the queue's lock for its whole busy timeout
    // and exit 75, as chaos counts in `busy_exits`; it is restarted under its own name, as
    // chaos restarts it, a bounded number of times. Its effects count all the same.
    let mut restarts_left = 8;
    for (i, child) in children.into_iter().enumerate() {
        let what = format!("consumer c{}", i + 1);
        let mut running = child;
        loop {
            let (code, stdout) = wait_bounded(running, &what);
            // A busy exit prints no summary: its lines say what it did before it stopped.
            let (a, dup) = match code {
                Some(0) => consumed(&stdout),
                _ => said(&stdout),
            };
            applied += a;
            duplicates += dup;
            races += stdout.lines().filter(|l| l.starts_with("RACE ")).count();
            if code == Some(0) {
                break;
            }
            assert!(restarts_left > 0, "{what}: busy again and again");
            restarts_left -= 1;
            let id = format!("c{}", i + 1);
            let how = Consumer {
                consumer_id: Some(id.clone()),
                batch: 1,
                ..consumer()
            };
            running = spawn(d, &strs(&words(how.argv())));
        }
    }
    let restarts = 8 - restarts_left;
    eprintln!(
        "race: {deliveries} deliveries, {consumers} consumers, {races} lost at the Inbox key, {restarts} busy restarts"
    );
    assert_eq!(applied, 1, "exactly one consumer applied the message");
    // Every other delivery was a duplicate; a consumer that stopped busy between its receiver
    // commit and its ack sees its own delivery again after its restart, once per restart.
    assert!(
        (deliveries - 1..=deliveries - 1 + restarts).contains(&duplicates),
        "{duplicates} duplicates of {deliveries} deliveries with {restarts} restarts"
    );
    let queue = d.join("queue.db");
    assert_eq!(
        sql_i64(
            &queue,
            "SELECT count(*) FROM deliveries WHERE status = 'acked'"
        ),
        deliveries as i64
    );
    let receiver = d.join("receiver.db");
    assert_eq!(sql_i64(&receiver, "SELECT count(*) FROM inbox"), 1);
    assert_eq!(
        sql_i64(
            &receiver,
            "SELECT balance FROM ledger WHERE contract_id = 'R1'"
        ),
        25
    );
    assert_eq!(
        sql_i64(
            &receiver,
            "SELECT credits FROM ledger WHERE contract_id = 'R1'"
        ),
        1
    );
}

/// One message applied, then delivered again after `delay`; the second consumer run cleans
/// the Inbox with `retention_ms` first. Returns (ledger balance, credits).
fn redelivery_after_retention(retention_ms: i64, delay: Duration) -> (i64, i64, String) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &strs(&words(Sender::one(Sqlite, "C1", 25, "M1").argv())));
    // The publisher dies between its queue commit and its Outbox commit: M1 will go again.
    let publisher = || {
        Publisher {
            batch: 1,
            ..Publisher::of(Sqlite, Variant::Correct)
        }
        .argv()
    };
    let out = crashlab(
        d,
        &strs(&crashing(publisher(), "publisher.after-queue-commit")),
    );
    assert_eq!(out.status.code(), Some(73));
    let consume = words(consumer().argv());
    let (applied, _) = consumed(&ok(d, &strs(&consume)));
    assert_eq!(applied, 1);
    std::thread::sleep(delay);
    ok(d, &strs(&words(publisher())));
    let cleaning = Consumer {
        inbox_retention_ms: Some(retention_ms),
        ..consumer()
    };
    let stdout = ok(d, &strs(&words(cleaning.argv())));
    let v = verify(d);
    assert_eq!(v["queue"]["deliveries"], 2, "two physical deliveries: {v}");
    assert_eq!(v["queue"]["pending"], 0);
    let receiver = d.join("receiver.db");
    (
        sql_i64(
            &receiver,
            "SELECT balance FROM ledger WHERE contract_id = 'C1'",
        ),
        sql_i64(
            &receiver,
            "SELECT credits FROM ledger WHERE contract_id = 'C1'",
        ),
        stdout,
    )
}

#[test]
fn inbox_retention_shorter_than_the_redelivery_delay_doubles_the_effect() {
    let (balance, credits, stdout) = redelivery_after_retention(100, Duration::from_millis(400));
    assert!(
        stdout.contains("inbox retention deleted 1 rows"),
        "{stdout}"
    );
    assert_eq!(credits, 2, "the cleaned Inbox no longer knew M1");
    assert_eq!(balance, 50, "duplicate effect: 25 credited twice");
}

#[test]
fn inbox_retention_longer_than_the_redelivery_delay_keeps_one_effect() {
    let (balance, credits, stdout) = redelivery_after_retention(60_000, Duration::from_millis(400));
    assert!(
        stdout.contains("inbox retention deleted 0 rows"),
        "{stdout}"
    );
    assert!(
        stdout.contains("DUPLICATE delivery 2 message M1"),
        "{stdout}"
    );
    assert_eq!((balance, credits), (25, 1));
}

#[test]
fn two_publishers_on_one_outbox_lose_nothing_and_the_inbox_absorbs_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 400;
    let generate = Sender {
        batch: 50,
        ..Sender::generate(Sqlite, n, 3)
    };
    ok(d, &strs(&words(generate.argv())));
    // The queue file exists before both start, so neither races to create it.
    ok(d, &strs(&words(Enqueue::of(Sqlite, "W0", "W0", 1).argv())));
    let publish = words(
        Publisher {
            batch: 5,
            ..Publisher::of(Sqlite, Variant::Correct)
        }
        .argv(),
    );
    let a = spawn(d, &strs(&publish));
    let b = spawn(d, &strs(&publish));
    finish(a, "publisher a");
    finish(b, "publisher b");
    let queue = d.join("queue.db");
    let real = "message_id != 'W0'";
    let distinct = sql_i64(
        &queue,
        &format!("SELECT count(DISTINCT message_id) FROM deliveries WHERE {real}"),
    );
    let deliveries = sql_i64(
        &queue,
        &format!("SELECT count(*) FROM deliveries WHERE {real}"),
    );
    assert_eq!(distinct, n as i64, "every Outbox row reached the queue");
    // Ordering: within the queue, a message's first delivery may come after a later message's.
    let order = {
        let conn = rusqlite::Connection::open_with_flags(
            &queue,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT message_id FROM deliveries WHERE {real} ORDER BY delivery_id"
            ))
            .unwrap();
        let ids: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        ids
    };
    let mut highest = String::new();
    let mut behind = 0;
    for id in &order {
        if *id < highest {
            behind += 1;
        } else {
            highest = id.clone();
        }
    }
    eprintln!(
        "two publishers: {deliveries} deliveries of {n} messages, {behind} behind a later message"
    );
    assert_eq!(
        sql_i64(
            &d.join("sender.db"),
            "SELECT count(*) FROM outbox WHERE status = 'pending'"
        ),
        0
    );
    let consume = |c: &str| {
        let how = Consumer {
            consumer_id: Some(c.to_string()),
            batch: 10,
            ..consumer()
        };
        spawn(d, &strs(&words(how.argv())))
    };
    // A receiver file first, then two consumers at once.
    let first = crashlab(d, &strs(&crashing(consumer().argv(), "consumer.after-ack")));
    assert_eq!(first.status.code(), Some(73));
    let (c1, c2) = (consume("c1"), consume("c2"));
    let mut applied = 0;
    let mut duplicates = 0;
    for (child, name) in [(c1, "c1"), (c2, "c2")] {
        let (a, dup) = consumed(&finish(child, name));
        applied += a;
        duplicates += dup;
    }
    let receiver = d.join("receiver.db");
    // W0 (applied by the crashing run) is not one of the N.
    assert_eq!(
        sql_i64(
            &receiver,
            "SELECT count(*) FROM inbox WHERE message_id != 'W0'"
        ),
        n as i64
    );
    assert_eq!(
        sql_i64(&receiver, "SELECT max(credits) FROM ledger"),
        1,
        "no contract credited twice"
    );
    assert_eq!(
        sql_i64(
            &receiver,
            "SELECT sum(balance) FROM ledger WHERE contract_id != 'W0'"
        ),
        sql_i64(&d.join("sender.db"), "SELECT sum(amount) FROM contracts"),
        "the ledger holds every amount once"
    );
    assert_eq!(
        applied + duplicates,
        deliveries as u64,
        "every delivery was handled once"
    );
    assert_eq!(
        duplicates,
        (deliveries - n as i64) as u64,
        "the duplicates are what the Inbox absorbed"
    );
}

#[test]
fn bench_at_a_tiny_size_prints_well_formed_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(
        dir.path(),
        &[
            "bench",
            "14",
            "--messages",
            "60",
            "--batch",
            "10",
            "--consumers",
            "2",
            "--runs",
            "1",
            "--json",
        ],
    );
    // The whole of stdout is one JSON document (the tables are not printed with --json).
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["messages"], 60);
    let costs = r["phase_costs"].as_array().unwrap();
    assert_eq!(costs.len(), 5);
    for c in costs {
        assert!(c["median_wall_ms"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["max_rss_kb"].as_i64().unwrap() > 0, "{c}");
    }
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 8, "four stages with the trace, four without");
    for s in stages {
        assert_eq!(s["rows"], 60);
        assert!(s["rows_per_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["ceiling_rows_per_s"].as_f64().unwrap() > 0.0, "{s}");
    }
    for i in 0..4 {
        let (on, off) = (&stages[i], &stages[i + 4]);
        assert!(
            on["trace_bytes"].as_u64().unwrap() > off["trace_bytes"].as_u64().unwrap(),
            "the traced pass writes the SQL trace: {on} vs {off}"
        );
    }
}

#[test]
fn chaos_kills_a_hung_child_and_stops_at_its_deadline() {
    // Nearly every process runs past a 1 ms bound and is killed as hung: the run must fail
    // (exit 1) within its own deadline, not hang.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = crashlab(
        dir.path(),
        &[
            "chaos",
            "14",
            "--messages",
            "50",
            "--kills",
            "0",
            "--process-timeout-ms",
            "1",
            "--timeout-ms",
            "1500",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    // Killed children still commit some batches first, so the run may reach quiescence
    // (and fail on the hung children) or not (and fail at its deadline): exit 1 either way.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("hung past --process-timeout-ms")
            || stderr.contains("did not reach quiescence"),
        "{stdout} {stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "bounded");
}

/// chaos.json as a reader of `--json` would take it: typed, every field it relies on.
#[derive(serde::Deserialize)]
struct ChaosJson {
    lab: String,
    ok: bool,
    kills_done: usize,
    processes: usize,
    lost: i64,
    duplicated: i64,
    anomalies: Vec<crashlab::engine::jepsen::Found>,
    bad_anomalies: Vec<crashlab::engine::jepsen::Found>,
    check: Value,
    problems: Vec<String>,
}

#[test]
fn chaos_json_is_one_document_in_jepsens_words_with_events_for_every_process() {
    use crashlab::engine::jepsen::Anomaly;
    use crashlab::events::{self, Event};
    let dir = tempfile::tempdir().unwrap();
    let out = crashlab(
        dir.path(),
        &[
            "chaos",
            "14",
            "--messages",
            "150",
            "--consumers",
            "2",
            "--kills",
            "8",
            "--seed",
            "11",
            "--batch",
            "10",
            "--json",
            "--out",
            "ev",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    // The whole of stdout is one JSON document: no table line before or after it.
    let text = common::stdout(&out);
    let r: ChaosJson = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(r.ok && r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.lab, "14-outbox-inbox");
    assert_eq!((r.lost, r.duplicated), (0, 0));
    assert!(r.bad_anomalies.is_empty(), "{:?}", r.bad_anomalies);
    // What the Inbox absorbed is reported, as allowed, one per redelivered message.
    assert!(r
        .anomalies
        .iter()
        .all(|f| f.anomaly == Anomaly::DuplicateDelivery));
    let redelivered = r.check["duplicate_deliveries"].as_u64().unwrap() as usize;
    assert!(
        r.anomalies.len() <= redelivered,
        "{} > {redelivered}",
        r.anomalies.len()
    );
    assert_eq!(r.anomalies.is_empty(), redelivered == 0);
    // The events agree with the files: one applied event per message at most, each message
    // applied once in the ledger.
    assert!(r.check["applied_events"].as_i64().unwrap() <= 150);
    assert_eq!(r.check["inbox"], 150);
    // Every process has its events: it started as its role; it ended with its exit, or the
    // kill left it no end.
    let p: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("ev/processes.json")).unwrap(),
    )
    .unwrap();
    let procs = p["processes"].as_array().unwrap();
    assert_eq!(procs.len(), r.processes);
    let mut applied = 0;
    for x in procs {
        let step = x["step"].as_str().unwrap();
        let path = dir.path().join(format!("ev/logs/{step}.events.jsonl"));
        let evs = events::read(&path).unwrap_or_else(|e| panic!("{step}: {e:#}"));
        applied += evs
            .iter()
            .filter(|e| matches!(e, Event::Applied { .. }))
            .count();
        let role = x["argv"][1].as_str().unwrap();
        if x["signal"].is_null() {
            assert!(
                matches!(&evs[0], Event::Start { role: r, .. } if r == role),
                "{step}: {evs:?}"
            );
            assert_eq!(
                evs.last(),
                Some(&Event::End {
                    code: x["exit"].as_i64().unwrap() as i32
                }),
                "{step}"
            );
        } else {
            // A kill may find a process that has written its end and not exited yet (on a busy
            // machine, between the two): its end is then its last event, never followed.
            let ends: Vec<usize> = (0..evs.len())
                .filter(|&i| matches!(evs[i], Event::End { .. }))
                .collect();
            assert!(
                ends.is_empty() || ends == [evs.len() - 1],
                "{step}: killed, yet events after its end: {evs:?}"
            );
        }
    }
    assert_eq!(applied as i64, r.check["applied_events"].as_i64().unwrap());
    assert!(r.kills_done >= 1);
}

#[test]
fn a_lab_without_a_load_profile_is_refused_naming_those_with_one() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["chaos", "bench"] {
        let out = crashlab(dir.path(), &[command, "13"]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = common::stderr(&out);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("lab 13 (http-dispatch) has no load profile"),
            "{stderr}"
        );
        assert!(stderr.contains("14 (outbox-inbox)"), "{stderr}");
        assert!(common::stdout(&out).is_empty());
    }
    // Lab 14 on servers has a load profile for chaos, but bench measures labs on SQLite files:
    // refused in one line that names the stack, before any server starts.
    let out = crashlab(dir.path(), &["bench", "14", "--stack", "postgres-rabbitmq"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = common::stderr(&out);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("bench 14 --stack postgres-rabbitmq: bench measures labs on SQLite files"),
        "{stderr}"
    );
    assert!(!dir.path().join("c").exists() && !dir.path().join("c.partial").exists());
}

#[test]
fn every_option_of_chaos_and_bench_has_help_text() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["chaos", "bench"] {
        let help = ok(dir.path(), &[command, "--help"]);
        let lines: Vec<&str> = help.lines().map(str::trim_start).collect();
        let is_option = |l: &str| l.starts_with("--") || l.starts_with('<') || l.starts_with("-h");
        let mut options = 0;
        for (i, line) in lines.iter().enumerate() {
            if !is_option(line) || line.starts_with("-h") {
                continue;
            }
            options += 1;
            // `--name <NAME>  text` on one line, or the text on the next line.
            let inline = line.split_once("  ").map_or("", |(_, t)| t.trim());
            let next = lines.get(i + 1).copied().unwrap_or("");
            let text = if inline.is_empty() && !is_option(next) {
                next.trim()
            } else {
                inline
            };
            assert!(!text.is_empty(), "{command}: no help for '{line}'");
        }
        assert!(options >= 5, "{command}: {help}");
    }
}

#[test]
fn the_audit_reads_each_processs_events_and_names_the_file_it_disbelieves() {
    let dir = tempfile::tempdir().unwrap();
    // A run with a consumer that ended by itself after applying something: which processes
    // the seeded kills find alive depends on timing, so a busy machine may need another seed
    // (a bounded few).
    let mut found = None;
    for seed in 5..10 {
        let name = format!("run{seed}");
        let out = crashlab(
            dir.path(),
            &[
                "chaos",
                "14",
                "--messages",
                "80",
                "--consumers",
                "2",
                "--kills",
                "4",
                "--seed",
                &seed.to_string(),
                "--out",
                &name,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let run = dir.path().join(&name);
        let (code, text) = support::audit(&run);
        assert_eq!(code, 0, "{text}");
        let p: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("processes.json")).unwrap())
                .unwrap();
        let procs = p["processes"].as_array().unwrap();
        let applied = procs
            .iter()
            .map(|x| x["step"].as_str().unwrap().to_string())
            .find(|step| {
                step.starts_with("consumer-")
                    && procs.iter().any(|x| x["step"] == *step && x["exit"] == 0)
                    && std::fs::read_to_string(run.join(format!("logs/{step}.events.jsonl")))
                        .unwrap()
                        .contains("\"applied\"")
            });
        if let Some(step) = applied {
            found = Some((run, step));
            break;
        }
    }
    let (run, applied) = found.expect("a consumer that applied and exited 0, in 5 seeds");
    let rel = format!("logs/{applied}.events.jsonl");
    type Edit = Box<dyn Fn(&str) -> String>;
    let edits: [(&str, Edit); 3] = [
        (
            "its end event dropped",
            Box::new(|t: &str| {
                let body = t.trim_end_matches('\n');
                body[..body.rfind('\n').unwrap() + 1].to_string()
            }),
        ),
        (
            "one applied event written twice",
            Box::new(|t: &str| {
                let line = t.lines().find(|l| l.contains("\"applied\"")).unwrap();
                t.replacen(line, &format!("{line}\n{line}"), 1)
            }),
        ),
        ("emptied", Box::new(|_: &str| String::new())),
    ];
    for (what, edit) in edits {
        let copy = dir.path().join("copy");
        let _ = std::fs::remove_dir_all(&copy);
        support::copy_dir(&run, &copy);
        let text = std::fs::read_to_string(copy.join(&rel)).unwrap();
        std::fs::write(copy.join(&rel), edit(&text)).unwrap();
        support::rehash(&copy);
        let (code, report) = support::audit(&copy);
        assert_eq!(code, 1, "{what}: {report}");
        assert!(
            report.contains(&rel) || report.contains("chaos.json: check.applied_events"),
            "{what}: {report}"
        );
    }
}

#[test]
fn a_publisher_crash_before_its_shared_mark_resends_at_most_four_batches_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (n, batch) = (40, 5);
    let generate = Sender {
        batch,
        ..Sender::generate(Sqlite, n, 1)
    };
    ok(d, &strs(&words(generate.argv())));
    let publisher = || {
        Publisher {
            batch,
            ..Publisher::of(Sqlite, Variant::Correct)
        }
        .argv()
    };
    // Three queue commits, then the crash: their rows wait for one shared mark.
    let out = crashlab(
        d,
        &strs(&crashing(publisher(), "publisher.after-queue-commit@3")),
    );
    assert_eq!(out.status.code(), Some(73), "{}", common::stderr(&out));
    let v = verify(d);
    assert_eq!(v["queue"]["deliveries"], 15);
    assert_eq!(
        v["sender"]["outbox_pending"], n,
        "no row is marked sent before the mark that follows its queue commit"
    );
    ok(d, &strs(&words(publisher())));
    let consume = Consumer {
        batch,
        ..consumer()
    };
    let (applied, duplicates) = consumed(&ok(d, &strs(&words(consume.argv()))));
    let v = verify(d);
    let deliveries = v["queue"]["deliveries"].as_u64().unwrap();
    assert_eq!(applied, n as u64, "every message applied once: {v}");
    assert_eq!(
        duplicates,
        deliveries - n as u64,
        "each resend absorbed: {v}"
    );
    assert!(
        (1..=4 * batch as u64).contains(&duplicates),
        "a crash resends at most four batches: {duplicates}"
    );
    assert_eq!(v["sender"]["outbox_pending"], 0);
    assert_eq!(v["receiver"]["inbox"], n);
}
