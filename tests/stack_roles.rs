//! Lab 14 on the server stack, run the way a user runs it: `crashlab servers 14 --stack
//! postgres-rabbitmq --work DIR` starts private PostgreSQL and RabbitMQ servers and writes
//! `stack.json` into DIR; the roles run in DIR as the lab's scenario runs them; their
//! readbacks, an independent client (`psql`), and the traced SQL replayed on SQLite must agree.

mod common;
#[path = "stack_roles/servers.rs"]
mod servers;

use std::process::{Command, Output};

use common::{code, readback, stderr, stdout};
use crashlab::labs::outbox_inbox::roles::{Consumer, Enqueue, Publisher, Sender, Verify};
use crashlab::labs::outbox_inbox::stack::Stack::Servers as On;
use crashlab::labs::outbox_inbox::stages;
use crashlab::labs::outbox_inbox::variant::Variant;
use crashlab::role::{Argv, Role, Stage};
use servers::Servers;

/// The readback's counts, by field, as an independent client counts them: the same totals
/// from the tables themselves.
const SENDER_COUNTS: &[(&str, &str)] = &[
    ("contracts", "SELECT count(*) FROM contracts"),
    (
        "outbox_pending",
        "SELECT count(*) FROM outbox WHERE status = 'pending'",
    ),
    (
        "outbox_sent",
        "SELECT count(*) FROM outbox WHERE status = 'sent'",
    ),
];
const RECEIVER_COUNTS: &[(&str, &str)] = &[
    ("deliveries", "SELECT count(*) FROM receipts"),
    ("handled", "SELECT coalesce(sum(handled), 0) FROM receipts"),
    (
        "redelivered",
        "SELECT count(*) FROM receipts WHERE redelivered = 1",
    ),
    (
        "rejected",
        "SELECT count(*) FROM receipts WHERE outcome = 'rejected'",
    ),
    ("inbox", "SELECT count(*) FROM inbox"),
    ("ledger", "SELECT coalesce(sum(balance), 0) FROM ledger"),
];

fn crashing(argv: Argv, point: &str) -> Argv {
    argv.flag("--crash-at", point)
}

fn sender(contract: &str, amount: i64, message: &str) -> Argv {
    Sender::one(On, contract, amount, message).argv()
}

fn publisher(variant: Variant) -> Argv {
    Publisher::of(On, variant).argv()
}

fn consumer(variant: Variant) -> Argv {
    Consumer::of(On, variant).argv()
}

fn field(v: &serde_json::Value, path: &str) -> i64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_i64()
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

fn check_stage(v: &serde_json::Value, name: &str) {
    let stage = Stage::named(stages::of(On), name);
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
    let publisher = || publisher(Variant::Correct);
    let consumer = || consumer(Variant::Correct);
    let mut traces: Vec<String> = Vec::new();
    let mut step = |argv: Argv, exit: i32| -> Output {
        let shown = argv.clone().into_vec().join(" ");
        let output = s.run(argv);
        assert_eq!(code(&output), exit, "{shown}: {}", stderr(&output));
        traces.push(stdout(&output));
        output
    };
    let verify = |step: &mut dyn FnMut(Argv, i32) -> Output, stage: &str| {
        let output = step(Verify::of(On, Some(stage)).argv(), 0);
        check_stage(&readback(&output), stage);
    };
    step(crashing(sender("R1", 25, "M1"), "sender.after-commit"), 73);
    verify(&mut step, "after-business");
    step(crashing(publisher(), "publisher.after-confirm"), 73);
    verify(&mut step, "after-publish");
    step(publisher(), 0);
    step(crashing(consumer(), "consumer.after-receiver-commit"), 73);
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
    step(Enqueue::of(On, "M1", "R1", 99).argv(), 0);
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
        let output = s.run(sender(contract, 10, message));
        assert_eq!(code(&output), 0, "{}", stderr(&output));
    };
    let run = |s: &Servers, argv: Argv, exit: i32| {
        let output = s.run(argv);
        assert_eq!(code(&output), exit, "{}", stderr(&output));
        stdout(&output)
    };
    // async-commit: the consumer is told its commit happened, acks, and PostgreSQL dies.
    send(&s, "A1", "MA1");
    run(&s, publisher(Variant::Correct), 0);
    let said = run(&s, consumer(Variant::AsyncCommit), 0);
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
    run(&s, publisher(Variant::Correct), 0);
    run(&s, consumer(Variant::Correct), 0);
    s.kill_and_restart("postgres");
    let v = s.verify();
    assert_eq!(field(&v, "receiver.inbox"), 1, "{v}");
    assert_eq!(field(&v, "receiver.ledger"), 10, "{v}");

    // transient: the message is confirmed and marked sent, then RabbitMQ restarts.
    send(&s, "T1", "MT1");
    run(&s, publisher(Variant::Transient), 0);
    assert_eq!(field(&s.verify(), "queue.messages"), 1);
    s.kill_and_restart("rabbitmq");
    let v = s.verify();
    assert_eq!(field(&v, "queue.messages"), 0, "{v}");
    assert_eq!(field(&v, "sender.outbox_pending"), 0, "{v}");

    // The correct design's persistent message survives the same restart.
    send(&s, "P1", "MP1");
    run(&s, publisher(Variant::Correct), 0);
    s.kill_and_restart("rabbitmq");
    assert_eq!(field(&s.verify(), "queue.messages"), 1);
    run(&s, consumer(Variant::Correct), 0);
    let v = s.verify();
    assert_eq!(
        field(&v, "receiver.ledger"),
        20,
        "C1 and P1, not A1 nor T1: {v}"
    );

    // auto-ack: a consumer crash after its ack and before its commit loses the effect.
    send(&s, "K1", "MK1");
    run(&s, publisher(Variant::Correct), 0);
    let crash = crashing(consumer(Variant::AutoAck), "consumer.after-ack");
    run(&s, crash, 73);
    run(&s, consumer(Variant::AutoAck), 0);
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
            "sender",
            "--stack",
            "postgres-rabbitmq",
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
    let output = s.run(sender("R1", 5, "M1"));
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
    let words = sender("R1", 5, "M1").into_vec();
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
