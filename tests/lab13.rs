//! Lab 13 end to end: the built binary as real processes, real HTTP on 127.0.0.1, real
//! SQLite files. No timing assertions: every wait is bounded and only its outcome counts.

mod common;
use common::{crashlab, marked_processes, stderr, stdout};

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_crashlab");

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited, not signalled")
}

/// A receiver started by the test, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
}

impl Receiver {
    fn start(dir: &Path, more: &[&str]) -> Receiver {
        let port_file = dir.join("receiver.port");
        let _ = fs::remove_file(&port_file);
        let log = fs::File::create(dir.join("receiver.stdout.txt")).unwrap();
        let child = Command::new(EXE)
            .args([
                "receiver",
                "--db",
                "receiver.db",
                "--port-file",
                "receiver.port",
            ])
            .args(more)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("the receiver starts");
        let mut receiver = Receiver { child, port: 0 };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let ready = fs::read_to_string(dir.join("receiver.stdout.txt")).unwrap_or_default();
            if let Some(line) = ready.lines().find(|l| l.starts_with("READY ")) {
                receiver.port = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                let file = fs::read_to_string(&port_file).unwrap();
                assert_eq!(file.trim().parse::<u16>().unwrap(), receiver.port);
                return receiver;
            }
            assert!(
                receiver.child.try_wait().unwrap().is_none(),
                "the receiver ended before READY"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no READY line within 20 s");
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 exchange over a plain TcpStream: (status, headers, body).
fn raw(port: u16, request: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("reads the reply");
    let text = String::from_utf8(bytes).expect("a UTF-8 reply");
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().unwrap();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    (status, headers, body.to_string())
}

fn post(port: u16, key: Option<&str>, body: &str) -> (u16, Vec<(String, String)>, String) {
    let key_line = key.map_or(String::new(), |k| format!("Idempotency-Key: {k}\r\n"));
    raw(
        port,
        &format!(
            "POST /effect HTTP/1.1\r\nHost: 127.0.0.1\r\n{key_line}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn readback(dir: &Path) -> Value {
    let out = crashlab(
        dir,
        &[
            "dispatch-verify",
            "--intents",
            "intents.db",
            "--receipts",
            "receipts.db",
            "--history",
            "history.db",
            "--receiver",
            "receiver.db",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    serde_json::from_str(text.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap()
}

fn counts(state: &Value) -> (i64, i64, i64) {
    (
        state["receiver"]["effects"].as_i64().unwrap(),
        state["receipts"]["receipts"].as_i64().unwrap(),
        state["history"]["history"].as_i64().unwrap(),
    )
}

const DISPATCHER: &[&str] = &[
    "dispatcher",
    "--intents",
    "intents.db",
    "--receipts",
    "receipts.db",
    "--history",
    "history.db",
    "--port-file",
    "receiver.port",
];

fn intent(dir: &Path, key: &str, body: &str) {
    let out = crashlab(
        dir,
        &[
            "intent",
            "--intents",
            "intents.db",
            "--key",
            key,
            "--body",
            body,
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The driver runs every scenario of the issue's table; each ends with its counts, and no
/// process it started is alive afterwards.
#[test]
fn every_scenario_ends_with_its_counts_and_no_process_outlives_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("run");
    let mark = format!("lab13-{}-{}", std::process::id(), line!());
    let out = Command::new(EXE)
        .args(["driver", "13", "--out"])
        .arg(&out_dir)
        .env("CRASHLAB_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("PASS: "), "{}", stdout(&out));
    // (effects, receipts, history) as the issue's table gives them.
    let table: &[(&str, (i64, i64, i64))] = &[
        ("keyed-dispatcher-crash", (1, 1, 1)),
        ("unkeyed-dispatcher-crash", (2, 1, 1)),
        ("keyed-receiver-restart", (1, 1, 1)),
        ("receiver-unavailable", (1, 1, 1)),
        ("key-conflict", (1, 0, 0)),
        ("keyed-receiver-crash", (1, 1, 1)),
        ("unkeyed-receiver-crash", (2, 1, 1)),
        ("two-dispatchers", (1, 1, 1)),
        ("key-expired", (2, 1, 1)),
        ("bad-requests", (0, 0, 0)),
        ("unkeyed-unknown-hold", (1, 0, 0)),
    ];
    for (scenario, expected) in table {
        let text = fs::read_to_string(out_dir.join(scenario).join("final.stdout.txt"))
            .unwrap_or_else(|_| panic!("{scenario} has a final readback"));
        let state: Value =
            serde_json::from_str(text.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
        assert_eq!(counts(&state), *expected, "{scenario}");
        if *scenario == "unkeyed-unknown-hold" {
            assert_eq!(state["intents"]["unknown"], 1);
        }
    }
    // One processes.json, database-files.json and results.json for the whole run.
    let processes: Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("processes.json")).unwrap()).unwrap();
    assert_eq!(processes["lab"], "13-http-dispatch");
    let records = processes["processes"].as_array().unwrap();
    for (scenario, _) in table {
        assert!(records.iter().any(|p| p["scenario"] == *scenario));
    }
    for p in records {
        assert_eq!(p["exit"], p["expected_exit"], "{p}");
        assert_eq!(p["argv"][0], "crashlab");
        assert_eq!(p["timed_out"], false, "{p}");
    }
    let results: Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["ok"], true);
    assert!(out_dir.join("database-files.json").is_file());
    let evidence = fs::read_to_string(out_dir.join("processes.json")).unwrap();
    assert!(!evidence.contains(&tmp.path().display().to_string()));
    // Every child inherited the mark; none may be alive now.
    let alive = marked_processes(&mark);
    assert!(alive.is_empty(), "processes outlived the run: {alive:?}");
}

#[test]
fn keyed_receiver_replays_and_speaks_plain_http() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Receiver::start(tmp.path(), &["--mode", "keyed"]);
    let body = r#"{"amount":25}"#;
    let (status, headers, first) = post(r.port, Some("K1"), body);
    assert_eq!(status, 200, "{first}");
    assert_eq!(header(&headers, "idempotency-replayed"), None);
    let (status, headers, second) = post(r.port, Some("K1"), body);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "idempotency-replayed"), Some("true"));
    assert_eq!(second, first, "the replay is the stored response");
    // Same key, another body: 409 with a JSON problem, nothing applied.
    let (status, headers, problem) = post(r.port, Some("K1"), r#"{"amount":99}"#);
    assert_eq!(status, 409);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/problem+json")
    );
    let problem: Value = serde_json::from_str(&problem).unwrap();
    assert_eq!(problem["status"], 409);
    // Reconciliation answers whether it ran.
    let (status, _, effect) = raw(
        r.port,
        "GET /effect/K1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    let effect: Value = serde_json::from_str(&effect).unwrap();
    assert_eq!(effect["effects"], 1);
    assert_eq!(effect["ran"], true);
    let (status, _, _) = raw(
        r.port,
        "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 404);
    drop(r);
    assert_eq!(counts(&readback(tmp.path())), (1, 0, 0));
}

#[test]
fn receiver_bounds_400_and_413_apply_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Receiver::start(tmp.path(), &["--mode", "keyed"]);
    for key in ["K1;drop", "", &"K".repeat(65), "sp ace"] {
        let (status, _, body) = post(r.port, Some(key), "{}");
        assert_eq!(status, 400, "key {key:?}: {body}");
    }
    let (status, _, body) = post(r.port, None, "{}");
    assert_eq!(status, 400, "missing key: {body}");
    assert!(body.contains("Idempotency-Key"));
    let (status, _, _) = post(r.port, Some("K2"), &"x".repeat(4097));
    assert_eq!(status, 413);
    let (status, _, _) = post(r.port, Some("K3"), &"x".repeat(4096));
    assert_eq!(status, 200, "4096 bytes is within the bound");
    drop(r);
    assert_eq!(counts(&readback(tmp.path())), (1, 0, 0));
}

#[test]
fn unkeyed_receiver_applies_every_request() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Receiver::start(tmp.path(), &["--mode", "unkeyed"]);
    for _ in 0..3 {
        let (status, headers, _) = post(r.port, Some("K1"), "{}");
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "idempotency-replayed"), None);
    }
    let (status, _, _) = post(r.port, None, "{}");
    assert_eq!(status, 200, "unkeyed mode needs no key");
    drop(r);
    assert_eq!(counts(&readback(tmp.path())).0, 4);
}

#[test]
fn dispatcher_exits_69_when_the_receiver_is_unreachable_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    intent(tmp.path(), "K1", "{}");
    // A port that was just bound and released: nobody listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    fs::write(tmp.path().join("receiver.port"), format!("{port}\n")).unwrap();
    let out = crashlab(tmp.path(), DISPATCHER);
    assert_eq!(code(&out), 69, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).lines().count(),
        1,
        "one line: {}",
        stderr(&out)
    );
    assert!(!tmp.path().join("receipts.db").exists());
    assert!(!tmp.path().join("history.db").exists());
    let state = readback(tmp.path());
    assert_eq!(state["intents"]["attempts"], 0);
}

#[test]
fn dispatcher_exits_65_on_409_without_receipt_or_history() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Receiver::start(tmp.path(), &["--mode", "keyed"]);
    assert_eq!(post(r.port, Some("K1"), r#"{"amount":10}"#).0, 200);
    intent(tmp.path(), "K1", r#"{"amount":25}"#);
    let out = crashlab(tmp.path(), DISPATCHER);
    assert_eq!(code(&out), 65, "{}", stderr(&out));
    assert!(stderr(&out).contains("payload conflict"));
    drop(r);
    assert_eq!(counts(&readback(tmp.path())), (1, 0, 0));
}

#[test]
fn dispatcher_exits_75_while_the_lock_is_held() {
    let tmp = tempfile::tempdir().unwrap();
    intent(tmp.path(), "K1", "{}");
    let r = Receiver::start(tmp.path(), &["--mode", "keyed"]);
    let lock = fs::File::create(tmp.path().join("dispatcher.lock")).unwrap();
    lock.lock().unwrap();
    let out = crashlab(tmp.path(), DISPATCHER);
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    let mut waiting: Vec<&str> = DISPATCHER.to_vec();
    waiting.extend(["--lock-wait-ms", "100"]);
    let out = crashlab(tmp.path(), &waiting);
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert!(stderr(&out).contains("after waiting 100 ms"));
    assert_eq!(counts(&readback(tmp.path())), (0, 0, 0));
    lock.unlock().unwrap();
    let out = crashlab(tmp.path(), DISPATCHER);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    drop(r);
    assert_eq!(counts(&readback(tmp.path())), (1, 1, 1));
}

#[test]
fn unknown_hold_marks_the_intent_and_never_resends() {
    let tmp = tempfile::tempdir().unwrap();
    intent(tmp.path(), "K1", "{}");
    let r = Receiver::start(tmp.path(), &["--mode", "unkeyed"]);
    let mut crashing: Vec<&str> = DISPATCHER.to_vec();
    crashing.extend(["--crash-at", "dispatcher.after-response"]);
    let out = crashlab(tmp.path(), &crashing);
    assert_eq!(code(&out), 73);
    assert!(stdout(&out).contains("CRASH dispatcher.after-response exit=73"));
    let mut hold: Vec<&str> = DISPATCHER.to_vec();
    hold.extend(["--unknown", "hold"]);
    for _ in 0..2 {
        let out = crashlab(tmp.path(), &hold);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    drop(r);
    let state = readback(tmp.path());
    assert_eq!(counts(&state), (1, 0, 0));
    assert_eq!(state["intents"]["unknown"], 1);
}

#[test]
fn bad_input_is_one_line_with_its_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(
        tmp.path(),
        &[
            "intent",
            "--intents",
            "intents.db",
            "--key",
            "no/slash",
            "--body",
            "{}",
        ],
    );
    assert_eq!(code(&out), 2);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!tmp.path().join("intents.db").exists(), "no partial write");
    intent(tmp.path(), "K1", "{}");
    let out = crashlab(
        tmp.path(),
        &[
            "intent",
            "--intents",
            "intents.db",
            "--key",
            "K1",
            "--body",
            "{\"x\":1}",
        ],
    );
    assert_eq!(code(&out), 65, "{}", stderr(&out));
    let mut typo: Vec<&str> = DISPATCHER.to_vec();
    typo.extend(["--crash-at", "dispatcher.after-respons"]);
    let out = crashlab(tmp.path(), &typo);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("dispatcher.after-response"));
    let out = crashlab(
        tmp.path(),
        &["receiver", "--db", "intents.db", "--mode", "keyed"],
    );
    assert_eq!(code(&out), 2, "a foreign file is refused: {}", stderr(&out));
    let other = tempfile::tempdir().unwrap();
    fs::write(other.path().join("receiver.port"), "1\n").unwrap();
    let out = crashlab(other.path(), DISPATCHER);
    assert_eq!(code(&out), 2, "a missing intents file: {}", stderr(&out));
    let left: Vec<_> = fs::read_dir(other.path()).unwrap().flatten().collect();
    assert_eq!(
        left.len(),
        1,
        "nothing written beside the port file: {left:?}"
    );
    let out = crashlab(tmp.path(), &["points", "13", "--json"]);
    assert_eq!(code(&out), 0);
    for point in ["dispatcher.after-response", "receiver.after-effect-commit"] {
        assert!(stdout(&out).contains(point));
    }
}

/// Duplicates sent at once serialize on the receiver's write transaction: one applies, the
/// others get the stored response back.
#[test]
fn concurrent_duplicates_apply_once() {
    let tmp = tempfile::tempdir().unwrap();
    let r = Receiver::start(tmp.path(), &["--mode", "keyed", "--workers", "4"]);
    let port = r.port;
    let threads: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || post(port, Some("K1"), r#"{"amount":25}"#)))
        .collect();
    let replies: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(replies.iter().all(|(status, _, _)| *status == 200));
    let fresh = replies
        .iter()
        .filter(|(_, headers, _)| header(headers, "idempotency-replayed").is_none())
        .count();
    assert_eq!(fresh, 1, "exactly one request applied");
    assert!(
        replies.windows(2).all(|w| w[0].2 == w[1].2),
        "one response for all"
    );
    drop(r);
    assert_eq!(counts(&readback(tmp.path())).0, 1);
}
