//! `crashlab chaos 14 --stack postgres-rabbitmq` as a user runs it: private PostgreSQL and
//! RabbitMQ servers, a sender, a publisher and consumers killed at seeded moments, the
//! RabbitMQ node SIGKILLed and restarted mid-run; nothing lost, nothing applied twice, the
//! evidence audits PASS and its kept rows agree with `sqlite3`; no server outlives the run.
//! Bad input is one line, exit 2, and starts no server.
//!
//! One chaos run starts servers (one PostgreSQL, one RabbitMQ node, one restart of it); each
//! run is bounded by its own --timeout-ms.

mod common;
// Shared with tests/stack_driver.rs, which uses all of it.
#[allow(dead_code)]
#[path = "stack_driver/place.rs"]
mod place;
#[path = "tamper/support.rs"]
mod support;

use std::process::Command;

use common::{code, json, stderr, stdout};
use place::Place;

const STACK: &[&str] = &["--stack", "postgres-rabbitmq"];
const MESSAGES: i64 = 40;

fn sqlite3(db: &std::path::Path, sql: &str) -> i64 {
    let out = Command::new("sqlite3")
        .arg("-bail")
        .arg(db)
        .arg(sql)
        .output()
        .expect("sqlite3 runs");
    assert!(out.status.success(), "sqlite3: {}", stderr(&out));
    stdout(&out).trim().parse().expect("one integer")
}

#[test]
fn consumer_kills_and_a_broker_restart_lose_nothing_double_nothing_and_audit_pass() {
    let place = Place::new("chaos");
    let messages = MESSAGES.to_string();
    let mut args = vec![
        "chaos",
        "14",
        "--messages",
        &messages,
        "--consumers",
        "3",
        "--kills",
        "4",
        "--seed",
        "3",
        "--server-kills",
        "1",
        "--server",
        "rabbitmq",
        "--timeout-ms",
        "180000",
        "--process-timeout-ms",
        "60000",
        "--json",
        "--out",
        "c",
    ];
    args.extend_from_slice(STACK);
    let out = place.run(&args);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let r: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        (r["lost"].as_i64(), r["duplicated"].as_i64()),
        (Some(0), Some(0))
    );
    assert_eq!(r["check"]["inbox"].as_i64(), Some(MESSAGES));
    assert_eq!(r["check"]["queue_pending"].as_i64(), Some(0));
    assert!(r["kills_done"].as_u64().unwrap() >= 1, "{r}");
    // The broker was killed once and came back; the roles it took down were started again.
    let kills = r["server_kills"].as_array().expect("server_kills");
    assert_eq!(kills.len(), 1, "{r}");
    assert_eq!(kills[0]["server"], "rabbitmq");
    assert!(kills[0]["restart_wall_ms"].as_f64().unwrap() > 0.0);
    let dir = place.path().join("c");
    let processes = json(&dir.join("processes.json"));
    let by_server: Vec<&serde_json::Value> = processes["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["crash_mode"] == "server-kill")
        .collect();
    assert_eq!(
        by_server.len() as u64,
        r["server_exits"].as_u64().unwrap_or(0)
    );
    assert!(by_server
        .iter()
        .all(|p| p["exit"] == 69 && p["expected_exit"] == 69));
    let servers = json(&dir.join("servers.json"));
    assert_eq!(servers["kills"].as_array().unwrap().len(), 1);
    assert_eq!(
        servers["kills"][0]["point"],
        format!("chaos@{}", kills[0]["at_units"])
    );
    // The kept rows, read by another client: every message applied once, the ledger whole.
    let receiver = dir.join("db/receiver");
    assert_eq!(sqlite3(&receiver, "SELECT count(*) FROM inbox"), MESSAGES);
    assert_eq!(
        sqlite3(&receiver, "SELECT count(*) FROM ledger WHERE credits <> 1"),
        0
    );
    assert_eq!(
        sqlite3(&receiver, "SELECT sum(balance) FROM ledger"),
        r["check"]["ledger_expected"].as_i64().unwrap()
    );
    assert_eq!(
        sqlite3(&dir.join("db/messages"), "SELECT count(*) FROM messages"),
        0
    );
    assert!(
        !dir.join("db/stack.json").exists(),
        "where the servers were is no evidence"
    );
    let audit = place.run(&["audit", "c"]);
    assert_eq!(code(&audit), 0, "{}\n{}", stdout(&audit), stderr(&audit));
    assert!(
        stdout(&audit).contains("PASS: chaos 14"),
        "{}",
        stdout(&audit)
    );
    let left = place.settle();
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn bad_input_is_one_line_exit_2_and_starts_no_server() {
    let place = Place::new("chaosbad");
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--stack",
                "postgres-rabbitmq",
                "--server-kills",
                "1",
                "--server",
                "rabbitmq",
                "--amqp-url",
                "amqp://guest:guest@127.0.0.1:1/%2f",
            ],
            "--server-kills 1 --server rabbitmq: that server is yours (--amqp-url); crashlab kills only servers it started",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--server-kills", "2"],
            "--server-kills 2: name the server to kill with --server postgres|rabbitmq",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--server", "rabbitmq"],
            "chaos --server rabbitmq: give --server-kills N",
        ),
        (
            &["--server-kills", "1", "--server", "postgres"],
            "--server-kills 1: lab 14 on stack sqlite has no servers (give --stack postgres-rabbitmq)",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--server-kills", "21", "--server", "rabbitmq"],
            "--server-kills 21 is out of range (0 to 20)",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--variant", "fast"],
            "--variant fast: lab 14 on stack postgres-rabbitmq has correct, async-commit, no-confirm, auto-ack, transient",
        ),
        (
            &["--variant", "auto-ack"],
            "--variant auto-ack: lab 14 on stack sqlite runs its own design only under chaos",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--crash-mode", "power-loss"],
            "--crash-mode power-loss: lab 14 on stack postgres-rabbitmq refuses it (its state is in servers",
        ),
    ];
    for (more, want) in cases {
        let mut args = vec!["chaos", "14", "--messages", "5", "--out", "bad"];
        args.extend_from_slice(more);
        let out = place.run(&args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{more:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{more:?}: {err}");
        assert!(err.starts_with("crashlab: "), "{err}");
        assert!(err.contains(want), "{more:?}: {err}");
        assert!(stdout(&out).is_empty());
        assert!(!place.path().join("bad").exists() && !place.path().join("bad.partial").exists());
    }
    let left = place.settle();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A known-broken design under a broker kill: the run records what it lost (exit 1), and its
/// untouched evidence audits PASS, saying so; a chaos.json whose lost count is not the kept
/// rows' fails the audit. The audit judges the evidence, not the design.
#[test]
fn a_variant_run_that_loses_audits_pass_and_a_doctored_lost_count_fails() {
    let place = Place::new("chaosvar");
    let mut args = vec![
        "chaos",
        "14",
        "--messages",
        "20",
        "--consumers",
        "2",
        "--kills",
        "0",
        "--seed",
        "2",
        "--server-kills",
        "1",
        "--server",
        "rabbitmq",
        "--variant",
        "transient",
        "--timeout-ms",
        "180000",
        "--json",
        "--out",
        "v",
    ];
    args.extend_from_slice(STACK);
    let out = place.run(&args);
    let last = stdout(&out).trim().lines().last().unwrap_or("").to_string();
    let r: serde_json::Value = serde_json::from_str(&last).expect("one JSON report");
    let lost = r["lost"].as_i64().expect("lost");
    // A transient queue loses what the broker held at its kill; how much is timing's.
    assert_eq!(code(&out), if r["ok"] == true { 0 } else { 1 }, "{r}");
    assert_eq!(r["ok"], lost == 0 && r["problems"] == serde_json::json!([]));
    let audit = place.run(&["audit", "v"]);
    let said = stdout(&audit);
    assert_eq!(code(&audit), 0, "{said}\n{}", stderr(&audit));
    let recorded = if lost > 0 { "the run recorded " } else { "" };
    assert!(
        said.contains("PASS: chaos 14, 20 messages")
            && said.contains(&format!(", {recorded}{lost} lost, ")),
        "{said}"
    );
    // The lost count changed, the manifest re-hashed to agree: the kept rows give it away.
    let copy = place.path().join("v-doctored");
    support::copy_dir(&place.path().join("v"), &copy);
    let chaos = copy.join("chaos.json");
    let mut doctored = json(&chaos);
    doctored["lost"] = serde_json::json!(if lost > 0 { 0 } else { 1 });
    std::fs::write(&chaos, serde_json::to_string_pretty(&doctored).unwrap()).unwrap();
    support::rehash(&copy);
    let (code_doctored, report) = support::audit(&copy);
    assert_eq!(code_doctored, 1, "{report}");
    assert!(
        report.contains(&format!(
            "chaos.json: lost is {}, the kept databases and events give {lost}",
            doctored["lost"]
        )),
        "{report}"
    );
    let left = place.settle();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A server that cannot be reached ends the run before any process ran: exit 69, one line,
/// and nothing left behind (no `DIR`, no `DIR.partial`, nothing in TMPDIR), so the same
/// command runs again as the first did. A closed stdout leaves no work directory either.
#[test]
fn an_unreachable_server_leaves_no_partial_output_and_a_closed_stdout_no_work_directory() {
    let place = Place::new("chaosgone");
    let pg = "postgres://x@127.0.0.1:1/x";
    let amqp = "amqp://guest:guest@127.0.0.1:1/%2f";
    let cases: &[(&[&str], &str)] = &[(
        &["--pg-url", pg, "--amqp-url", amqp],
        "cannot reach PostgreSQL",
    )];
    let tmp = place.path().join("tmp");
    for (more, want) in cases {
        // Twice: a first run that left its DIR.partial would make the second exit 2.
        for _ in 0..2 {
            let mut args = vec!["chaos", "14", "--messages", "5", "--out", "gone"];
            args.extend_from_slice(STACK);
            args.extend_from_slice(more);
            let out = place.run(&args);
            let err = stderr(&out);
            assert_eq!(code(&out), 69, "{more:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{more:?}: {err}");
            assert!(err.contains(want), "{more:?}: {err}");
            for left in ["gone", "gone.partial"] {
                assert!(!place.path().join(left).exists(), "{more:?}: {left} left");
            }
            let kept: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
            assert!(kept.is_empty(), "{more:?}: left in TMPDIR: {kept:?}");
        }
    }
    // The report cannot be printed (its reader is gone): the evidence is kept, the work
    // directory goes all the same.
    let mut child = place
        .command(&[
            "chaos",
            "14",
            "--messages",
            "10",
            "--kills",
            "1",
            "--out",
            "closed",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the crashlab binary runs");
    drop(child.stdout.take());
    let status = child.wait().expect("the run ends");
    assert!(!status.success(), "a closed stdout is a failed write");
    assert!(place.path().join("closed/chaos.json").is_file());
    let kept: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(kept.is_empty(), "left in TMPDIR: {kept:?}");
    let left = place.settle();
    assert!(left.is_empty(), "left running: {left:?}");
}
