//! Lab f2 (poison) end to end: the built binary as real processes on real SQLite files. The
//! driver's evidence audits (also re-run), explore shows retry-then-skip holding and
//! retry-forever stalling where predicted, a parked message is replayed once, and bad input
//! is one line with its exit code. No timing assertions.

mod common;
use common::{code, crashlab, readback, stderr, stdout};

use std::fs;
use std::path::Path;

use serde_json::Value;

fn verify(dir: &Path) -> Value {
    let out = crashlab(
        dir,
        &[
            "poison-verify",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    readback(&out)
}

fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = crashlab(dir, args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    stdout(&out)
}

const FILES: &[&str] = &["--queue", "queue.db", "--receiver", "receiver.db"];

fn with_files<'a>(role: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![role];
    args.extend_from_slice(FILES);
    args.extend_from_slice(more);
    args
}

#[test]
fn driver_passes_and_its_evidence_audits_also_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "f2", "--out", "ev"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("CRASH poison-consume.after-park-commit"),
        "{table}"
    );
    assert!(
        table.contains("CRASH poison-replay.after-apply-commit"),
        "{table}"
    );
    let ev = tmp.path().join("ev");
    let results = common::json(&ev.join("results.json"));
    assert_eq!(results["ok"], true);
    // In Jepsen's words: the correct design has no bad anomaly; retry-forever's stall leaves
    // the poison and the two messages behind it unseen, as its scenario expects.
    let scenarios = results["scenarios"].as_array().unwrap();
    let of = |name: &str| scenarios.iter().find(|s| s["scenario"] == name).unwrap();
    assert_eq!(
        of("retry-then-skip")["bad_anomalies"],
        serde_json::json!([])
    );
    let unseen: Vec<&str> = of("retry-forever")["bad_anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["anomaly"], "unseen");
            f["item"].as_str().unwrap()
        })
        .collect();
    assert_eq!(unseen, ["M2", "M3", "M4"]);
    for args in [&["audit", "ev"][..], &["audit", "--rerun", "ev"][..]] {
        let audit = crashlab(tmp.path(), args);
        assert_eq!(
            code(&audit),
            0,
            "{args:?}: {}\n{}",
            stdout(&audit),
            stderr(&audit)
        );
        assert!(stdout(&audit).contains("PASS"), "{}", stdout(&audit));
    }

    // A refusal the role did not report: the statement fails in the replay, and nothing
    // in the run says it saw it fail.
    let log = ev.join("retry-then-skip/attempt-crash.stdout.txt");
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains("REJECTED message M2"), "{text}");
    let cut: String = text
        .lines()
        .filter(|l| !l.starts_with("REJECTED "))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&log, cut).unwrap();
    let audit = crashlab(tmp.path(), &["audit", "ev"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("but the process went on as if it had not"),
        "{}",
        stdout(&audit)
    );

    // A consumer's summary that claims a credit it never committed.
    let log = ev.join("retry-then-skip/consume-recover.stdout.txt");
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains("CONSUMED applied=2 "), "{text}");
    fs::write(
        &log,
        text.replace("CONSUMED applied=2 ", "CONSUMED applied=3 "),
    )
    .unwrap();
    let audit = crashlab(tmp.path(), &["audit", "ev"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("but the replay shows applied=2 (credits committed)"),
        "{}",
        stdout(&audit)
    );
}

#[test]
fn explore_holds_for_retry_then_skip_and_retry_forever_stalls_where_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(
        tmp.path(),
        &["explore", "f2", "--variants", "all", "--json", "--out", "x"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("the report");
    assert_eq!(report["ok"], true, "{}", report["differences"]);
    let cases = report["cases"].as_array().unwrap();
    let judged = |v: &str| -> Vec<&Value> {
        cases
            .iter()
            .filter(|c| c["variant"] == v && (c["status"] == "holds" || c["status"] == "breaks"))
            .collect()
    };
    let skip = judged("retry-then-skip");
    assert!(skip.len() >= 10, "{}", skip.len());
    for c in &skip {
        assert_eq!(c["status"], "holds", "{c}");
    }
    // Every point of the retry/park path and of the replay is crashed in the correct design.
    for point in [
        "poison-consume.after-attempt-commit",
        "poison-consume.after-park-commit",
        "poison-replay.after-fix-commit",
        "poison-replay.after-apply-commit",
        "poison-replay.after-replay-commit",
    ] {
        assert!(skip.iter().any(|c| c["point"] == point), "{point}");
    }
    let forever = judged("retry-forever");
    assert!(!forever.is_empty());
    for c in &forever {
        assert_eq!(c["status"], "breaks", "{c}");
        assert_eq!(c["invariants"]["nothing_stuck"], false, "{c}");
        assert_eq!(c["invariants"]["no_lost_effect"], true, "{c}");
        for f in c["bad_anomalies"].as_array().unwrap() {
            assert_eq!(f["anomaly"], "unseen", "{c}");
        }
        // Nothing lost, nothing done: the poison and the two behind it still pending.
        assert_eq!(c["counts"]["left_pending"], 3, "{c}");
        assert_eq!(c["counts"]["applied"], 1, "{c}");
    }
    // The stall needs no crash: the run without one breaks the same way.
    let probe = report["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["variant"] == "retry-forever")
        .unwrap();
    assert_eq!(probe["result"]["status"], "breaks", "{probe}");
}

#[test]
fn a_parked_message_is_replayed_once_after_its_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    run_ok(
        d,
        &[
            "poison-produce",
            "--queue",
            "queue.db",
            "--amounts",
            "25,5000,30",
        ],
    );
    let consumed = run_ok(d, &with_files("poison-consume", &["--backoff-ms", "0"]));
    assert!(
        consumed.contains("park of message M2 after 3 failed attempts"),
        "{consumed}"
    );
    let v = verify(d);
    assert_eq!(v["queue"]["parked"], 1);
    assert_eq!(v["queue"]["done"], 2);
    assert_eq!(v["receiver"]["total"], 55);

    // Without the fix the replay is refused again: exit 1, still parked.
    let unfixed = crashlab(d, &with_files("poison-replay", &["--message", "M2"]));
    assert_eq!(code(&unfixed), 1, "{}", stderr(&unfixed));
    assert!(
        stderr(&unfixed).contains("still fails"),
        "{}",
        stderr(&unfixed)
    );
    assert_eq!(verify(d)["queue"]["dead_parked"], 1);

    // The fixed replay crashes right after the receiver's commit; run again, the receiver's
    // key absorbs the second credit: applied once.
    let fixed = ["--message", "M2", "--amount", "500"];
    let mut crashed = with_files("poison-replay", &fixed);
    crashed.extend(["--crash-at", "poison-replay.after-apply-commit"]);
    let out = crashlab(d, &crashed);
    assert_eq!(code(&out), 73, "{}", stderr(&out));
    assert_eq!(verify(d)["receiver"]["credits"], 3);
    let again = run_ok(d, &with_files("poison-replay", &fixed));
    assert!(
        again.contains("DUPLICATE message M2 already credited"),
        "{again}"
    );
    assert!(again.contains("REPLAYED message M2 amount 500"), "{again}");
    let already = run_ok(d, &with_files("poison-replay", &fixed));
    assert!(
        already.contains("ALREADY message M2 was replayed"),
        "{already}"
    );
    let v = verify(d);
    assert_eq!(v["receiver"]["credits"], 3);
    assert_eq!(v["receiver"]["total"], 555);
    assert_eq!(v["queue"]["done"], 3);
    assert_eq!(v["queue"]["dead_replayed"], 1);
}

/// A replay that crashed after the receiver's commit has applied the message with its
/// amount; run again with another `--amount`, it says the amount that was applied and
/// leaves the dead letter as the receiver holds it, instead of claiming the new one.
#[test]
fn a_replay_run_again_with_another_amount_reports_the_amount_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    run_ok(
        d,
        &[
            "poison-produce",
            "--queue",
            "queue.db",
            "--amounts",
            "25,5000,30",
        ],
    );
    run_ok(d, &with_files("poison-consume", &["--backoff-ms", "0"]));
    let mut crashed = with_files("poison-replay", &["--message", "M2", "--amount", "500"]);
    crashed.extend(["--crash-at", "poison-replay.after-apply-commit"]);
    let out = crashlab(d, &crashed);
    assert_eq!(code(&out), 73, "{}", stderr(&out));
    let again = run_ok(
        d,
        &with_files("poison-replay", &["--message", "M2", "--amount", "600"]),
    );
    assert!(again.contains("REPLAYED message M2 amount 500 "), "{again}");
    assert!(!again.contains("amount 600\n"), "{again}");
    let v = verify(d);
    assert_eq!(v["receiver"]["total"], 555);
    assert_eq!(v["queue"]["dead_replayed"], 1);
    let letter = rusqlite::Connection::open(d.join("queue.db"))
        .unwrap()
        .query_row(
            "SELECT amount FROM dead_letters WHERE message_id = 'M2'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap();
    assert_eq!(letter, 500, "the dead letter holds the amount applied");
}

#[test]
fn bad_input_is_one_line_with_its_exit_code_and_nothing_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let refused = |args: &[&str], code_want: i32, says: &str| {
        let out = crashlab(d, args);
        let err = stderr(&out);
        assert_eq!(code(&out), code_want, "{args:?}: {err}");
        assert!(
            err.starts_with("crashlab: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    refused(
        &["poison-produce", "--queue", "queue.db", "--amounts", "25,x"],
        2,
        "amount 2 'x' is not a whole number",
    );
    refused(
        &[
            "poison-produce",
            "--queue",
            "queue.db",
            "--amounts",
            "25,9999999999",
        ],
        2,
        "out of range",
    );
    // Nothing was created by the refused runs.
    assert_eq!(fs::read_dir(d).unwrap().count(), 0);
    refused(&with_files("poison-consume", &[]), 2, "does not exist");
    assert_eq!(fs::read_dir(d).unwrap().count(), 0);
    refused(
        &with_files("poison-consume", &["--attempts-max", "0"]),
        2,
        "--attempts-max",
    );
    refused(
        &with_files("poison-consume", &["--backoff-ms", "10001"]),
        2,
        "--backoff-ms",
    );
    refused(
        &with_files("poison-consume", &["--variant", "retry"]),
        2,
        "retry-then-skip",
    );
    refused(
        &with_files("poison-replay", &["--message", "X2"]),
        2,
        "not a message id",
    );
    refused(
        &with_files("poison-replay", &["--message", "M2", "--amount", "1.5"]),
        2,
        "not one whole number",
    );
    refused(
        &with_files(
            "poison-consume",
            &["--crash-at", "poison-replay.after-fix-commit"],
        ),
        2,
        "unknown crash point",
    );
    run_ok(
        d,
        &[
            "poison-produce",
            "--queue",
            "queue.db",
            "--amounts",
            "25,5000",
        ],
    );
    refused(
        &["poison-produce", "--queue", "queue.db", "--amounts", "1"],
        2,
        "already holds 2 messages",
    );
    refused(
        &with_files("poison-replay", &["--message", "M2"]),
        2,
        "is pending, not parked",
    );
    refused(
        &with_files("poison-replay", &["--message", "M7"]),
        2,
        "holds no message M7",
    );
    // The refused replays opened no receiver.
    assert!(!d.join("receiver.db").exists());
}

/// Each printed claim of the consumer and the replay is held to the statements it follows:
/// a REJECTED line naming another message, a STALLED line with another count, a DUPLICATE
/// line dropped, a REPLAYED line with another amount. Each changed line alone fails the
/// audit, which names its stdout.
#[test]
fn a_changed_claim_line_of_the_consumer_or_the_replay_fails_the_audit_naming_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "f2", "--out", "ev"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let ev = tmp.path().join("ev");
    let tampers: &[(&str, &str, &str)] = &[
        (
            "retry-then-skip/park-crash.stdout.txt",
            "REJECTED message M2:",
            "REJECTED message M3:",
        ),
        (
            "retry-forever/consume-stall.stdout.txt",
            " recorded, ",
            "0 recorded, ",
        ),
        (
            "retry-forever/consume-stall.stdout.txt",
            "2 messages waiting",
            "0 messages waiting",
        ),
        (
            "retry-forever/consume-stall.stdout.txt",
            "3 failed attempts in this run",
            "2 failed attempts in this run",
        ),
        (
            "retry-then-skip/replay-recover.stdout.txt",
            "DUPLICATE message M2 already credited\n",
            "",
        ),
        (
            "retry-then-skip/replay-recover.stdout.txt",
            "REPLAYED message M2 amount 500",
            "REPLAYED message M2 amount 900",
        ),
    ];
    for (file, from, to) in tampers {
        let copy = tmp.path().join("copy");
        let _ = fs::remove_dir_all(&copy);
        let cp = std::process::Command::new("cp")
            .arg("-r")
            .arg(&ev)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(cp.success());
        let log = copy.join(file);
        let text = fs::read_to_string(&log).unwrap();
        assert!(text.contains(from), "{file}: {from}");
        fs::write(&log, text.replacen(from, to, 1)).unwrap();
        let audit = crashlab(tmp.path(), &["audit", "copy"]);
        assert_eq!(
            code(&audit),
            1,
            "{file}: {from} -> {to}\n{}",
            stdout(&audit)
        );
        // Beyond the manifest's hash: the line itself is named as a claim the replay denies.
        let said = stdout(&audit);
        let claims: Vec<&str> = said
            .lines()
            .filter(|l| l.starts_with(&format!("{file}: ")) && !l.contains("sha256"))
            .collect();
        assert!(
            !claims.is_empty(),
            "{file}: {from} -> {to}\n{}",
            stdout(&audit)
        );
    }
}
