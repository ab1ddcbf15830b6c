//! Lab 14 on the server stack (`--stack postgres-rabbitmq`) as a user runs it: the driver
//! starts private PostgreSQL and RabbitMQ servers, runs the seed, records `servers.json`,
//! and its evidence audits PASS; a kept dump loads in `sqlite3` and in `psql` and agrees with
//! the readback; no server outlives the run, also when the driver is SIGKILLed; bad input
//! is one line with its exit code and starts nothing.
//!
//! Each test runs the binary with TMPDIR inside its own directory (where the servers' private
//! directories go) and a mark in its environment, so what it started is found by that alone.

mod common;
#[path = "stack_driver/place.rs"]
mod place;
#[path = "stack_driver/tamper.rs"]
mod tamper;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{code, stderr, stdout};
use place::Place;

const STACK: &[&str] = &["--stack", "postgres-rabbitmq"];
/// A URL nothing listens on (port 1 of loopback).
const PG_NOWHERE: &str = "postgres://crashlab@127.0.0.1:1/crashlab_none";
const AMQP_NOWHERE: &str = "amqp://guest:guest@127.0.0.1:1/%2f";

fn audit(place: &Place, out: &str) -> Output {
    place.run(&["audit", out])
}

/// The last readback JSON line of a step's stdout.
fn readback(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("{} has no readback", path.display()));
    serde_json::from_str(line).unwrap()
}

/// What a readback says, asked of a loaded copy by `query` (one integer per statement).
const CHECKS: &[(&str, &str, &str)] = &[
    ("sender", "contracts", "SELECT count(*) FROM contracts"),
    (
        "sender",
        "outbox_sent",
        "SELECT count(*) FROM outbox WHERE status = 'sent'",
    ),
    ("receiver", "inbox", "SELECT count(*) FROM inbox"),
    (
        "receiver",
        "ledger",
        "SELECT coalesce(sum(balance), 0) FROM ledger",
    ),
    (
        "receiver",
        "rejected",
        "SELECT count(*) FROM receipts WHERE outcome = 'rejected'",
    ),
];

fn sqlite3(db: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3")
        .arg("-bail")
        .arg(db)
        .arg(sql)
        .output()
        .expect("sqlite3 runs");
    assert!(out.status.success(), "sqlite3: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

fn psql(url: &str, args: &[&str]) -> String {
    let out = Command::new("psql")
        .arg(url)
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "psql {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

#[test]
fn the_seed_on_the_stack_audits_pass_and_its_dumps_load_in_sqlite3_and_psql() {
    let place = Place::new("seed");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--keep-db",
        "--out",
        "ev",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let ev = place.path().join("ev");
    let audited = audit(&place, "ev");
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));
    assert!(stdout(&audited).contains("PASS"), "{}", stdout(&audited));
    // A dump of this run with an ATTACH put in: FAIL, and nothing attached.
    tamper::attach_refused(&place, &ev, "ev-attach");

    // servers.json: the stack, both servers' startups, no path of this machine.
    let text = std::fs::read_to_string(ev.join("servers.json")).unwrap();
    assert!(!text.contains(&*place.path().to_string_lossy()), "{text}");
    let servers: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(servers["stack"], "postgres-rabbitmq");
    let names: Vec<&str> = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(s["start_wall_ms"].is_u64(), "{s}");
            assert_eq!(s["private"], true);
            s["server"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, ["postgres", "rabbitmq"]);

    // The kept dumps, loaded by sqlite3 and by psql, agree with the last readback.
    let last = readback(&ev.join("after-conflict.stdout.txt"));
    let work = place.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut pg = place
        .command(&[
            "servers",
            "--databases",
            "sender,receiver",
            "--work",
            "work",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // It says each server's startup, then `ready` once stack.json is written.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(pg.stdout.take().unwrap()));
    let ready = lines.by_ref().take(10).find_map(|l| {
        let l = l.unwrap();
        l.starts_with("ready ").then_some(l)
    });
    assert!(ready.is_some(), "crashlab servers never said ready");
    let stack = common::json(&work.join("stack.json"));
    for db in ["sender", "receiver"] {
        let dump = ev.join("db").join(db);
        let copy = place.path().join(format!("{db}.sqlite"));
        sqlite3(&copy, &format!(".read {}", dump.display()));
        let url = stack["postgres"][db].as_str().unwrap();
        psql(url, &["-f", &dump.to_string_lossy()]);
        for (of, key, sql) in CHECKS.iter().filter(|(of, _, _)| *of == db) {
            let want = last[of][key].to_string();
            assert_eq!(sqlite3(&copy, sql), want, "sqlite3 {db}: {sql}");
            assert_eq!(psql(url, &["-c", sql]), want, "psql {db}: {sql}");
        }
    }
    drop(pg.stdin.take());
    assert!(pg.wait().unwrap().success());
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}

#[test]
fn a_server_kill_at_every_point_recovers_and_audits_pass() {
    let place = Place::new("kill");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--crash-mode",
        "server-kill",
        "--server",
        "postgres",
        "--out",
        "ev",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let audited = audit(&place, "ev");
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));
    let servers = common::json(&place.path().join("ev").join("servers.json"));
    let kills = servers["kills"].as_array().unwrap();
    let crashes = common::json(&place.path().join("ev").join("processes.json"))["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["crash_point"].is_string() && p["exit"] == 137)
        .count();
    // One kill per crashed step, each of PostgreSQL, and its restarts counted.
    assert!(crashes > 0);
    assert_eq!(kills.len(), crashes, "{servers}");
    assert!(kills.iter().all(|k| k["server"] == "postgres"));
    assert_eq!(
        servers["servers"][0]["restart_wall_ms"]
            .as_array()
            .unwrap()
            .len(),
        crashes
    );
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}

/// The seed under broker kills: the run settles its queue first (restarts beyond the kills,
/// which the audit accepts), and the one field that differs from the seed's story is the
/// broker's: every message it recovers after a restart comes flagged redelivered.
#[test]
fn a_broker_kill_run_audits_its_settling_restarts_and_shows_the_broker_redelivered_flag() {
    let place = Place::new("bkill");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--crash-mode",
        "server-kill",
        "--server",
        "rabbitmq",
        "--out",
        "ev",
    ]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{text}{}", stderr(&out));
    let differs: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains("expected"))
        .collect();
    assert_eq!(
        differs,
        [
            "  final-verify: exit 1, expected 0",
            "  final-verify: receiver.redelivered: expected 1, observed 2"
        ],
        "{text}"
    );
    let servers = common::json(&place.path().join("ev").join("servers.json"));
    assert_eq!(servers["queues_settled"], true, "{servers}");
    let audited = audit(&place, "ev");
    let said = stdout(&audited);
    assert_eq!(code(&audited), 1, "{said}");
    assert!(
        !said.lines().any(|l| l.starts_with("servers.json:")),
        "{said}"
    );
    assert!(said.contains("FAIL: 2 problems"), "{said}");
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}

#[test]
fn a_driver_killed_mid_run_leaves_no_server() {
    let place = Place::new("sigkill");
    let mut args = vec!["driver", "14"];
    args.extend_from_slice(STACK);
    args.extend_from_slice(&["--out", "ev"]);
    let mut child = place
        .command(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first step's output: the servers are up and the steps run.
    let first = place
        .path()
        .join("ev.partial")
        .join("business-crash.stdout.txt");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !first.exists() {
        assert!(
            Instant::now() < deadline,
            "the run never reached its first step"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !place.leftovers().is_empty(),
        "the servers run under the driver"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived a SIGKILLed driver"
    );
}

fn out_absent(place: &Place) {
    for name in ["ev", "ev.partial"] {
        assert!(!place.path().join(name).exists(), "{name} was left");
    }
}

#[test]
fn bad_input_on_the_stack_is_one_line_and_starts_nothing() {
    let place = Place::new("bad");
    let usage: &[(&[&str], &str)] = &[
        (&["--stack", "nosuch"], "has no stack 'nosuch'"),
        (
            &[
                "--stack",
                "postgres-rabbitmq",
                "--crash-mode",
                "server-kill",
                "--server",
                "postgres",
                "--pg-url",
                PG_NOWHERE,
            ],
            "crashlab kills only servers it started",
        ),
        (
            &[
                "--stack",
                "postgres-rabbitmq",
                "--crash-mode",
                "server-kill",
            ],
            "needs --server",
        ),
        (
            &["--stack", "postgres-rabbitmq", "--server", "postgres"],
            "--server is for --crash-mode server-kill only",
        ),
        (&["--pg-url", PG_NOWHERE], "uses no PostgreSQL"),
        (
            &["--crash-mode", "server-kill", "--server", "postgres"],
            "lab 14 on stack sqlite refuses it (it runs on SQLite files, with no server to kill)",
        ),
    ];
    for (more, says) in usage {
        let mut args = vec!["driver", "14", "--out", "ev"];
        args.extend_from_slice(more);
        let out = place.run(&args);
        assert_eq!(code(&out), 2, "{more:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("crashlab: ") && err.contains(says),
            "{more:?}: {err}"
        );
        out_absent(&place);
    }
    // Servers missing or out of reach: 69, with the install command when missing.
    let missing = place.run_env(
        &[
            "driver",
            "14",
            "--stack",
            "postgres-rabbitmq",
            "--out",
            "ev",
        ],
        ("CRASHLAB_PG_BIN", "/nonexistent/postgresql/bin"),
    );
    assert_eq!(code(&missing), 69, "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("apt-get install"),
        "{}",
        stderr(&missing)
    );
    out_absent(&place);
    let unreachable = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--pg-url",
        PG_NOWHERE,
        "--amqp-url",
        AMQP_NOWHERE,
        "--out",
        "ev",
    ]);
    assert_eq!(code(&unreachable), 69, "{}", stderr(&unreachable));
    out_absent(&place);
    assert_eq!(place.settle(), Vec::<String>::new());
}
