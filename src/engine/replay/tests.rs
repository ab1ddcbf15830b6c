//! The replay of a whole scenario on small evidence written here: a background process whose
//! commits are observed as prefixes, foreground steps, frozen rows, the rows at the end.

use std::fs;
use std::path::Path;

use serde_json::json;

use super::engine::{Session, Store};
use crate::engine::evidence::Process;
use crate::engine::files::logical_sha256_conn;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::LabStack;

const BG: &str = "SQL receiver BEGIN IMMEDIATE
SQL receiver CREATE TABLE t(x INTEGER NOT NULL)
SQL receiver COMMIT
READY
SQL receiver BEGIN IMMEDIATE
SQL receiver INSERT INTO t VALUES (1)
SQL receiver COMMIT
SQL receiver BEGIN IMMEDIATE
SQL receiver INSERT INTO t VALUES (2)
SQL receiver COMMIT
SQL receiver BEGIN IMMEDIATE
SQL receiver INSERT INTO t VALUES (3)
SQL receiver COMMIT
SQL receiver BEGIN IMMEDIATE
SQL receiver INSERT INTO t VALUES (4)
";

/// The lab whose scenarios run a process in the background (its files are the ones these
/// scenarios write).
fn lab() -> &'static LabStack {
    use crate::engine::registry::{first_with, has_background};
    let lab = first_with(has_background).expect("a lab runs a process in the background");
    for file in ["receiver.db", "intents.db"] {
        assert!(
            lab.databases.contains(&file),
            "{} has {file}",
            lab.full_name()
        );
    }
    lab
}

fn fg(value: i64, create: bool) -> String {
    let create = if create {
        "SQL intents CREATE TABLE a(x INTEGER)\n"
    } else {
        ""
    };
    format!("SQL intents BEGIN IMMEDIATE\n{create}SQL intents INSERT INTO a VALUES ({value})\nSQL intents COMMIT\nCOMMITTED intents a {value}\n")
}

/// The digest of a database after these statements.
fn digest(statements: &[&str]) -> String {
    let mut store = Store::default();
    let mut session = Session::default();
    for (i, sql) in statements.iter().enumerate() {
        session.feed(&mut store, i, "x.db", sql);
    }
    logical_sha256_conn(store.conn("x.db").unwrap()).unwrap()
}

fn receiver(k: i64) -> String {
    let inserts: Vec<String> = (1..=k)
        .map(|i| format!("INSERT INTO t VALUES ({i})"))
        .collect();
    let mut all = vec!["CREATE TABLE t(x INTEGER NOT NULL)"];
    all.extend(inserts.iter().map(String::as_str));
    digest(&all)
}

fn intents(n: i64) -> String {
    let inserts: Vec<String> = (1..=n)
        .map(|i| format!("INSERT INTO a VALUES ({i})"))
        .collect();
    let mut all = vec!["CREATE TABLE a(x INTEGER)"];
    all.extend(inserts.iter().map(String::as_str));
    digest(&all)
}

/// A step's stdout and the commit events its role writes beside its `COMMITTED` lines.
fn write_stdout(dir: &Path, step: &str, stdout: &str) {
    fs::write(dir.join(format!("{step}.stdout.txt")), stdout).unwrap();
    let events: String = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("COMMITTED "))
        .map(|rest| {
            let (db, what) = rest.split_once(' ').unwrap_or((rest, ""));
            json!({"event": "commit", "db": db, "what": what}).to_string() + "\n"
        })
        .collect();
    fs::write(dir.join(format!("{step}.events.jsonl")), events).unwrap();
}

fn scenario() -> Scenario {
    let bg = Step::new("bg", "receiver", &["--db", "receiver.db"], 0, Expect::Exit).in_background(
        Background {
            ready: Ready::Listening,
            stop_after: None,
            stop: Stop::Term,
        },
    );
    let args = ["--intents", "intents.db"];
    Scenario {
        name: "s".to_string(),
        dir: None,
        steps: vec![
            bg,
            Step::new("fg1", "intent", &args, 0, Expect::Exit),
            Step::new("fg2", "intent", &args, 0, Expect::Exit),
        ],
    }
}

fn process(step: &Step, signal: Option<i32>) -> Process {
    let mut argv = vec!["crashlab".to_string(), step.phase.to_string()];
    argv.extend(step.args.iter().cloned());
    serde_json::from_value(json!({
        "scenario": "s", "step": step.name, "argv": argv, "expected_exit": 0,
        "exit": if signal.is_some() { 137 } else { 0 }, "signal": signal,
        "crash_point": null, "crash_mode": null,
        "stdout": format!("{}.stdout.txt", step.name), "stderr": format!("{}.stderr.txt", step.name),
        "wall_ms": 1.0, "max_rss_kb": 1, "timed_out": false
    }))
    .unwrap()
}

/// The replay's problems with the evidence in `dir` of `scenario` and its `processes`.
fn check(dir: &Path, scenario: Scenario, processes: &[Process]) -> Vec<(String, String)> {
    super::check(
        &crate::engine::audit::snapshot(dir),
        lab(),
        &[scenario],
        processes,
        &crate::engine::driver::pragmas(),
        None,
    )
}

/// A row: after_step, receiver commits, intents rows, frozen.
type Spec<'a> = (&'a str, Option<i64>, Option<i64>, &'a [&'a str]);

fn run(dir: &Path, rows: &[Spec<'_>]) -> Vec<(String, String)> {
    let scenario = scenario();
    write_stdout(dir, "bg", BG);
    write_stdout(dir, "fg1", &fg(1, true));
    write_stdout(dir, "fg2", &fg(2, false));
    let mut table = Vec::new();
    for (after, k, n, frozen) in rows {
        for (file, digest) in [
            ("receiver.db", k.map(receiver)),
            ("intents.db", n.map(intents)),
        ] {
            table.push(json!({
                "scenario": "s", "after_step": after, "file": file, "exists": digest.is_some(),
                "bytes": 4096, "sha256": null, "logical_sha256": digest, "frozen": frozen,
            }));
        }
    }
    fs::write(
        dir.join("database-files.json"),
        serde_json::to_string(&table).unwrap(),
    )
    .unwrap();
    // The background process was stopped by SIGKILL inside its last transaction.
    let processes: Vec<Process> = scenario
        .steps
        .iter()
        .map(|s| process(s, (s.name == "bg").then_some(9)))
        .collect();
    check(dir, scenario, &processes)
}

/// `run` in a directory of its own, the background process's row first: it has made its
/// table, and the foreground's file is not there yet.
fn run_after_bg(rows: &[Spec<'_>]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mut all: Vec<Spec<'_>> = vec![("bg", Some(0), None, &[])];
    all.extend_from_slice(rows);
    run(dir.path(), &all)
}

#[test]
fn prefixes_of_a_background_process_that_only_grow_pass() {
    let problems = run_after_bg(&[
        ("fg1", Some(2), Some(1), &["bg"]),
        ("fg2", Some(2), Some(2), &["bg"]),
        // Its last transaction never committed: the end holds three rows, not four.
        ("<end>", Some(3), Some(2), &[]),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_prefix_that_shrinks_fails_and_names_the_row() {
    let problems = run_after_bg(&[
        ("fg1", Some(2), Some(1), &["bg"]),
        ("fg2", Some(1), Some(2), &["bg"]),
        ("<end>", Some(3), Some(2), &[]),
    ]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let (file, problem) = &problems[0];
    assert_eq!(file, "database-files.json");
    assert!(problem.contains("s after fg2, receiver.db"), "{problem}");
    assert!(problem.contains(&receiver(1)), "{problem}");
    assert!(problem.contains("still running"), "{problem}");
}

#[test]
fn uncommitted_work_at_the_end_and_a_wrong_frozen_name_fail() {
    let problems = run_after_bg(&[
        ("fg1", Some(1), Some(1), &["fg2"]),
        ("fg2", Some(3), Some(2), &["bg"]),
        ("<end>", Some(4), Some(2), &[]),
    ]);
    let text = format!("{problems:?}");
    assert_eq!(problems.len(), 2, "{text}");
    assert!(text.contains("frozen names fg2"), "{text}");
    assert!(text.contains("s after <end>, receiver.db"), "{text}");
}

#[test]
fn a_foreground_write_is_checked_exactly() {
    let problems = run_after_bg(&[
        ("fg1", Some(0), Some(2), &["bg"]),
        ("fg2", Some(3), Some(2), &["bg"]),
        ("<end>", Some(3), Some(2), &[]),
    ]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].1.contains("s after fg1, intents.db"),
        "{problems:?}"
    );
}

#[test]
fn a_statement_that_fails_in_the_replay_must_have_failed_in_the_run() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &[]);
    // fg2 inserts into a table that was never created: the replay fails where the run went on.
    write_stdout(
        dir.path(),
        "fg1",
        "SQL intents BEGIN IMMEDIATE\nSQL intents COMMIT\n",
    );
    let scenario = scenario();
    let processes: Vec<Process> = scenario.steps.iter().map(|s| process(s, None)).collect();
    let problems = check(dir.path(), scenario, &processes);
    let text = format!("{problems:?}");
    assert!(
        text.contains(
            "fg2 line 2: `INSERT INTO a VALUES (2)` fails in the replay (no such table: a)"
        ),
        "{text}"
    );
}

/// A real receiver's stdout: four workers served concurrent requests (three keys, a retry
/// of each, a conflicting body, look-ups), so BEGINs of workers waiting for the write lock
/// come inside another worker's transaction, and a look-up runs while a commit is in flight.
const INTERLEAVED: &str = include_str!("fixtures/receiver-interleaved.stdout.txt");
/// The logical digest of that receiver's file once it had stopped, read from the file.
const INTERLEAVED_DIGEST: &str = "a3a624623644e99323acd468c2d5a6c96ab47423a19557da39b6b5b82ea7fd57";

fn interleaved(dir: &Path, trace: &str) -> Vec<(String, String)> {
    let step = Step::new(
        "receiver",
        "receiver",
        &["--db", "receiver.db"],
        0,
        Expect::Exit,
    )
    .in_background(Background {
        ready: Ready::Listening,
        stop_after: None,
        stop: Stop::Term,
    });
    let scenario = Scenario {
        name: "s".to_string(),
        dir: None,
        steps: vec![step],
    };
    write_stdout(dir, "receiver", trace);
    let rows = json!([{
        "scenario": "s", "after_step": "<end>", "file": "receiver.db", "exists": true,
        "bytes": 4096, "sha256": null, "logical_sha256": INTERLEAVED_DIGEST,
    }]);
    fs::write(dir.join("database-files.json"), rows.to_string()).unwrap();
    let processes = vec![process(&scenario.steps[0], None)];
    check(dir, scenario, &processes)
}

#[test]
fn a_real_interleaved_receiver_trace_replays_to_its_file_and_its_claims() {
    let waiting = INTERLEAVED
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w.iter().all(|l| l.starts_with("SQL receiver BEGIN")))
        .count();
    assert!(waiting >= 1, "the fixture interleaves transactions");
    let dir = tempfile::tempdir().unwrap();
    let problems = interleaved(dir.path(), INTERLEAVED);
    assert!(problems.is_empty(), "{problems:?}");
    let tampered = INTERLEAVED.replacen(
        "REQUEST POST /effect key=K3 -> 200 applied effect 2",
        "REQUEST POST /effect key=K2 -> 200 applied effect 2",
        1,
    );
    assert_ne!(tampered, INTERLEAVED);
    let problems = interleaved(dir.path(), &tampered);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].1.contains("effect 2 in the replay has key K3"),
        "{problems:?}"
    );
}
