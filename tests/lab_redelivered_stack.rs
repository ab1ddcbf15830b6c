//! Lab f3 on PostgreSQL + RabbitMQ end to end: the built binary as real processes on real
//! servers. The driver stops consumer A with the pause nemesis, the broker closes A's
//! connection (no heartbeat from a stopped process) and redelivers the message to B, A is
//! continued and its ack does nothing: keyed, one effect; unkeyed, two. Explore breaks the
//! unkeyed variant exactly where predicted; the audit passes the driver's evidence. A consumer
//! that is only busy (a slow call) keeps its connection: its heartbeats run on a thread of its
//! own. Bad input is one line with its exit code. No timing assertions: every wait is
//! bounded, none is asserted.

mod common;
use common::{code, crashlab, stderr, stdout, BIN};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

const STACK: &[&str] = &["--stack", "postgres-rabbitmq"];
/// How long the servers may take to be ready, a background process to end.
const READY_WAIT: Duration = Duration::from_secs(90);

/// The readback JSON a step printed last.
fn readback_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let last = text.lines().last().expect("a readback line");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{}: {e}: {last}", path.display()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_driver_shows_the_redelivery_the_audit_passes_and_explore_breaks_where_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = crashlab(
        tmp.path(),
        &[
            "driver",
            "f3",
            "--stack",
            "postgres-rabbitmq",
            "--out",
            "run",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    for (scenario, effects) in [
        ("keyed-pause-before-call", 1),
        ("keyed-pause-after-call", 1),
        ("unkeyed-pause-before-call", 2),
        ("unkeyed-pause-after-call", 2),
    ] {
        let dir = run.join(scenario);
        // A took M1 first; the broker closed its connection while it was stopped and
        // redelivered M1 to B, flagged; A's ack did nothing.
        let a = read(&dir.join("consumer-a.stdout.txt"));
        assert!(a.contains("redelivered=false"), "{scenario}: {a}");
        assert!(a.contains("CHANNEL-LOST message M1"), "{scenario}: {a}");
        assert!(!a.contains("AMQP ack "), "{scenario}: {a}");
        let b = read(&dir.join("consumer-b.stdout.txt"));
        assert!(b.contains("redelivered=true"), "{scenario}: {b}");
        assert!(b.contains("AMQP ack message=M1"), "{scenario}: {b}");
        let last = readback_of(&dir.join("final.stdout.txt"));
        assert_eq!(last["receiver"]["effects"], effects, "{scenario}: {last}");
        assert_eq!(last["consumer"]["redelivered"], 1, "{scenario}: {last}");
        assert_eq!(last["consumer"]["lost"], 1, "{scenario}: {last}");
        assert_eq!(last["queue"]["messages"], 0, "{scenario}: {last}");
    }
    let audit = crashlab(tmp.path(), &["audit", "run"]);
    assert_eq!(code(&audit), 0, "{}{}", stdout(&audit), stderr(&audit));
    assert!(stdout(&audit).contains("PASS: lab f3 (redelivered)"));

    let mut args = vec!["explore", "f3"];
    args.extend_from_slice(STACK);
    args.extend_from_slice(&["--variants", "all", "--out", "expl"]);
    let explore = crashlab(tmp.path(), &args);
    let text = stdout(&explore);
    assert_eq!(code(&explore), 0, "{text}{}", stderr(&explore));
    let breaks: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("*BREAKS"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        breaks,
        [
            "redeliver-consumer.after-call",
            "receiver.after-effect-commit"
        ],
        "{text}"
    );
    assert!(text.contains("keyed: every invariant holds at every reached point"));

    // A broker kill right after the ack takes the ack back on a classic queue: recovery sees
    // the message ready again, keyed replays the second call, unkeyed runs it (predicted).
    let mut args = vec!["explore", "f3"];
    args.extend_from_slice(STACK);
    args.extend_from_slice(&[
        "--variants",
        "all",
        "--points",
        "redeliver-consumer.after-ack",
        "--crash-mode",
        "server-kill",
        "--server",
        "rabbitmq",
        "--out",
        "explkill",
    ]);
    let explore = crashlab(tmp.path(), &args);
    let text = stdout(&explore);
    assert_eq!(code(&explore), 0, "{text}{}", stderr(&explore));
    assert!(
        text.contains("keyed: every invariant holds at every reached point"),
        "{text}"
    );
    assert!(
        text.contains("shown at redeliver-consumer.after-ack @1 (duplicate x1)"),
        "{text}"
    );
}

/// `crashlab servers f3 --stack postgres-rabbitmq --work DIR`: the lab's database and queue,
/// `stack.json` in DIR; stdin closed (on drop) ends it, and it releases everything.
struct Stack {
    child: Child,
}

impl Stack {
    fn start(work: &Path) -> Stack {
        let mut child = Command::new(BIN)
            .args(["servers", "f3"])
            .args(STACK)
            .arg("--work")
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
                    panic!("crashlab servers f3 said no 'ready' line: {e}");
                }
            }
        }
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

/// Lab 13's receiver in the background, each call held `delay_ms`; it stops by itself.
fn receiver(dir: &Path, delay_ms: u64) -> Child {
    let child = Command::new(BIN)
        .args(["receiver", "--db", "receiver.db", "--mode", "keyed"])
        .args(["--port-file", "receiver.port", "--lifetime-ms", "60000"])
        .args(["--delay-ms", &delay_ms.to_string()])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the receiver runs");
    let deadline = Instant::now() + READY_WAIT;
    while !dir.join("receiver.port").exists() {
        assert!(Instant::now() < deadline, "the receiver wrote no port");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn consumer<'a>(name: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "redeliver-consumer",
        "--stack",
        "postgres-rabbitmq",
        "--queue",
        "messages",
        "--db",
        "consumer",
        "--port-file",
        "receiver.port",
        "--variant",
        "keyed",
        "--consumer",
        name,
    ];
    args.extend_from_slice(more);
    args
}

#[test]
fn a_busy_consumer_keeps_its_channel_and_bad_input_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let _stack = Stack::start(dir);
    let enq = crashlab(
        dir,
        &[
            "redeliver-enqueue",
            "--stack",
            "postgres-rabbitmq",
            "--queue",
            "messages",
            "--id",
            "M1",
            "--body",
            "{}",
        ],
    );
    assert_eq!(code(&enq), 0, "{}", stderr(&enq));
    // The call takes 3 s, past two heartbeat intervals of 1 s: a consumer whose heartbeats
    // stopped while it waited would lose its channel here. Its own thread keeps them going.
    let mut r = receiver(dir, 3_000);
    let busy = crashlab(dir, &consumer("A", &["--heartbeat-s", "1"]));
    let _ = r.kill();
    let _ = r.wait();
    let text = stdout(&busy);
    assert_eq!(code(&busy), 0, "{text}{}", stderr(&busy));
    assert!(text.contains("ACKED message M1 by A"), "{text}");
    assert!(!text.contains("CHANNEL-LOST"), "{text}");
    let verify = crashlab(
        dir,
        &[
            "redeliver-verify",
            "--stack",
            "postgres-rabbitmq",
            "--db",
            "consumer",
            "--queue",
            "messages",
            "--receiver",
            "receiver.db",
            "--json",
        ],
    );
    assert_eq!(code(&verify), 0, "{}", stderr(&verify));
    let state = common::readback(&verify);
    assert_eq!(state["consumer"]["acked"], 1, "{state}");
    assert_eq!(state["consumer"]["redelivered"], 0, "{state}");
    assert_eq!(state["queue"]["messages"], 0, "{state}");

    // Bad input: one line, exit 2, nothing taken from the queue.
    for (more, says) in [
        (vec!["--heartbeat-s", "0"], "--heartbeat-s"),
        (vec!["--heartbeat-s", "61"], "--heartbeat-s"),
        (vec!["--wait-ms", "600001"], "--wait-ms"),
        // A lease is the SQLite queue's: on the broker the flag is refused, not ignored.
        (vec!["--lease-ms", "100"], "--lease-ms is for stack sqlite"),
    ] {
        let out = crashlab(dir, &consumer("B", &more));
        assert_eq!(code(&out), 2, "{more:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{more:?}: {}", stderr(&out));
    }
    let mut args = consumer("B", &[]);
    assert_eq!(args[4], "messages");
    args[4] = "nosuch";
    let out = crashlab(dir, &args);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("crashlab: ") && err.contains("nosuch"),
        "{err}"
    );
}
