//! Lab f3 (redelivered) end to end: the built binary as real processes, a consumer really
//! stopped with SIGSTOP past its lease, real HTTP to lab 13's receiver on 127.0.0.1, real
//! SQLite files. No timing assertions: every wait is bounded and only its outcome counts.

mod common;
use common::{code, crashlab, json, marked_processes, stderr, stdout};

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Run crashlab with a mark every child inherits, so the test can look for survivors.
fn marked(dir: &Path, mark: &str, args: &[&str]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .current_dir(dir)
        .env("CRASHLAB_TEST_MARK", mark)
        .stdin(Stdio::null())
        .output()
        .expect("the crashlab binary runs")
}

fn mark(what: &str) -> String {
    format!("f3-{what}-{}", std::process::id())
}

/// No process of the run is alive, and none is left stopped.
fn none_left(mark: &str) {
    let alive = marked_processes(mark);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
}

#[test]
fn the_driver_shows_one_effect_keyed_and_the_expected_duplicate_unkeyed_and_audits_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mark("driver");
    let run = marked(tmp.path(), &m, &["driver", "f3", "--out", "ev"]);
    let out = stdout(&run);
    assert_eq!(code(&run), 0, "{out}\n{}", stderr(&run));
    assert!(out.contains("PASS: 28 processes"), "{out}");
    none_left(&m);
    let results = json(&tmp.path().join("ev/results.json"));
    let scenarios = results["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 4);
    for s in scenarios {
        let name = s["scenario"].as_str().unwrap();
        let bad: Vec<&str> = s["bad_anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["anomaly"].as_str().unwrap())
            .collect();
        match name.starts_with("unkeyed-") {
            true => assert_eq!(bad, ["duplicate"], "{name}"),
            false => assert!(bad.is_empty(), "{name}: {bad:?}"),
        }
        assert_eq!(s["ok"], true, "{name}");
    }
    // The paused consumer really stopped at its point, was continued, and lost its lease.
    let a = std::fs::read_to_string(
        tmp.path()
            .join("ev/keyed-pause-after-call/consumer-a.stdout.txt"),
    )
    .unwrap();
    let paused = a
        .find("PAUSED redeliver-consumer.after-call #1")
        .expect("paused");
    let resumed = a
        .find("RESUMED redeliver-consumer.after-call")
        .expect("resumed");
    let lost = a.find("LEASE-LOST message M1").expect("ack refused");
    assert!(paused < resumed && resumed < lost, "{a}");
    let events = std::fs::read_to_string(
        tmp.path()
            .join("ev/keyed-pause-after-call/consumer-a.events.jsonl"),
    )
    .unwrap();
    assert!(
        events.contains(r#"{"event":"paused","point":"redeliver-consumer.after-call","hit":1}"#)
    );
    // The snapshots taken while A was stopped name it, as the audit requires.
    let files = std::fs::read_to_string(tmp.path().join("ev/database-files.json")).unwrap();
    assert!(files.contains("consumer-a"), "rows name the paused step");
    let audit = crashlab(tmp.path(), &["audit", "ev"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    let rerun = marked(tmp.path(), &m, &["audit", "--rerun", "ev"]);
    assert_eq!(code(&rerun), 0, "{}", stdout(&rerun));
    assert!(stdout(&rerun).contains("rerun PASS"));
    none_left(&m);
    // The audit holds the PAUSED line to the paused event: a pause moved in stdout fails it.
    let a_out = tmp
        .path()
        .join("ev/keyed-pause-after-call/consumer-a.stdout.txt");
    std::fs::write(
        &a_out,
        a.replace(
            "PAUSED redeliver-consumer.after-call #1",
            "PAUSED redeliver-consumer.after-call #2",
        ),
    )
    .unwrap();
    let audit = crashlab(tmp.path(), &["audit", "ev"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(stdout(&audit).contains("'PAUSED redeliver-consumer.after-call #2', but event"));
}

#[test]
fn explore_holds_keyed_everywhere_and_breaks_unkeyed_exactly_where_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mark("explore");
    let run = marked(
        tmp.path(),
        &m,
        &["explore", "f3", "--variants", "all", "--out", "x"],
    );
    let out = stdout(&run);
    assert_eq!(code(&run), 0, "{out}\n{}", stderr(&run));
    assert!(
        out.contains("unkeyed duplicates exactly at the predicted points"),
        "{out}"
    );
    none_left(&m);
    let audit = crashlab(tmp.path(), &["audit", "x"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
}

#[test]
fn a_step_that_times_out_leaves_no_process_stopped_or_running() {
    // B's wait for A's lease outlasts this step timeout: B is killed, A is continued (its
    // ack then holds: nobody took its lease), the run fails and nothing survives it.
    let tmp = tempfile::tempdir().unwrap();
    let m = mark("timeout");
    let run = marked(
        tmp.path(),
        &m,
        &["driver", "f3", "--out", "ev", "--step-timeout-ms", "150"],
    );
    assert_eq!(code(&run), 1, "{}\n{}", stdout(&run), stderr(&run));
    none_left(&m);
    let processes = json(&tmp.path().join("ev/processes.json"));
    let timed_out = processes["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["timed_out"] == true)
        .count();
    assert!(
        timed_out > 0,
        "some step ran past its bound and was recorded so"
    );
    // Every paused consumer was recorded as ended, none is missing from the record.
    let a_steps = processes["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["step"] == "consumer-a")
        .count();
    assert_eq!(a_steps, 4);
}

#[test]
fn bad_input_is_one_line_with_its_exit_code_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let consumer = |more: &[&str]| {
        let mut args = vec![
            "redeliver-consumer",
            "--queue",
            "queue.db",
            "--port-file",
            "receiver.port",
            "--consumer",
            "A",
            "--variant",
            "keyed",
        ];
        args.extend_from_slice(more);
        crashlab(tmp.path(), &args)
    };
    let cases: &[(Output, &str)] = &[
        (
            consumer(&["--lease-ms", "100", "--pause-at", "redeliver-consumer.nowhere"]),
            "crashlab: --pause-at unknown crash point 'redeliver-consumer.nowhere' for phase redeliver-consumer",
        ),
        (
            consumer(&["--lease-ms", "100", "--pause-at", "receiver.after-effect-commit"]),
            "crashlab: --pause-at unknown crash point 'receiver.after-effect-commit'",
        ),
        (
            consumer(&["--lease-ms", "100", "--pause-at", "redeliver-consumer.after-call@0"]),
            "crashlab: --pause-at crash point redeliver-consumer.after-call@0: hit 0 is out of range",
        ),
        (consumer(&["--lease-ms", "0"]), "crashlab: invalid value '0' for '--lease-ms"),
        // The broker's flags are refused on SQLite, not ignored; so is a consumer without
        // its lease.
        (
            consumer(&["--lease-ms", "100", "--heartbeat-s", "1"]),
            "crashlab: --heartbeat-s is for stack postgres-rabbitmq, not sqlite",
        ),
        (
            consumer(&["--lease-ms", "100", "--db", "consumer"]),
            "crashlab: --db is for stack postgres-rabbitmq, not sqlite",
        ),
        (consumer(&[]), "crashlab: --lease-ms is required on stack sqlite"),
        (
            consumer(&["--lease-ms", "100"]),
            "crashlab: queue database queue.db does not exist",
        ),
        (
            crashlab(
                tmp.path(),
                &["redeliver-enqueue", "--queue", "queue.db", "--id", "M 1", "--body", "{}"],
            ),
            "crashlab: --id is not a valid message id",
        ),
    ];
    for (output, start) in cases {
        let err = stderr(output);
        assert_eq!(code(output), 2, "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.starts_with(start), "{err}");
    }
    assert!(common::files(tmp.path()).is_empty(), "nothing written");
    // No receiver announced itself: exit 69, and no lease is taken.
    let enq = crashlab(
        tmp.path(),
        &[
            "redeliver-enqueue",
            "--queue",
            "queue.db",
            "--id",
            "M1",
            "--body",
            "{}",
        ],
    );
    assert_eq!(code(&enq), 0, "{}", stderr(&enq));
    let c = consumer(&["--lease-ms", "100"]);
    assert_eq!(code(&c), 69, "{}", stderr(&c));
    let v = crashlab(
        tmp.path(),
        &[
            "redeliver-verify",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
            "--json",
        ],
    );
    let state = common::readback(&v);
    assert_eq!(state["queue"]["deliveries"], 0, "{state}");
}

#[test]
fn an_interrupt_while_a_consumer_is_paused_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mark("interrupt");
    let mut run = Command::new(common::BIN)
        .args(["driver", "f3", "--out", "ev"])
        .current_dir(tmp.path())
        .env("CRASHLAB_TEST_MARK", &m)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the first paused event of any scenario, then SIGINT at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let paused = loop {
        let found = common::files(tmp.path()).into_iter().any(|f| {
            f.ends_with("consumer-a.events.jsonl")
                && std::fs::read_to_string(tmp.path().join(&f))
                    .unwrap_or_default()
                    .contains(r#""event":"paused""#)
        });
        if found || std::time::Instant::now() > deadline || run.try_wait().unwrap().is_some() {
            break found;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(paused, "a consumer paused while the driver ran");
    // SAFETY: signalling our own child, not reaped yet.
    unsafe { libc::kill(run.id() as libc::pid_t, libc::SIGINT) };
    let out = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    none_left(&m);
    assert!(
        !tmp.path().join("ev").exists(),
        "no evidence from an interrupted run"
    );
}

/// The consumer's RESPONSE, ACKED and LEASE-LOST lines are held to its claim, the reply it
/// recorded and its ack: each changed alone fails the audit, which names the stdout.
#[test]
fn a_changed_response_or_ack_line_fails_the_audit_naming_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "f3", "--out", "ev"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let ev = tmp.path().join("ev");
    let a = "keyed-pause-before-call/consumer-a.stdout.txt";
    let b = "keyed-pause-before-call/consumer-b.stdout.txt";
    let tampers: &[(&str, &str, &str)] = &[
        (a, "status 200 replayed", "status 200"),
        (a, "message M1 delivery 1 ", "message M1 delivery 2 "),
        (b, "status 200", "status 201"),
        (b, "ACKED message M1 by B", "LEASE-LOST message M1 by B"),
    ];
    for (file, from, to) in tampers {
        let copy = tmp.path().join("copy");
        let _ = std::fs::remove_dir_all(&copy);
        let cp = std::process::Command::new("cp")
            .arg("-r")
            .arg(&ev)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(cp.success());
        let log = copy.join(file);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(from), "{file}: {from}\n{text}");
        std::fs::write(&log, text.replacen(from, to, 1)).unwrap();
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
            .filter(|l| l.starts_with(&format!("{file}: ")) && l.contains(" but the "))
            .collect();
        assert!(!claims.is_empty(), "{file}: {from} -> {to}\n{said}");
    }
}
