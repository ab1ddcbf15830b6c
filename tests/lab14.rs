//! Lab 14 end to end: the driver, each role alone, every crash point, bad input, moved crashes.

mod common;

use std::fs;
use std::path::Path;

use common::*;

const STEPS: [&str; 12] = [
    "business-crash",
    "after-business",
    "publish-crash",
    "after-publish",
    "publish-recover",
    "consume-crash",
    "after-consume",
    "consume-recover",
    "final-verify",
    "conflict-enqueue",
    "conflict-consume",
    "after-conflict",
];

#[test]
fn driver_runs_the_protocol_and_records_the_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(dir.path(), "run", &[]);
    let text = stdout(&output);
    assert_eq!(
        code(&output),
        0,
        "driver failed:\n{text}\n{}",
        stderr(&output)
    );
    assert!(text.contains("PASS: 12 processes"), "{text}");

    let processes = json(&out.join("processes.json"));
    let list = processes["processes"].as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|p| p["step"].as_str().unwrap()).collect();
    assert_eq!(names, STEPS);
    for p in list {
        assert_eq!(p["exit"], p["expected_exit"], "{p}");
        assert_eq!(p["argv"][0], "crashlab");
        assert!(p["wall_ms"].as_f64().unwrap() > 0.0);
    }
    let exits: Vec<i64> = list.iter().map(|p| p["exit"].as_i64().unwrap()).collect();
    assert_eq!(exits, [73, 0, 73, 0, 0, 73, 0, 0, 0, 0, 65, 0]);
    for (step, point) in [
        ("business-crash", "sender.after-commit"),
        ("publish-crash", "publisher.after-queue-commit"),
        ("consume-crash", "consumer.after-receiver-commit"),
    ] {
        let out_text = fs::read_to_string(out.join(format!("{step}.stdout.txt"))).unwrap();
        assert_eq!(
            out_text.lines().last(),
            Some(format!("CRASH {point} exit=73").as_str())
        );
    }
    let conflict = fs::read_to_string(out.join("conflict-consume.stderr.txt")).unwrap();
    assert!(
        conflict.contains(
            "payload conflict: message M1 was applied with amount 25, this delivery has 99"
        ),
        "{conflict}"
    );
    assert_eq!(processes["pragmas"]["synchronous"], "full");
    assert!(processes["sqlite_version"]
        .as_str()
        .unwrap()
        .starts_with('3'));

    // The final readback from raw stdout: 2 deliveries, 1 message, 1 effect.
    let final_line = fs::read_to_string(out.join("final-verify.stdout.txt")).unwrap();
    let state: serde_json::Value =
        serde_json::from_str(final_line.lines().last().unwrap()).unwrap();
    assert_eq!(state["queue"]["deliveries"], 2);
    assert_eq!(state["queue"]["messages"], 1);
    assert_eq!(state["queue"]["acked"], 2);
    assert_eq!(state["receiver"]["inbox"], 1);
    assert_eq!(state["receiver"]["ledger"], 25);
    assert_eq!(state["sender"]["outbox_sent"], 1);

    // database-files.json: every database after every step, side files beside them.
    let rows = json(&out.join("database-files.json"));
    let rows = rows.as_array().unwrap();
    for step in STEPS {
        for db in ["sender.db", "queue.db", "receiver.db"] {
            assert!(
                rows.iter()
                    .any(|r| r["after_step"] == step && r["file"] == db),
                "no row for {db} after {step}"
            );
        }
    }
    let sender_after_crash = rows
        .iter()
        .find(|r| r["after_step"] == "business-crash" && r["file"] == "sender.db")
        .unwrap();
    assert_eq!(sender_after_crash["exists"], true);
    assert!(sender_after_crash["logical_sha256"].as_str().unwrap().len() == 64);
    let queue_after_crash = rows
        .iter()
        .find(|r| r["after_step"] == "business-crash" && r["file"] == "queue.db")
        .unwrap();
    assert_eq!(queue_after_crash["exists"], false);
    // The crashed sender never closed its connection: its commit lives in the WAL.
    assert!(rows.iter().any(|r| r["after_step"] == "business-crash"
        && r["file"] == "sender.db-wal"
        && r["bytes"].as_u64() > Some(0)));

    let results = json(&out.join("results.json"));
    assert_eq!(results["ok"], true);
    assert_eq!(results["steps"].as_array().unwrap().len(), 12);

    // No absolute machine path in any evidence file; the work directory is gone.
    let here = dir.path().to_string_lossy().into_owned();
    let checkout = env!("CARGO_MANIFEST_DIR");
    for rel in files(&out) {
        let text = fs::read_to_string(out.join(&rel)).unwrap();
        assert!(!text.contains(&here), "{} holds {here}", rel.display());
        assert!(
            !text.contains(checkout),
            "{} holds {checkout}",
            rel.display()
        );
        assert!(
            !text.contains("/tmp/"),
            "{} holds a /tmp path",
            rel.display()
        );
    }
    assert!(
        !out.join("db").exists(),
        "databases are kept only with --keep-db"
    );

    // grep M1 follows the message from Outbox to Inbox.
    let grep = |step: &str, needle: &str| {
        fs::read_to_string(out.join(format!("{step}.stdout.txt")))
            .unwrap()
            .lines()
            .any(|l| l.contains("M1") && l.contains(needle))
    };
    assert!(grep("business-crash", "SQL sender INSERT INTO outbox"));
    assert!(grep("publish-crash", "SQL queue INSERT INTO deliveries"));
    assert!(grep("publish-recover", "SQL queue INSERT INTO deliveries"));
    assert!(grep("consume-crash", "SQL receiver INSERT INTO inbox"));
    assert!(grep("consume-recover", "DUPLICATE"));
}

#[test]
fn keep_db_keeps_the_databases_and_they_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(dir.path(), "kept", &["--keep-db"]);
    assert_eq!(code(&output), 0, "{}", stdout(&output));
    let db = out.join("db");
    for f in ["sender.db", "queue.db", "receiver.db"] {
        assert!(db.join(f).is_file(), "{f} kept");
    }
    let state = verify(&db);
    assert_eq!(state["receiver"]["ledger"], 25);
    assert_eq!(state["queue"]["rejected"], 1);
}

#[test]
fn an_existing_output_directory_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("taken");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("mine.txt"), "precious").unwrap();
    let (output, _) = driver(dir.path(), "taken", &[]);
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("already exists"),
        "{}",
        stderr(&output)
    );
    assert_eq!(files(&out), [Path::new("mine.txt")]);
    assert_eq!(
        fs::read_to_string(out.join("mine.txt")).unwrap(),
        "precious"
    );
    assert!(!dir.path().join("taken.partial").exists());
}

#[test]
fn each_role_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sent = crashlab(
        d,
        &[
            "sender",
            "--db",
            "sender.db",
            "--contract",
            "R1",
            "--amount",
            "25",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    assert!(stdout(&sent).contains("SQL sender INSERT INTO outbox(message_id, contract_id, amount, status) VALUES ('M1', 'R1', 25, 'pending')"));
    assert!(stdout(&sent).contains("COMMITTED sender contract R1 message M1 amount 25"));
    assert_eq!(verify(d)["sender"]["outbox_pending"], 1);

    let published = crashlab(
        d,
        &["publisher", "--sender", "sender.db", "--queue", "queue.db"],
    );
    assert_eq!(code(&published), 0, "{}", stderr(&published));
    let text = stdout(&published);
    let queue_commit = text.find("COMMITTED queue").expect("queue commit");
    let mark_commit = text
        .find("COMMITTED sender outbox sent")
        .expect("mark commit");
    assert!(
        queue_commit < mark_commit,
        "the queue commits before the Outbox is marked"
    );
    let state = verify(d);
    assert_eq!(state["sender"]["outbox_sent"], 1);
    assert_eq!(state["queue"]["pending"], 1);

    let consumed = crashlab(
        d,
        &[
            "consumer",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
        ],
    );
    assert_eq!(code(&consumed), 0, "{}", stderr(&consumed));
    let text = stdout(&consumed);
    assert!(
        text.contains(r#"'{"amount":25,"contract":"R1","message":"M1"}'"#)
            || text.contains("INSERT INTO inbox")
    );
    let receiver_commit = text.find("COMMITTED receiver").expect("receiver commit");
    let ack_commit = text.find("COMMITTED queue ack").expect("ack commit");
    assert!(
        receiver_commit < ack_commit,
        "the receiver commits before the ack"
    );
    let state = verify(d);
    assert_eq!(state["receiver"]["ledger"], 25);
    assert_eq!(state["queue"]["acked"], 1);

    // The same message again from a faulty upstream, same payload: a duplicate, no effect.
    let again = crashlab(
        d,
        &[
            "enqueue",
            "--queue",
            "queue.db",
            "--message",
            "M1",
            "--contract",
            "R1",
            "--amount",
            "25",
        ],
    );
    assert_eq!(code(&again), 0);
    let consumed = crashlab(
        d,
        &[
            "consumer",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
        ],
    );
    assert_eq!(code(&consumed), 0);
    assert!(stdout(&consumed).contains("CONSUMED applied=0 duplicates=1 rejected=0"));
    assert_eq!(verify(d)["receiver"]["ledger"], 25);

    // Another payload under the same id: rejected, exit 65, nothing applied, queue not blocked.
    let bad = crashlab(
        d,
        &[
            "enqueue",
            "--queue",
            "queue.db",
            "--message",
            "M1",
            "--contract",
            "R1",
            "--amount",
            "99",
        ],
    );
    assert_eq!(code(&bad), 0);
    let conflict = crashlab(
        d,
        &[
            "consumer",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
        ],
    );
    assert_eq!(code(&conflict), 65);
    assert_eq!(
        stderr(&conflict).trim(),
        "crashlab: payload conflict: message M1 was applied with amount 25, this delivery has 99"
    );
    let later = crashlab(
        d,
        &[
            "consumer",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
        ],
    );
    assert_eq!(code(&later), 0, "a later consumer finds nothing to do");
    let state = verify(d);
    assert_eq!(state["receiver"]["ledger"], 25);
    assert_eq!(state["queue"]["rejected"], 1);

    // verify --expect: a mismatch exits 1 with a field-by-field diff.
    let expect = crashlab(
        d,
        &[
            "verify",
            "--sender",
            "sender.db",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
            "--json",
            "--expect",
            "after-business",
        ],
    );
    assert_eq!(code(&expect), 1);
    assert!(
        stderr(&expect).contains("queue.deliveries: expected 0, observed 3"),
        "{}",
        stderr(&expect)
    );
}

/// Run the phases in order up to the one that crashes at `point`, in a fresh directory.
fn reach(point: &str, variant: Option<&str>) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let phase = point.split('.').next().unwrap();
    let with_crash = |args: &[&str]| {
        let mut args: Vec<&str> = args.to_vec();
        args.extend(["--crash-at", point]);
        if let Some(v) = variant {
            args.extend(["--variant", v]);
        }
        crashlab(d, &args)
    };
    let sender = [
        "sender",
        "--db",
        "sender.db",
        "--contract",
        "R1",
        "--amount",
        "25",
        "--message",
        "M1",
    ];
    let publisher = ["publisher", "--sender", "sender.db", "--queue", "queue.db"];
    let consumer = [
        "consumer",
        "--queue",
        "queue.db",
        "--receiver",
        "receiver.db",
    ];
    let enqueue = [
        "enqueue",
        "--queue",
        "queue.db",
        "--message",
        "M1",
        "--amount",
        "25",
    ];
    let output = match phase {
        "sender" => crashlab(d, &[&sender[..], &["--crash-at", point]].concat()),
        "enqueue" => crashlab(d, &[&enqueue[..], &["--crash-at", point]].concat()),
        "publisher" => {
            assert_eq!(code(&crashlab(d, &sender)), 0);
            with_crash(&publisher)
        }
        "consumer" => {
            assert_eq!(code(&crashlab(d, &sender)), 0);
            assert_eq!(code(&crashlab(d, &publisher)), 0);
            with_crash(&consumer)
        }
        other => panic!("no phase {other}"),
    };
    (output, dir)
}

#[test]
fn every_crash_point_is_reached() {
    let listed = crashlab(Path::new("."), &["points", "14", "--json"]);
    assert_eq!(code(&listed), 0);
    let value: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    // The points of the SQLite stack, the one these roles run on here.
    let points: Vec<String> = value[0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["stacks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s == "sqlite")
        })
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert!(points.len() >= 8);
    for required in [
        "sender.before-commit",
        "sender.after-commit",
        "publisher.before-queue-commit",
        "publisher.after-queue-commit",
        "publisher.after-mark-sent",
        "consumer.before-receiver-commit",
        "consumer.after-receiver-commit",
        "consumer.after-ack",
    ] {
        assert!(points.iter().any(|p| p == required), "{required} listed");
    }
    for point in &points {
        // The Inbox-only commit exists only where the Inbox commits alone.
        let variant = point.contains("inbox-commit").then_some("split-inbox-tx");
        let (output, _dir) = reach(point, variant);
        assert_eq!(code(&output), 73, "{point}: {}", stderr(&output));
        assert_eq!(
            stdout(&output).lines().last(),
            Some(format!("CRASH {point} exit=73").as_str()),
            "{point}"
        );
    }
}

#[test]
fn a_crash_before_the_commit_loses_the_write_and_after_keeps_it() {
    let (output, dir) = reach("sender.before-commit", None);
    assert_eq!(code(&output), 73);
    assert_eq!(verify(dir.path())["sender"]["contracts"], 0);
    let (output, dir) = reach("sender.after-commit", None);
    assert_eq!(code(&output), 73);
    assert_eq!(verify(dir.path())["sender"]["contracts"], 1);
}

#[test]
fn crash_modes_end_the_process_by_their_own_status() {
    for (mode, signal, line) in [
        ("abort", 6, "signal=SIGABRT"),
        ("kill", 9, "signal=SIGKILL"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let output = crashlab(
            dir.path(),
            &[
                "sender",
                "--db",
                "sender.db",
                "--contract",
                "R1",
                "--amount",
                "25",
                "--message",
                "M1",
                "--crash-at",
                "sender.after-commit",
                "--crash-mode",
                mode,
            ],
        );
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(signal), "{mode}");
        assert!(
            stdout(&output).contains(&format!("CRASH sender.after-commit {line}")),
            "{mode}"
        );
        assert_eq!(
            verify(dir.path())["sender"]["contracts"],
            1,
            "{mode}: the commit survived"
        );
        assert!(!dir.path().join("core").exists());
    }
}

#[test]
fn bad_input_gets_one_line_and_the_documented_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one_line = |output: &std::process::Output, code_expected: i32, needle: &str| {
        let err = stderr(output);
        assert_eq!(code(output), code_expected, "{err}");
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };

    // Missing files: named, exit 2, never created by a role that only reads them.
    let out = crashlab(
        d,
        &["publisher", "--sender", "missing.db", "--queue", "queue.db"],
    );
    one_line(&out, 2, "sender database missing.db does not exist");
    assert!(!d.join("missing.db").exists());
    assert!(
        !d.join("queue.db").exists(),
        "nothing written before the check"
    );
    let out = crashlab(
        d,
        &[
            "verify",
            "--sender",
            "nope.db",
            "--queue",
            "q.db",
            "--receiver",
            "r.db",
            "--json",
        ],
    );
    one_line(&out, 2, "sender database nope.db does not exist");
    assert!(!d.join("nope.db").exists());
    let out = crashlab(
        d,
        &[
            "consumer",
            "--queue",
            "noqueue.db",
            "--receiver",
            "receiver.db",
        ],
    );
    one_line(&out, 2, "queue database noqueue.db does not exist");
    assert!(!d.join("noqueue.db").exists());

    // A file that is not SQLite: refused, left byte for byte as it was.
    let junk =
        b"this is a text file, not a database, and it is long enough to have a header\n".repeat(20);
    fs::write(d.join("junk.db"), &junk).unwrap();
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "junk.db",
            "--contract",
            "R1",
            "--amount",
            "25",
            "--message",
            "M1",
        ],
    );
    one_line(&out, 2, "sender database junk.db is not a SQLite database");
    assert!(
        fs::read(d.join("junk.db")).unwrap() == junk,
        "junk.db unchanged"
    );

    // A SQLite file of another application: a foreign schema, untouched.
    {
        let conn = rusqlite::Connection::open(d.join("foreign.db")).unwrap();
        conn.execute_batch("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'a');")
            .unwrap();
    }
    let before = fs::read(d.join("foreign.db")).unwrap();
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "foreign.db",
            "--contract",
            "R1",
            "--amount",
            "25",
            "--message",
            "M1",
        ],
    );
    one_line(&out, 2, "foreign schema");
    assert!(stderr(&out).contains("customers"));
    assert!(
        fs::read(d.join("foreign.db")).unwrap() == before,
        "foreign.db unchanged"
    );

    // A crashlab file of the wrong kind: a sender file given as a queue.
    let ok = crashlab(
        d,
        &[
            "sender",
            "--db",
            "sender.db",
            "--contract",
            "R1",
            "--amount",
            "25",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&ok), 0);
    let out = crashlab(
        d,
        &["publisher", "--sender", "sender.db", "--queue", "sender.db"],
    );
    one_line(&out, 2, "queue database sender.db has a foreign schema");

    // Crash points: unknown (lists the known), of another phase, malformed @N.
    let sender = [
        "sender",
        "--db",
        "s2.db",
        "--contract",
        "R2",
        "--amount",
        "5",
        "--message",
        "M2",
    ];
    let out = crashlab(
        d,
        &[&sender[..], &["--crash-at", "sender.after-comit"]].concat(),
    );
    one_line(&out, 2, "unknown crash point 'sender.after-comit'");
    assert!(
        stderr(&out).contains("sender.after-commit"),
        "lists the known points"
    );
    assert!(
        !d.join("s2.db").exists(),
        "a typo never runs without its crash"
    );
    let out = crashlab(
        d,
        &[&sender[..], &["--crash-at", "consumer.after-ack"]].concat(),
    );
    one_line(
        &out,
        2,
        "unknown crash point 'consumer.after-ack' for phase sender",
    );
    for bad in [
        "sender.after-commit@x",
        "sender.after-commit@0",
        "sender.after-commit@-1",
        "sender.after-commit@99999999999",
    ] {
        let out = crashlab(d, &[&sender[..], &["--crash-at", bad]].concat());
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
        assert!(stderr(&out).lines().count() == 1, "{bad}: one line");
    }
    assert!(!d.join("s2.db").exists());

    // Amounts and ids.
    for amount in ["0", "-5", "99999999999999999999", "2.5", "1000000001"] {
        let out = crashlab(
            d,
            &[
                "sender",
                "--db",
                "s3.db",
                "--contract",
                "R3",
                "--amount",
                amount,
                "--message",
                "M3",
            ],
        );
        assert_eq!(code(&out), 2, "amount {amount}");
        assert!(
            stderr(&out).contains(amount) || stderr(&out).contains("amount"),
            "{}",
            stderr(&out)
        );
    }
    let long = "X".repeat(65);
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "s3.db",
            "--contract",
            &long,
            "--amount",
            "5",
            "--message",
            "M3",
        ],
    );
    one_line(&out, 2, "must have 1 to 64 characters");
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "s3.db",
            "--contract",
            "R 3",
            "--amount",
            "5",
            "--message",
            "M3",
        ],
    );
    one_line(&out, 2, "allowed are letters");
    assert!(!d.join("s3.db").exists(), "no file for refused input");

    // The same contract twice: refused, the first one intact.
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "sender.db",
            "--contract",
            "R1",
            "--amount",
            "30",
            "--message",
            "M9",
        ],
    );
    one_line(&out, 2, "already exists");
    let state = verify(d);
    assert_eq!(state["sender"]["contracts"], 1);

    // A variant on a phase it does not change.
    let out = crashlab(
        d,
        &[
            "publisher",
            "--sender",
            "sender.db",
            "--queue",
            "queue.db",
            "--variant",
            "memory-inbox",
        ],
    );
    one_line(&out, 2, "variant memory-inbox changes the consumer");

    // Unknown lab, unknown stage.
    one_line(
        &crashlab(d, &["driver", "15", "--out", "x"]),
        2,
        "unknown lab '15'",
    );
    assert!(!d.join("x").exists());
    let out = crashlab(
        d,
        &[
            "verify",
            "--sender",
            "sender.db",
            "--queue",
            "queue.db",
            "--receiver",
            "receiver.db",
            "--expect",
            "nope",
        ],
    );
    one_line(&out, 2, "unknown stage 'nope'");
}

/// The roles are the same on both stacks; each refuses, in one line and before it touches a
/// store, what its stack lacks: a design, a crash point, a flag of the SQL queue.
#[test]
fn a_role_refuses_what_its_stack_lacks_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let servers = ["--stack", "postgres-rabbitmq"];
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["consumer", "--queue", "q.db", "--receiver", "r.db", "--variant", "auto-ack"],
            "variant auto-ack is not a design of lab 14 on stack sqlite",
        ),
        (
            [&["publisher"][..], &servers, &["--sender", "s", "--queue", "m", "--variant", "mark-before-send"]].concat(),
            "variant mark-before-send is not a design of lab 14 on stack postgres-rabbitmq",
        ),
        (
            [&["publisher"][..], &servers, &["--sender", "s", "--queue", "m", "--batch", "2"]].concat(),
            "--batch shapes the SQL queue of stack sqlite",
        ),
        (
            [&["consumer"][..], &servers, &["--queue", "m", "--receiver", "r", "--consumer-id", "c2"]].concat(),
            "--consumer-id shapes the SQL queue of stack sqlite",
        ),
        (
            [&["consumer"][..], &servers, &["--queue", "m", "--receiver", "r", "--crash-at", "consumer.after-claim-commit"]].concat(),
            "unknown crash point 'consumer.after-claim-commit' for phase consumer; known: consumer.after-deliver",
        ),
    ];
    for (args, needle) in cases {
        let out = crashlab(d, &args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    assert!(files(d).is_empty(), "nothing written: {:?}", files(d));
}

#[test]
fn moving_a_crash_before_the_commit_breaks_the_expectations_that_follow() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(
        dir.path(),
        "study",
        &["--move-crash", "business-crash=sender.before-commit"],
    );
    let text = stdout(&output);
    assert_eq!(code(&output), 1, "{text}");
    assert!(text.contains("FAIL:"), "{text}");
    let results = json(&out.join("results.json"));
    let step = |name: &str| {
        results["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == name)
            .unwrap()
            .clone()
    };
    // The moved crash itself happened where it was moved to.
    assert_eq!(step("business-crash")["ok"], true);
    let business = fs::read_to_string(out.join("business-crash.stdout.txt")).unwrap();
    assert!(business.contains("CRASH sender.before-commit exit=73"));
    // Nothing was committed, so the readback after it no longer holds.
    let after = step("after-business");
    assert_eq!(after["ok"], false);
    let problems = after["problems"].to_string();
    assert!(
        problems.contains("sender.contracts: expected 1, observed 0"),
        "{problems}"
    );
    assert!(
        problems.contains("sender.outbox_pending: expected 1, observed 0"),
        "{problems}"
    );
    // The publisher then finds no sender file content to send, and so on down the table.
    assert_eq!(step("final-verify")["ok"], false);
    let processes = json(&out.join("processes.json"));
    assert_eq!(
        processes["moved_crashes"][0],
        "business-crash=sender.before-commit"
    );

    // A bad move is a usage error before anything runs.
    let (output, out) = driver(
        dir.path(),
        "bad",
        &["--move-crash", "after-business=sender.after-commit"],
    );
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("runs verify, which has no crash points"));
    assert!(!out.exists());
    let (output, _) = driver(
        dir.path(),
        "bad2",
        &["--move-crash", "business-crash=publisher.after-mark-sent"],
    );
    assert_eq!(code(&output), 2);
    let (output, _) = driver(
        dir.path(),
        "bad3",
        &["--move-crash", "no-such-step=sender.after-commit"],
    );
    assert_eq!(code(&output), 2);
}

#[test]
fn a_hung_child_is_killed_after_its_bound_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(
        dir.path(),
        "hung",
        &["--crash-mode", "hang", "--step-timeout-ms", "300"],
    );
    assert_eq!(code(&output), 1, "{}", stdout(&output));
    let processes = json(&out.join("processes.json"));
    let first = &processes["processes"][0];
    assert_eq!(first["step"], "business-crash");
    assert_eq!(first["timed_out"], true);
    assert_eq!(first["signal"], 9);
    assert_eq!(first["exit"], 137);
    let results = json(&out.join("results.json"));
    assert!(results["steps"][0]["problems"]
        .to_string()
        .contains("killed by the driver after its timeout"));
}

/// A SIGKILLed driver leaves no process, and nothing for good: its work directory is removed
/// by the next run, in one line with its bytes, and its `hung.partial` is refused by name
/// with the command that removes it (or as a live run's, 75, while its lock is held).
#[test]
fn no_child_outlives_a_driver_that_is_killed_and_the_next_run_sweeps_what_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let mark = format!("driver-killed-{}", std::process::id());
    let mut driver = std::process::Command::new(BIN)
        .args([
            "driver",
            "14",
            "--crash-mode",
            "hang",
            "--step-timeout-ms",
            "60000",
            "--out",
            "hung",
        ])
        .current_dir(dir.path())
        .env("CRASHLAB_TEST_MARK", &mark)
        // A SIGKILL'd driver cannot remove its work directory: keep it inside this test's.
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until the first step hangs at its crash point.
    let stdout = dir
        .path()
        .join("hung.partial")
        .join("business-crash.stdout.txt");
    let mut hung = false;
    for _ in 0..500 {
        if fs::read_to_string(&stdout).is_ok_and(|t| t.contains("CRASH sender.after-commit hang")) {
            hung = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(hung, "the first step reached its hang");
    assert!(
        !marked_processes(&mark).is_empty(),
        "driver and hung child are alive"
    );
    driver.kill().unwrap();
    driver.wait().unwrap();
    // The hung sender dies with its parent (PR_SET_PDEATHSIG), within a bound.
    let mut alive = marked_processes(&mark);
    for _ in 0..200 {
        if alive.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        alive = marked_processes(&mark);
    }
    assert!(alive.is_empty(), "processes outlived the driver: {alive:?}");

    let listed = || -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let left = listed();
    assert!(
        left.len() == 1 && left[0].starts_with(&format!("crashlab-work-{}-", driver.id())),
        "{left:?}"
    );
    let driver_again = |out: &str| {
        std::process::Command::new(BIN)
            .args(["driver", "14", "--out", out])
            .current_dir(dir.path())
            .env("TMPDIR", &tmp)
            .output()
            .unwrap()
    };
    let out = driver_again("next");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let swept: Vec<&str> = err.lines().filter(|l| l.starts_with("sweep: ")).collect();
    assert_eq!(swept.len(), 1, "{err}");
    // (Other runs' leftovers in /dev/shm, which every run sweeps too, may be named beside it.)
    assert!(
        swept[0].starts_with("sweep: removed ")
            && swept[0].contains(" left by crashlab runs that are gone, ")
            && swept[0].contains(&left[0]),
        "{err}"
    );
    assert!(listed().is_empty(), "{:?}", listed());

    let out = driver_again("hung");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "crashlab: hung.partial was left by a crashlab run that is gone; remove it: rm -rf 'hung.partial'"
    );
    // A live owner: this test holds the lock a run holds while it writes.
    let partial = fs::File::open(dir.path().join("hung.partial")).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(partial.as_raw_fd(), libc::LOCK_EX) },
        0
    );
    let out = driver_again("hung");
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("hung.partial is being written by a crashlab run still going"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_refused_wal_file_and_a_corrupt_file_are_left_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    {
        // A foreign WAL database whose last commit is still in its -wal.
        let conn = rusqlite::Connection::open(d.join("f.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        fs::copy(d.join("f.db"), d.join("f.copy")).unwrap();
        fs::copy(d.join("f.db-wal"), d.join("f.copy-wal")).unwrap();
        std::mem::forget(conn); // no close: no checkpoint
    }
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "f.db",
            "--contract",
            "R1",
            "--amount",
            "5",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        fs::read(d.join("f.db")).unwrap() == fs::read(d.join("f.copy")).unwrap(),
        "f.db unchanged"
    );
    assert!(
        fs::read(d.join("f.db-wal")).unwrap() == fs::read(d.join("f.copy-wal")).unwrap(),
        "f.db-wal unchanged"
    );

    let ok = crashlab(
        d,
        &[
            "sender",
            "--db",
            "s.db",
            "--contract",
            "R1",
            "--amount",
            "5",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&ok), 0);
    let bytes = fs::read(d.join("s.db")).unwrap();
    fs::write(d.join("cut.db"), &bytes[..bytes.len() / 2]).unwrap();
    for args in [
        vec![
            "sender",
            "--db",
            "cut.db",
            "--contract",
            "R2",
            "--amount",
            "5",
            "--message",
            "M2",
        ],
        vec![
            "verify",
            "--sender",
            "cut.db",
            "--queue",
            "q.db",
            "--receiver",
            "r.db",
            "--json",
        ],
    ] {
        let out = crashlab(d, &args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert!(err.contains("cut.db is corrupt"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(
        fs::read(d.join("cut.db")).unwrap() == bytes[..bytes.len() / 2],
        "cut.db unchanged"
    );
}
