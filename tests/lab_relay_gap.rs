//! Lab f1 (relay-gap) end to end: the built binary as real processes on a real PostgreSQL
//! server that `crashlab servers f1` starts. Writer A is stopped by the pause nemesis inside
//! its open transaction (id 7 taken), B commits 8, the relay polls, A is continued: the
//! `last-id` relay loses 7 for good, `pending-status` and `xid-horizon` publish it. Then the
//! driver and explore on the stack, the audit of the driver's evidence, and bad input as one
//! line with its exit code. No timing assertions: every wait is bounded, none is asserted.

mod common;
use common::{code, crashlab, readback, stderr, stdout, BIN};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long the servers may take to be ready, a paused writer to stop, a process to end.
const READY_WAIT: Duration = Duration::from_secs(60);
const STOP_WAIT: Duration = Duration::from_secs(10);

/// `crashlab servers f1 --work DIR`: a private PostgreSQL with the lab's two databases,
/// `stack.json` in DIR; stdin closed (on drop) ends it, and it releases everything.
struct Stack {
    child: Child,
}

impl Stack {
    fn start(work: &Path) -> Stack {
        let mut child = Command::new(BIN)
            .args(["servers", "f1", "--work"])
            .arg(work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("crashlab servers runs");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + READY_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("ready ") => break,
                Ok(_) => continue,
                Err(e) => {
                    let _ = child.kill();
                    panic!("crashlab servers f1 said no 'ready' line: {e}");
                }
            }
        }
        assert!(work.join("stack.json").exists());
        Stack { child }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + READY_WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const DBS: &[&str] = &["--outbox", "outbox", "--receiver", "receiver"];

fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = crashlab(dir, args);
    assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn with_dbs<'a>(role: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![role];
    args.extend_from_slice(DBS);
    args.extend_from_slice(more);
    args
}

fn verify(dir: &Path) -> Value {
    let out = crashlab(dir, &with_dbs("gap-verify", &["--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    readback(&out)
}

/// The kernel's state letter of a process (`T`: stopped), from /proc.
fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Writer A with `--pause-at gap-write.after-insert`, once the kernel reports it stopped.
fn paused_writer(dir: &Path) -> Child {
    let mut child = Command::new(BIN)
        .args([
            "gap-write",
            "--outbox",
            "outbox",
            "--writer",
            "A",
            "--body",
            "a",
        ])
        .args(["--pause-at", "gap-write.after-insert"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gap-write runs");
    let deadline = Instant::now() + STOP_WAIT;
    while state_of(child.id()) != Some('T') {
        if Instant::now() >= deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "writer A never stopped: {}{}",
                stdout_of(&out.stdout),
                stdout_of(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn stdout_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Continue a paused writer (SIGCONT) and take its output once it ended.
fn resume(child: Child) -> (i32, String) {
    let status = Command::new("kill")
        .args(["-CONT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), stdout_of(&out.stdout))
}

/// One design under the forced schedule: the readbacks while A is stopped and at the end.
fn schedule(variant: &str) -> (Value, Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let _stack = Stack::start(dir);
    run_ok(dir, &with_dbs("gap-init", &[]));
    let a = paused_writer(dir);
    let b = run_ok(
        dir,
        &[
            "gap-write",
            "--outbox",
            "outbox",
            "--writer",
            "B",
            "--body",
            "b",
        ],
    );
    assert!(
        b.contains("COMMITTED outbox write of message 8 by B"),
        "{b}"
    );
    run_ok(dir, &with_dbs("gap-relay", &["--variant", variant]));
    let during = verify(dir);
    let (exit, a_out) = resume(a);
    assert_eq!(exit, 0, "{a_out}");
    assert!(
        a_out.contains("COMMITTED outbox write of message 7 by A"),
        "{a_out}"
    );
    let second = run_ok(dir, &with_dbs("gap-relay", &["--variant", variant]));
    (during, verify(dir), second)
}

#[test]
fn last_id_loses_the_row_that_commits_late_and_the_other_designs_publish_it() {
    // last-id: 8 published and remembered; 7 commits below the mark and is never read.
    let (during, last, second) = schedule("last-id");
    assert_eq!(during["receiver"]["ids"], json!([8]));
    assert_eq!(during["outbox"]["relay"]["last_id"], 8);
    assert!(second.contains("READ 0 -"), "{second}");
    assert_eq!(last["outbox"]["ids"], json!([7, 8]));
    assert_eq!(last["receiver"]["ids"], json!([8]));
    assert_eq!(last["receiver"]["missing_ids"], json!([7]));
    // pending-status: 8 first, then 7, each once.
    let (during, last, second) = schedule("pending-status");
    assert_eq!(during["receiver"]["ids"], json!([8]));
    assert!(second.contains("PUBLISHED message 7"), "{second}");
    assert_eq!(last["receiver"]["ids"], json!([7, 8]));
    assert_eq!(last["receiver"]["missing"], 0);
    // xid-horizon: A's open transaction holds the horizon, so B's committed 8 waits too.
    let (during, last, second) = schedule("xid-horizon");
    assert_eq!(during["receiver"]["ids"], json!([]));
    assert_eq!(during["receiver"]["missing_ids"], json!([8]));
    assert!(second.contains("PUBLISHED message 7"), "{second}");
    assert_eq!(last["receiver"]["ids"], json!([7, 8]));
    assert_eq!(last["receiver"]["missing"], 0);
}

/// A file in `dir` besides stack.json: what a refused role must not leave behind.
fn left_behind(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "stack.json"))
        .collect()
}

#[test]
fn bad_input_is_one_line_with_its_exit_code_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let one_line = |args: &[&str], exit: i32, says: &str| {
        let out = crashlab(dir, args);
        assert_eq!(code(&out), exit, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("crashlab: "), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    };
    fn write<'a>(more: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["gap-write", "--outbox", "outbox"];
        args.extend_from_slice(more);
        args
    }
    // No stack.json: the role says where it looked, before any connection.
    one_line(&write(&["--writer", "A", "--body", "x"]), 2, "stack.json");
    one_line(&write(&["--writer", "A B", "--body", "x"]), 2, "--writer");
    one_line(&write(&["--writer", "A", "--body", "a\nb"]), 2, "--body");
    one_line(
        &write(&[
            "--writer",
            "A",
            "--body",
            "x",
            "--pause-at",
            "gap-relay.after-publish",
        ]),
        2,
        "--pause-at",
    );
    // A stack.json that lacks the database, then one whose server is not there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let stack = json!({
        "stack": "postgres",
        "postgres": {"receiver": format!("postgres://crashlab@127.0.0.1:{port}/crashlab_none")},
        "amqp_url": null,
        "queues": {}
    });
    std::fs::write(dir.join("stack.json"), stack.to_string()).unwrap();
    one_line(
        &write(&["--writer", "A", "--body", "x"]),
        2,
        "no PostgreSQL database named 'outbox'",
    );
    one_line(
        &[
            "gap-verify",
            "--outbox",
            "receiver",
            "--receiver",
            "receiver",
        ],
        69,
        "127.0.0.1",
    );
    one_line(
        &[
            "gap-verify",
            "--outbox",
            "o",
            "--receiver",
            "r",
            "--expect",
            "nope",
        ],
        2,
        "unknown stage 'nope'",
    );
    let out = crashlab(dir, &with_dbs("gap-relay", &["--variant", "newest"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(left_behind(dir).is_empty(), "{:?}", left_behind(dir));
}

/// The driver on the stack: each design's scenario as the readbacks above say, the loss in
/// Jepsen's words (`unseen` 7, expected of last-id only), and an audit that passes.
#[test]

fn driver_on_postgres_shows_the_loss_and_its_evidence_audits() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "f1", "--out", "ev"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let ev = tmp.path().join("ev");
    let results = common::json(&ev.join("results.json"));
    assert_eq!(results["ok"], true);
    let scenarios = results["scenarios"].as_array().unwrap();
    let of = |name: &str| scenarios.iter().find(|s| s["scenario"] == name).unwrap();
    let lost: Vec<(&str, &str)> = of("last-id")["bad_anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["anomaly"].as_str().unwrap(), f["item"].as_str().unwrap()))
        .collect();
    assert_eq!(lost, [("unseen", "7")]);
    for holds in ["pending-status", "xid-horizon"] {
        assert_eq!(of(holds)["bad_anomalies"], json!([]), "{holds}");
    }
    let audit = crashlab(tmp.path(), &["audit", "ev"]);
    assert_eq!(code(&audit), 0, "{}\n{}", stdout(&audit), stderr(&audit));
}

/// Explore on the stack: each design breaks exactly where its prediction says.
#[test]

fn explore_on_postgres_breaks_last_id_exactly_where_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(
        tmp.path(),
        &["explore", "f1", "--variants", "all", "--out", "ex"],
    );
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let explored = common::json(&tmp.path().join("ex").join("explore.json"));
    assert_eq!(explored["ok"], true);
    let mut broke: Vec<String> = Vec::new();
    for case in explored["cases"].as_array().unwrap() {
        let (variant, point) = (
            case["variant"].as_str().unwrap(),
            case["point"].as_str().unwrap(),
        );
        match case["status"].as_str().unwrap() {
            "holds" => assert_eq!(case["bad_anomalies"], json!([]), "{variant} {point}"),
            "breaks" => {
                assert_eq!(
                    case["bad_anomalies"][0]["anomaly"], "unseen",
                    "{variant} {point}"
                );
                broke.push(format!("{variant} {point}"));
            }
            other => panic!("{variant} {point}: {other}"),
        }
    }
    // Only last-id breaks, where A commits and the first poll remembers 8.
    assert_eq!(
        broke,
        [
            "last-id gap-write.after-commit",
            "last-id gap-relay.after-advance"
        ]
    );
    // The broken cases keep PostgreSQL's rows as plain-SQL dumps under db/: the audit judges
    // them as such, not as SQLite files.
    let audit = crashlab(tmp.path(), &["audit", "ex"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
}

/// Every file of an evidence directory, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_password_in_a_given_url_never_reaches_the_evidence() {
    // Evidence is shared: the recorded command keeps the URL with its password masked.
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let _stack = Stack::start(&work);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("stack.json")).unwrap()).unwrap();
    let url = file["postgres"]["outbox"].as_str().unwrap();
    // The private cluster trusts 127.0.0.1, so any password connects.
    let (scheme_user, rest) = url.split_once('@').unwrap();
    let server = rest.rsplit_once('/').unwrap().0;
    let given = format!("{scheme_user}:pw123SECRET@{server}/postgres");
    let out = crashlab(
        tmp.path(),
        &["driver", "f1", "--pg-url", &given, "--out", "e"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let evidence = tmp.path().join("e");
    let mut masked = false;
    for path in files_under(&evidence) {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("pw123SECRET"),
            "{} holds the password",
            path.display()
        );
        masked |= text.contains(":***@");
    }
    assert!(
        masked,
        "the recorded command keeps the URL, its password masked"
    );
}
