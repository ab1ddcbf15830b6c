//! Lab 14 on the server stack, run the way a user runs it: `crashlab servers 14 --stack
//! postgres-rabbitmq --work DIR` starts private PostgreSQL and RabbitMQ servers and writes
//! `stack.json` into DIR; the roles run in DIR as the lab's scenario runs them; their
//! readbacks, an independent client (`psql`), and the traced SQL replayed on SQLite must agree.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use common::{code, readback, stderr, stdout, BIN};
use crashlab::labs::outbox_stack::lab::STAGES;
use crashlab::labs::outbox_stack::readback::{RECEIVER_COUNTS, SENDER_COUNTS};
use crashlab::labs::outbox_stack::roles::{self, Send, STORES};
use crashlab::labs::outbox_stack::variant::Variant;

/// How long the servers may take to be ready, or to answer a kill or a restart.
const SERVERS_WAIT: Duration = Duration::from_secs(120);

/// `crashlab servers …` running in the background: its stdin open (closing it stops the
/// servers), its stdout lines read on a thread.
struct Servers {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    dir: tempfile::TempDir,
}

impl Servers {
    fn start(args: &[&str]) -> Servers {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .arg("servers")
            .args(args)
            .arg("--work")
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("crashlab servers starts");
        let out = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut servers = Servers {
            child,
            stdin,
            lines,
            dir,
        };
        servers.wait_for("ready ");
        assert!(servers.dir.path().join("stack.json").is_file());
        servers
    }

    fn work(&self) -> &Path {
        self.dir.path()
    }

    /// Wait (bounded) for a line starting with `prefix`.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + SERVERS_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => continue,
                Err(e) => panic!("crashlab servers: no '{prefix}' line: {e}"),
            }
        }
    }

    /// SIGKILL a server and start it again (the `servers` command's stdin commands).
    fn kill_and_restart(&mut self, server: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "kill {server}").unwrap();
        stdin.flush().unwrap();
        self.wait_for(&format!("killed {server}"));
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "restart {server}").unwrap();
        stdin.flush().unwrap();
        self.wait_for(&format!("restarted {server}"));
    }

    /// The URL of logical database `name`.
    fn url(&self, name: &str) -> String {
        let file = common::json(&self.work().join("stack.json"));
        file["postgres"][name].as_str().unwrap().to_string()
    }

    fn run(&self, argv: roles::Argv) -> Output {
        let words = argv.into_vec();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        common::crashlab(self.work(), &words)
    }

    fn verify(&self) -> serde_json::Value {
        let output = self.run(roles::verify(&STORES, true, None));
        assert_eq!(code(&output), 0, "verify: {}", stderr(&output));
        readback(&output)
    }
}

impl Drop for Servers {
    /// End of stdin: the servers are released and stopped; wait (bounded) for that.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + SERVERS_WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn crashing(argv: roles::Argv, point: &str) -> roles::Argv {
    argv.flag("--crash-at", point)
}

fn field(v: &serde_json::Value, path: &str) -> i64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_i64()
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

fn check_stage(v: &serde_json::Value, name: &str) {
    let stage = STAGES.iter().find(|s| s.name == name).unwrap();
    for (path, expected) in stage.fields {
        assert_eq!(field(v, path), *expected, "{name}: {path} in {v}");
    }
}

fn psql(url: &str, sql: &str) -> i64 {
    let output = Command::new("psql")
        .args(["-X", "-A", "-t", "-d", url, "-c", sql])
        .output()
        .expect("psql runs");
    assert!(output.status.success(), "psql: {}", stderr(&output));
    stdout(&output).trim().parse().unwrap()
}

/// Run every `SQL <db> …` line of `traces` on an in-memory SQLite database per store, as the
/// audit's replay does; a transaction a crash left open is rolled back at the next BEGIN.
fn replay_on_sqlite(traces: &[String], db: &str) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let prefix = format!("SQL {db} ");
    for text in traces {
        for line in text.lines() {
            let Some(sql) = line.strip_prefix(&prefix) else {
                continue;
            };
            if sql == "BEGIN" && !conn.is_autocommit() {
                conn.execute_batch("ROLLBACK").unwrap();
            }
            if sql.starts_with("SELECT") {
                let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let mut rows = stmt.query([]).unwrap();
                while rows.next().unwrap().is_some() {}
            } else {
                conn.execute_batch(sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        }
    }
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK").unwrap();
    }
    conn
}

/// The seed's story on real servers: 2 physical deliveries, 1 effect, ledger 25, the
/// redelivery flagged by the broker, a conflicting payload rejected with exit 65; `psql` and
/// SQLite (replaying the trace) agree with the readback.
#[test]
fn the_seed_scenario_gives_two_deliveries_one_effect_and_a_rejected_conflict() {
    let s = Servers::start(&["14", "--stack", "postgres-rabbitmq"]);
    let publisher = || roles::publisher(&STORES, Variant::Correct);
    let consumer = || roles::consumer(&STORES, Variant::Correct);
    let one = Send::One {
        contract: "R1",
        amount: 25,
        message: "M1",
    };
    let mut traces: Vec<String> = Vec::new();
    let mut step = |argv: roles::Argv, exit: i32| -> Output {
        let shown = argv.clone().into_vec().join(" ");
        let output = s.run(argv);
        assert_eq!(code(&output), exit, "{shown}: {}", stderr(&output));
        traces.push(stdout(&output));
        output
    };
    let verify = |step: &mut dyn FnMut(roles::Argv, i32) -> Output, stage: &str| {
        let output = step(roles::verify(&STORES, true, Some(stage)), 0);
        check_stage(&readback(&output), stage);
    };
    step(
        crashing(roles::sender(&STORES, one), "stack-sender.after-commit"),
        73,
    );
    verify(&mut step, "after-business");
    step(crashing(publisher(), "stack-publisher.after-confirm"), 73);
    verify(&mut step, "after-publish");
    step(publisher(), 0);
    step(
        crashing(consumer(), "stack-consumer.after-receiver-commit"),
        73,
    );
    verify(&mut step, "after-consume");
    let recovered = step(consumer(), 0);
    let recovered = stdout(&recovered);
    // The broker redelivers the unacked copy with its flag set, and the second copy without.
    assert!(
        recovered.contains("message=M1") && recovered.contains("redelivered=true"),
        "{recovered}"
    );
    assert!(recovered.contains("redelivered=false"), "{recovered}");
    assert!(
        recovered.contains("CONSUMED applied=0 duplicates=2 rejected=0"),
        "{recovered}"
    );
    verify(&mut step, "final-verify");
    step(roles::enqueue(&STORES, "M1", "R1", 99), 0);
    let conflict = step(consumer(), 65);
    assert!(stderr(&conflict).contains("payload conflict"));
    assert_eq!(
        stderr(&conflict).lines().count(),
        1,
        "{}",
        stderr(&conflict)
    );
    verify(&mut step, "after-conflict");
    let last = s.verify();

    // An independent client agrees with the readback.
    let (sender, receiver) = (s.url("sender"), s.url("receiver"));
    assert_eq!(psql(&receiver, "SELECT count(*) FROM inbox"), 1);
    for (name, sql) in SENDER_COUNTS {
        assert_eq!(psql(&sender, sql), field(&last, &format!("sender.{name}")));
    }
    for (name, sql) in RECEIVER_COUNTS {
        assert_eq!(
            psql(&receiver, sql),
            field(&last, &format!("receiver.{name}"))
        );
    }
    // The traced statements, run on SQLite, build the same state: the SQL is portable and
    // the trace is complete.
    for (db, counts) in [("sender", SENDER_COUNTS), ("receiver", RECEIVER_COUNTS)] {
        let conn = replay_on_sqlite(&traces, db);
        for (name, sql) in counts {
            let n: i64 = conn.query_row(sql, [], |r| r.get(0)).unwrap();
            assert_eq!(n, field(&last, &format!("{db}.{name}")), "{db}.{name}");
        }
    }
}

/// The variants that give up a server's guarantee break only when that server dies:
/// async-commit loses an acknowledged commit when PostgreSQL is killed, transient loses a
/// published message when RabbitMQ is; the correct design keeps both. auto-ack loses the
/// effect on a plain consumer crash.
#[test]
fn each_variant_breaks_where_it_gives_up_a_guarantee_and_the_correct_design_holds() {
    let mut s = Servers::start(&["14", "--stack", "postgres-rabbitmq"]);
    let send = |s: &Servers, contract: &str, message: &str| {
        let argv = roles::sender(
            &STORES,
            Send::One {
                contract,
                amount: 10,
                message,
            },
        );
        let output = s.run(argv);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
    };
    let run = |s: &Servers, argv: roles::Argv, exit: i32| {
        let output = s.run(argv);
        assert_eq!(code(&output), exit, "{}", stderr(&output));
        stdout(&output)
    };
    // async-commit: the consumer is told its commit happened, acks, and PostgreSQL dies.
    send(&s, "A1", "MA1");
    run(&s, roles::publisher(&STORES, Variant::Correct), 0);
    let said = run(&s, roles::consumer(&STORES, Variant::AsyncCommit), 0);
    assert!(said.contains("COMMITTED receiver inbox and ledger for message MA1"));
    s.kill_and_restart("postgres");
    let v = s.verify();
    assert_eq!(field(&v, "receiver.inbox"), 0, "{v}");
    assert_eq!(field(&v, "receiver.ledger"), 0, "{v}");
    assert_eq!(
        field(&v, "queue.messages"),
        0,
        "acked: nothing brings it back: {v}"
    );

    // The correct design, same servers, same kill: the credit stays.
    send(&s, "C1", "MC1");
    run(&s, roles::publisher(&STORES, Variant::Correct), 0);
    run(&s, roles::consumer(&STORES, Variant::Correct), 0);
    s.kill_and_restart("postgres");
    let v = s.verify();
    assert_eq!(field(&v, "receiver.inbox"), 1, "{v}");
    assert_eq!(field(&v, "receiver.ledger"), 10, "{v}");

    // transient: the message is confirmed and marked sent, then RabbitMQ restarts.
    send(&s, "T1", "MT1");
    run(&s, roles::publisher(&STORES, Variant::Transient), 0);
    assert_eq!(field(&s.verify(), "queue.messages"), 1);
    s.kill_and_restart("rabbitmq");
    let v = s.verify();
    assert_eq!(field(&v, "queue.messages"), 0, "{v}");
    assert_eq!(field(&v, "sender.outbox_pending"), 0, "{v}");

    // The correct design's persistent message survives the same restart.
    send(&s, "P1", "MP1");
    run(&s, roles::publisher(&STORES, Variant::Correct), 0);
    s.kill_and_restart("rabbitmq");
    assert_eq!(field(&s.verify(), "queue.messages"), 1);
    run(&s, roles::consumer(&STORES, Variant::Correct), 0);
    let v = s.verify();
    assert_eq!(
        field(&v, "receiver.ledger"),
        20,
        "C1 and P1, not A1 nor T1: {v}"
    );

    // auto-ack: a consumer crash after its ack and before its commit loses the effect.
    send(&s, "K1", "MK1");
    run(&s, roles::publisher(&STORES, Variant::Correct), 0);
    let crash = crashing(
        roles::consumer(&STORES, Variant::AutoAck),
        "stack-consumer.after-ack",
    );
    run(&s, crash, 73);
    run(&s, roles::consumer(&STORES, Variant::AutoAck), 0);
    let v = s.verify();
    assert_eq!(field(&v, "receiver.ledger"), 20, "K1 lost: {v}");
    assert_eq!(field(&v, "queue.messages"), 0, "{v}");
    assert_eq!(field(&v, "sender.contracts"), 5, "{v}");
}

/// Bad input: one line and the documented exit code, nothing written.
#[test]
fn a_foreign_schema_is_refused_with_exit_2_and_a_missing_stack_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let output = common::crashlab(
        dir.path(),
        &[
            "stack-sender",
            "--db",
            "sender",
            "--contract",
            "R1",
            "--amount",
            "5",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("stack.json"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);

    let s = Servers::start(&["--databases", "sender"]);
    let url = s.url("sender");
    let made = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-d",
            &url,
            "-c",
            "CREATE TABLE accounts(id TEXT PRIMARY KEY)",
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let one = Send::One {
        contract: "R1",
        amount: 5,
        message: "M1",
    };
    let output = s.run(roles::sender(&STORES, one));
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("foreign schema"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);
    // Left as it was: no table of ours was created.
    assert_eq!(
        psql(
            &url,
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ),
        1
    );
}

/// A server that is not there: exit 69 within the connect bound, one line.
#[test]
fn an_unreachable_server_is_exit_69() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = serde_json::json!({
        "stack": "postgres-rabbitmq",
        "postgres": {"sender": format!("postgres://crashlab@127.0.0.1:{port}/crashlab_x_sender")},
        "amqp_url": format!("amqp://guest:guest@127.0.0.1:{port}/%2f"),
        "queues": {"messages": "crashlab_x_messages"},
    });
    std::fs::write(dir.path().join("stack.json"), file.to_string()).unwrap();
    let one = Send::One {
        contract: "R1",
        amount: 5,
        message: "M1",
    };
    let words = roles::sender(&STORES, one).into_vec();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let output = common::crashlab(dir.path(), &words);
    assert_eq!(code(&output), 69, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot connect"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);
}
