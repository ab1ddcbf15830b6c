//! `crashlab explore` end to end: the built binary, real child processes, real SQLite files.
//! No timing is asserted: the machine may be shared.

mod common;
use common::marked_processes;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn crashlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_crashlab"))
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Ran {
    let out = crashlab().args(args).output().expect("crashlab starts");
    Ran {
        code: out.status.code().expect("crashlab exits, not killed"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `explore 14 ARGS --json --out DIR/out`: the exit code, the report, and the run's directory.
fn explore(dir: &Path, args: &[&str]) -> (i32, Value, PathBuf) {
    explore_lab("14", dir, args, None)
}

/// `explore LAB ARGS --json --out DIR/out`, the children marked with `mark` in their
/// environment when given.
fn explore_lab(lab: &str, dir: &Path, args: &[&str], mark: Option<&str>) -> (i32, Value, PathBuf) {
    let out = dir.join("out");
    let mut all = vec!["explore", lab, "--json", "--out", out.to_str().unwrap()];
    all.extend(args);
    let mut command = crashlab();
    command.args(&all);
    if let Some(mark) = mark {
        command.env("CRASHLAB_TEST_MARK", mark);
    }
    let output = command.output().expect("crashlab starts");
    let ran = Ran {
        code: output.status.code().expect("crashlab exits, not killed"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        !ran.stderr.contains("panicked"),
        "explore panicked: {}",
        ran.stderr
    );
    let report: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is the report ({e}); exit {}, stderr {}",
            ran.code, ran.stderr
        )
    });
    (ran.code, report, out)
}

fn cases<'a>(report: &'a Value, variant: &str) -> Vec<&'a Value> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["variant"] == variant)
        .collect()
}

/// Lab 14's points on SQLite, the stack these explore runs are on.
fn lab_points() -> Vec<String> {
    let ran = run(&["points", "14", "--json"]);
    assert_eq!(ran.code, 0);
    let value: Value = serde_json::from_str(&ran.stdout).expect("points JSON");
    value[0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter(|p| {
            p["stacks"]
                .as_array()
                .expect("stacks")
                .iter()
                .any(|s| s == "sqlite")
        })
        .map(|p| p["name"].as_str().expect("a name").to_string())
        .collect()
}

const INVARIANTS: [&str; 5] = [
    "reached",
    "no_lost_effect",
    "no_duplicate_effect",
    "nothing_stuck",
    "acknowledged_durable",
];

#[test]
fn the_correct_design_holds_every_invariant_at_every_point() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, report, out) = explore(tmp.path(), &["--variants", "correct"]);
    assert_eq!(code, 0, "differences: {}", report["differences"]);
    assert_eq!(report["ok"], true);
    // A narrowed run says only what it ran: no word of the variants it left out.
    let md = std::fs::read_to_string(out.join("explore.md")).unwrap();
    let pass = md.lines().find(|l| l.starts_with("**PASS")).unwrap_or("");
    let pass = pass.trim_matches('*');
    assert!(
        pass.starts_with("PASS: correct held") && pass.contains("not the whole matrix"),
        "{pass}"
    );
    assert!(!pass.contains("split-inbox-tx"), "{pass}");
    let cases = cases(&report, "correct");
    for point in lab_points() {
        let at: Vec<&&Value> = cases
            .iter()
            .filter(|c| c["point"] == point.as_str())
            .collect();
        assert!(!at.is_empty(), "{point} was explored");
        for c in at {
            let inbox_only = point.contains("inbox-commit");
            if inbox_only {
                // Only split-inbox-tx has these commits: arming them crashes nothing.
                assert_eq!(c["status"], "not-reached", "{point}: {c}");
                continue;
            }
            assert_eq!(
                c["status"], "holds",
                "{point}@{}: {}",
                c["hit"], c["problems"]
            );
            for inv in INVARIANTS {
                assert_eq!(c["invariants"][inv], true, "{point}@{} {inv}", c["hit"]);
            }
            assert_eq!(c["counts"]["lost_effects"], 0);
            assert_eq!(c["counts"]["duplicated_effects"], 0);
            assert_eq!(c["crash_exit"], 73);
        }
    }
    // The consumer's second delivery is explored: the probe saw it and a case crashed there.
    let second = cases
        .iter()
        .find(|c| c["point"] == "consumer.after-receiver-commit" && c["hit"] == 2)
        .expect("consumer.after-receiver-commit@2 is a case");
    // The crash after the receiver commit redelivers: two deliveries, one effect.
    assert!(second["counts"]["duplicates_suppressed"].as_i64().unwrap() >= 1);
    // The same queue row is claimed again after the restart: more claims than rows.
    assert!(
        second["counts"]["claims"].as_i64().unwrap()
            > second["counts"]["deliveries"].as_i64().unwrap()
    );
    assert!(second["counts"]["acknowledged_commits"].as_i64().unwrap() > 0);
    // The evidence proves the crash: the CRASH line in the crashed process's stdout.
    let dir = out.join(second["evidence"].as_str().unwrap());
    let consumer = std::fs::read_to_string(dir.join("04-consumer.stdout.txt")).unwrap();
    assert!(consumer
        .lines()
        .any(|l| l == "CRASH consumer.after-receiver-commit exit=73"));
    let processes: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("processes.json")).unwrap())
            .unwrap();
    assert_eq!(processes[3]["exit"], 73);
    assert_eq!(processes[3]["argv"][0], "crashlab");
    for file in ["explore.json", "explore.md", "explore.svg", "manifest.json"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let svg = std::fs::read_to_string(out.join("explore.svg")).unwrap();
    // Cells carry a tooltip; the legend's squares do not.
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains(r##"fill="#2e7d32"><title>"##), "green cells");
    assert!(svg.contains(r##"fill="#bdbdbd"><title>"##), "grey cells");
    assert!(
        !svg.contains(r##"fill="#c62828"><title>"##),
        "no red cell for the correct design"
    );
}

#[test]
fn each_variant_shows_its_predicted_violation_at_the_predicted_point() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, report, out) = explore(
        tmp.path(),
        &[
            "--variants",
            "mark-before-send,memory-inbox,split-inbox-tx,ack-before-apply",
        ],
    );
    assert_eq!(code, 0, "differences: {}", report["differences"]);
    let predicted = [
        (
            "mark-before-send",
            "publisher.after-mark-sent",
            "no_lost_effect",
            "lost_messages",
        ),
        (
            "memory-inbox",
            "consumer.after-receiver-commit",
            "no_duplicate_effect",
            "duplicated_effects",
        ),
        (
            "split-inbox-tx",
            "consumer.after-inbox-commit",
            "no_lost_effect",
            "lost_effects",
        ),
        (
            "ack-before-apply",
            "consumer.after-ack",
            "no_lost_effect",
            "lost_effects",
        ),
    ];
    for (variant, point, invariant, count) in predicted {
        let broken: Vec<&Value> = cases(&report, variant)
            .into_iter()
            .filter(|c| c["point"] == point && c["invariants"][invariant] == false)
            .collect();
        assert!(
            !broken.is_empty(),
            "{variant} breaks {invariant} at {point}"
        );
        for c in &broken {
            assert_eq!(c["status"], "breaks");
            assert_eq!(c["invariants"]["reached"], true, "the crash is proven");
            assert!(
                c["counts"][count].as_i64().unwrap() >= 1,
                "{variant}: {count}"
            );
            // A broken case keeps its databases for sqlite3.
            let db = out
                .join(c["evidence"].as_str().unwrap())
                .join("db/receiver.db");
            assert!(db.is_file(), "{}", db.display());
        }
        let finding = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f.as_str().unwrap().starts_with(variant))
            .expect("a finding per variant");
        assert!(finding.as_str().unwrap().contains(point), "{finding}");
    }
    // The Inbox variants do not touch the publisher: their publisher points hold... except
    // where the memory set forgets across a restart.
    for c in cases(&report, "split-inbox-tx") {
        if c["point"].as_str().unwrap().starts_with("publisher.") {
            assert_eq!(c["status"], "holds", "{c}");
        }
    }
}

#[test]
fn an_unreachable_point_is_reported_as_not_reached_never_as_a_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, report, out) = explore(
        tmp.path(),
        &[
            "--variants",
            "correct",
            "--points",
            "consumer.after-inbox-commit",
        ],
    );
    assert_eq!(code, 0);
    let cases = cases(&report, "correct");
    assert_eq!(cases.len(), 1);
    let c = cases[0];
    assert_eq!(c["status"], "not-reached");
    assert_eq!(c["expect_reached"], false);
    for inv in INVARIANTS {
        assert!(c["invariants"][inv].is_null(), "{inv} is not judged");
    }
    // Armed, not reached: the consumer ran to its end, with no CRASH line, and said so
    // (NOT-REACHED, exit 78).
    let dir = out.join(c["evidence"].as_str().unwrap());
    let stdout = std::fs::read_to_string(dir.join("04-consumer.stdout.txt")).unwrap();
    assert!(!stdout.contains("CRASH "));
    assert!(stdout.contains("CONSUMED applied=2"));
    assert_eq!(c["crash_exit"], 78);
    assert!(
        stdout.contains("NOT-REACHED consumer.after-inbox-commit@1"),
        "{stdout}"
    );
    // The table and the Markdown say it in words.
    let md = std::fs::read_to_string(out.join("explore.md")).unwrap();
    assert!(
        md.contains("| `consumer.after-inbox-commit` | 0 | not reached |"),
        "{md}"
    );

    // A prediction that depends on a point left out is a failure, not a pass (exit 1).
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let ran = run(&[
        "explore",
        "14",
        "--variants",
        "mark-before-send",
        "--points",
        "consumer",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    assert!(ran.stdout.contains("not reached"));
    assert!(
        ran.stdout.contains("publisher.after-mark-sent") && ran.stdout.contains("FAIL"),
        "{}",
        ran.stdout
    );
}

#[test]
fn the_three_crash_modes_are_judged_by_their_own_exit_status() {
    for (mode, exit, line) in [
        ("exit", 73, "exit=73"),
        ("abort", 134, "signal=SIGABRT"),
        ("kill", 137, "signal=SIGKILL"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (code, report, out) = explore(
            tmp.path(),
            &[
                "--variants",
                "correct,split-inbox-tx",
                "--points",
                "consumer.after-inbox-commit,consumer.after-receiver-commit",
                "--crash-mode",
                mode,
            ],
        );
        assert_eq!(code, 0, "{mode}: {}", report["differences"]);
        assert_eq!(report["crash_mode"], mode);
        let reached: Vec<&Value> = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] != "not-reached")
            .collect();
        assert!(!reached.is_empty());
        for c in reached {
            assert_eq!(c["crash_exit"], exit, "{mode}: {c}");
            assert_eq!(c["invariants"]["reached"], true);
            let dir = out.join(c["evidence"].as_str().unwrap());
            let stdout = std::fs::read_to_string(dir.join("04-consumer.stdout.txt")).unwrap();
            let want = format!("CRASH {} {line}", c["point"].as_str().unwrap());
            assert!(stdout.lines().any(|l| l == want), "{mode}: {want}");
        }
        // The split variant loses its credit whatever stops it.
        assert!(report["cases"].as_array().unwrap().iter().any(|c| {
            c["variant"] == "split-inbox-tx" && c["invariants"]["no_lost_effect"] == false
        }));
    }
}

#[test]
fn the_table_has_points_as_rows_and_invariants_as_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let ran = run(&[
        "explore",
        "14",
        "--variants",
        "ack-before-apply",
        "--points",
        "consumer.after-ack,enqueue",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let header = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("point "))
        .expect("a header row");
    for column in [
        "reached",
        "no-lost",
        "no-dup",
        "no-stuck",
        "ack=>dur",
        "deliveries",
    ] {
        assert!(header.contains(column), "{column} in {header}");
    }
    let row = ran
        .stdout
        .lines()
        .find(|l| l.starts_with("consumer.after-ack "))
        .expect("a row for the point");
    assert!(row.contains("*BREAKS 1/3"), "{row}");
    assert!(ran.stdout.contains("PASS"));
    // No progress bar when stderr is not a terminal.
    assert_eq!(ran.stderr, "");
}

#[test]
fn evidence_names_no_absolute_path_of_the_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _report, out) = explore(
        tmp.path(),
        &[
            "--variants",
            "memory-inbox",
            "--points",
            "consumer.after-receiver-commit",
        ],
    );
    assert_eq!(code, 0);
    let root = tmp.path().to_str().unwrap().to_string();
    let mut stack = vec![out.clone()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| {
                e != "db"
                    && !e.to_string_lossy().ends_with("wal")
                    && !e.to_string_lossy().ends_with("shm")
            }) {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains(&root), "{} names {root}", path.display());
                assert!(!text.contains("/dev/shm"), "{}", path.display());
                seen += 1;
            }
        }
    }
    assert!(seen > 5);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let taken = tmp.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    let fresh = tmp.path().join("fresh");
    let fresh = fresh.to_str().unwrap();
    for (args, says) in [
        (
            vec!["explore", "14", "--variants", "bogus", "--out", fresh],
            "unknown variant 'bogus'",
        ),
        (
            vec![
                "explore",
                "14",
                "--points",
                "consumer.nowhere",
                "--out",
                fresh,
            ],
            "neither a point nor a phase",
        ),
        (
            vec!["explore", "14", "--jobs", "0", "--out", fresh],
            "--jobs 0 is out of range",
        ),
        (vec!["explore", "99", "--out", fresh], "unknown lab '99'"),
        (
            vec!["explore", "14", "--variants", "all,correct", "--out", fresh],
            "'all' stands alone in --variants",
        ),
        (
            vec!["explore", "13", "--variants", "bogus", "--out", fresh],
            "unknown variant 'bogus'; known: all, keyed, unkeyed, unkeyed-hold",
        ),
        (
            vec!["explore", "14", "--out", taken.to_str().unwrap()],
            "already exists",
        ),
        (
            vec!["explore", "14", "--work-dir", "no/such/dir", "--out", fresh],
            "is not a directory",
        ),
    ] {
        let ran = run(&args);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert_eq!(ran.stderr.lines().count(), 1, "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.starts_with("crashlab: "), "{}", ran.stderr);
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
        assert!(!Path::new(fresh).exists(), "nothing written for {args:?}");
    }
    // The existing directory was not touched.
    assert_eq!(std::fs::read_dir(&taken).unwrap().count(), 0);
}

/// Where lab 13's unkeyed receiver must run an intent twice: a crash between the receiver's
/// effect commit and the dispatcher's receipt commit.
const UNKEYED_DUPLICATES: [&str; 3] = [
    "dispatcher.after-response",
    "dispatcher.before-receipt-commit",
    "receiver.after-effect-commit",
];

#[test]
fn explore_13_keyed_holds_everywhere_and_unkeyed_duplicates_where_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = format!("explore13-{}", std::process::id());
    let (code, report, out) = explore_lab("13", tmp.path(), &[], Some(&mark));
    assert_eq!(code, 0, "differences: {}", report["differences"]);
    assert_eq!(report["ok"], true);
    assert_eq!(report["lab"], "13-http-dispatch");
    assert_eq!(
        report["variants"],
        serde_json::json!(["keyed", "unkeyed", "unkeyed-hold"])
    );

    for c in cases(&report, "keyed") {
        let at = format!("keyed {}@{}", c["point"], c["hit"]);
        match c["status"].as_str().unwrap() {
            "holds" => {
                for inv in INVARIANTS {
                    assert_eq!(c["invariants"][inv], true, "{at}: {inv}");
                }
                // One effect per intent, every intent delivered.
                assert_eq!(c["counts"]["effects"], c["counts"]["intents"], "{at}");
                assert_eq!(c["counts"]["receipts"], c["counts"]["intents"], "{at}");
                assert_eq!(c["counts"]["history"], c["counts"]["intents"], "{at}");
            }
            "not-reached" => assert!(
                c["point"].as_str().unwrap().contains("unknown"),
                "{at}: only the hold-mode points are out of reach"
            ),
            other => panic!("{at}: {other}: {}", c["problems"]),
        }
    }
    // Both predicted points that the issue names are among the explored ones.
    for point in ["dispatcher.after-response", "receiver.after-effect-commit"] {
        assert!(UNKEYED_DUPLICATES.contains(&point));
    }
    let mut duplicated_at = Vec::new();
    for c in cases(&report, "unkeyed") {
        let point = c["point"].as_str().unwrap();
        let at = format!("unkeyed {point}@{}", c["hit"]);
        if c["status"] == "not-reached" {
            assert!(point.contains("unknown"), "{at} not reached");
            continue;
        }
        let (effects, intents) = (
            c["counts"]["effects"].as_i64().unwrap(),
            c["counts"]["intents"].as_i64().unwrap(),
        );
        assert_eq!(c["invariants"]["reached"], true, "{at}");
        assert_eq!(c["invariants"]["no_lost_effect"], true, "{at}");
        assert_eq!(c["invariants"]["nothing_stuck"], true, "{at}");
        assert_eq!(c["invariants"]["acknowledged_durable"], true, "{at}");
        if UNKEYED_DUPLICATES.contains(&point) {
            assert_eq!(c["status"], "breaks", "{at}");
            assert_eq!(c["invariants"]["no_duplicate_effect"], false, "{at}");
            assert_eq!(effects, intents + 1, "{at}: exactly one intent ran twice");
            assert_eq!(c["counts"]["duplicated_effects"], 1, "{at}");
            duplicated_at.push(point.to_string());
        } else {
            assert_eq!(c["status"], "holds", "{at}: {}", c["problems"]);
            assert_eq!(effects, intents, "{at}: one effect per intent");
        }
    }
    for point in UNKEYED_DUPLICATES {
        assert!(
            duplicated_at.iter().any(|p| p == point),
            "unkeyed duplicates at {point}"
        );
    }
    // The receiver's second effect is explored too (the second intent's window).
    assert!(cases(&report, "unkeyed")
        .iter()
        .any(|c| c["point"] == "receiver.after-effect-commit" && c["hit"] == 2));

    for file in ["explore.json", "explore.md", "explore.svg", "manifest.json"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let md = std::fs::read_to_string(out.join("explore.md")).unwrap();
    assert!(md.contains("## unkeyed"), "{md}");
    let case_dir = out.join("cases/unkeyed/dispatcher.after-response@1");
    let processes = std::fs::read_to_string(case_dir.join("processes.json")).unwrap();
    assert!(
        processes.contains("\"receiver\""),
        "the receiver is recorded"
    );
    assert!(!processes.contains(&tmp.path().display().to_string()));
    // Every receiver and dispatcher was stopped with its case.
    let alive = marked_processes(&mark);
    assert!(alive.is_empty(), "processes outlived explore 13: {alive:?}");
}

#[test]
fn explore_13_names_a_predicted_duplicate_it_did_not_explore() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, report, _out) = explore_lab(
        "13",
        tmp.path(),
        &["--variants", "unkeyed", "--points", "intent"],
        None,
    );
    assert_eq!(code, 1);
    assert_eq!(report["ok"], false);
    let differences = report["differences"].to_string();
    assert!(
        differences.contains("not explored") && differences.contains("dispatcher.after-response"),
        "{differences}"
    );
}

/// What `--json` prints, read with serde into types: one document, nothing else on stdout.
#[derive(serde::Deserialize)]
struct JsonReport {
    lab: String,
    ok: bool,
    variants: Vec<String>,
    cases: Vec<JsonCase>,
    summary: Vec<JsonSummary>,
    differences: Vec<String>,
}

#[derive(serde::Deserialize)]
struct JsonCase {
    variant: String,
    point: Option<String>,
    hit: u32,
    status: String,
    anomalies: Vec<crashlab::engine::jepsen::Found>,
    bad_anomalies: Vec<crashlab::engine::jepsen::Found>,
    evidence: String,
}

#[derive(serde::Deserialize)]
struct JsonSummary {
    variant: String,
    judged: usize,
    valid: usize,
    bad_anomalies: std::collections::BTreeMap<String, usize>,
}

#[test]
fn json_is_one_document_in_jepsens_words_and_every_case_has_its_events() {
    use crashlab::engine::jepsen::Anomaly;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let ran = run(&[
        "explore",
        "14",
        "--json",
        "--variants",
        "correct,ack-before-apply",
        "--points",
        "consumer.after-ack",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.stderr, "", "no table, no progress on stderr");
    // The whole of stdout is one JSON document (serde refuses trailing text), and it is
    // explore.json.
    let report: JsonReport = serde_json::from_str(&ran.stdout).expect("one JSON document");
    let file = std::fs::read_to_string(out.join("explore.json")).unwrap();
    assert_eq!(ran.stdout.trim_end(), file.trim_end());
    assert!(report.ok, "{:?}", report.differences);
    assert_eq!(report.lab, "14-outbox-inbox");
    assert_eq!(report.variants, ["correct", "ack-before-apply"]);
    for c in &report.cases {
        assert_eq!(c.point.as_deref(), Some("consumer.after-ack"));
        // Every process of every case wrote its events beside its stdout.
        let dir = out.join(&c.evidence);
        let stdouts: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".stdout.txt"))
            .collect();
        assert!(stdouts.len() >= 4, "{stdouts:?}");
        for s in stdouts {
            let events = dir.join(s.replace(".stdout.txt", ".events.jsonl"));
            let text = std::fs::read_to_string(&events).unwrap();
            assert!(
                text.starts_with("{\"event\":\"start\""),
                "{}",
                events.display()
            );
        }
        // The upstream's redelivery of the first message is a duplicate delivery, allowed.
        assert!(
            c.anomalies
                .iter()
                .any(|f| f.anomaly == Anomaly::DuplicateDelivery && f.item == "M000001"),
            "{} @{}",
            c.variant,
            c.hit
        );
        assert!(c
            .bad_anomalies
            .iter()
            .all(|f| f.anomaly != Anomaly::DuplicateDelivery));
        let bad: Vec<Anomaly> = c.bad_anomalies.iter().map(|f| f.anomaly).collect();
        if c.variant == "ack-before-apply" && c.hit == 2 {
            // The second message acked, never applied, and nothing after it: unseen.
            assert_eq!(c.status, "breaks");
            assert_eq!(bad, [Anomaly::Unseen]);
            assert_eq!(c.bad_anomalies[0].item, "M000002");
        } else {
            assert_eq!(c.status, "holds", "{} @{}", c.variant, c.hit);
            assert!(bad.is_empty(), "{} @{}: {bad:?}", c.variant, c.hit);
        }
    }
    let ack = report
        .summary
        .iter()
        .find(|s| s.variant == "ack-before-apply")
        .unwrap();
    assert_eq!((ack.judged, ack.valid), (3, 2));
    assert_eq!(ack.bad_anomalies.get("unseen"), Some(&1));
}

/// The points each lab registers on its default stack (the one explore runs without
/// `--stack`), from `crashlab lab show LAB --json`.
fn points_of(lab: &str) -> Vec<String> {
    let ran = run(&["lab", "show", lab, "--json"]);
    assert_eq!(ran.code, 0);
    let value: Value = serde_json::from_str(&ran.stdout).expect("lab JSON");
    value["stacks"][0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["name"].as_str().expect("a name").to_string())
        .collect()
}

#[test]
fn every_registered_point_of_every_lab_is_reached_by_some_case() {
    let labs: Value =
        serde_json::from_str(&run(&["points", "--json"]).stdout).expect("points JSON");
    let labs: Vec<String> = labs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lab"].as_str().expect("a lab").to_string())
        .collect();
    assert!(labs.len() >= 2, "{labs:?}");
    for lab in labs {
        // Every design's probe runs the whole scenario; one point's cases add the recovery
        // of a crash, where a point like lab 13's hold of an unknown outcome is reached.
        let point = if lab.starts_with("13-") {
            "dispatcher.after-response".to_string()
        } else {
            points_of(&lab)[0].clone()
        };
        let tmp = tempfile::tempdir().unwrap();
        let (code, report, _out) = explore_lab(&lab, tmp.path(), &["--points", &point], None);
        // Predictions at points left out make it exit 1; an error in a case is no evidence.
        assert!(code == 0 || code == 1, "{lab}: exit {code}");
        for c in report["cases"].as_array().unwrap() {
            assert_ne!(c["status"], "error", "{lab}: {c}");
        }
        let mut reached = std::collections::BTreeSet::new();
        let runs = report["probes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["result"])
            .chain(report["cases"].as_array().unwrap());
        for r in runs {
            for key in ["hits", "recovery_hits"] {
                for (p, n) in r[key].as_object().unwrap() {
                    if n.as_u64().unwrap() > 0 {
                        reached.insert(p.clone());
                    }
                }
            }
        }
        for p in points_of(&lab) {
            assert!(reached.contains(&p), "lab {lab}: no case reaches {p}");
        }
    }
}
