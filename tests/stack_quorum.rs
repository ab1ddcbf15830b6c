//! Lab 14 on the server stack with the broker killed, and on a quorum queue
//! (`--queue-type quorum`), as a user runs them: a run that kills RabbitMQ runs every case on
//! a queue that survived a kill before the first case; the seed on a quorum queue prints the
//! seed's result, declares the queue as a quorum queue (trace and `servers.json`) and audits
//! PASS; explore on a quorum queue holds to its predictions. No server outlives a run.

mod common;
#[path = "stack_driver/place.rs"]
#[allow(dead_code)] // run_env is stack_driver's
mod place;

use common::{code, stderr, stdout};
use place::Place;

fn servers_json(place: &Place, out: &str) -> serde_json::Value {
    common::json(&place.path().join(out).join("servers.json"))
}

fn no_leftovers(place: &Place) {
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}

/// RabbitMQ 3.10 now and then loses a durable queue whose declare-ok came just before a
/// SIGKILL of the node; a case on such a queue read as a message the correct design lost.
/// A run that kills the broker settles its queue first (declared, the node killed and
/// restarted, the queue found again), then runs every case on it, purged per case.
#[test]
fn a_broker_kill_explore_runs_every_case_on_a_queue_that_survived_a_kill() {
    let place = Place::new("mqkill");
    let out = place.run(&[
        "explore",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--crash-mode",
        "server-kill",
        "--server",
        "rabbitmq",
        "--variants",
        "correct",
        "--points",
        "publisher.after-confirm,consumer.after-deliver",
        "--out",
        "ex",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("correct: every invariant holds"),
        "{}",
        stdout(&out)
    );
    let servers = servers_json(&place, "ex");
    assert_eq!(servers["queue_type"], "classic", "{servers}");
    assert_eq!(servers["queues_settled"], true, "{servers}");
    let kills = servers["kills"].as_array().unwrap();
    // publisher after-confirm @1 @2, consumer after-deliver @1 @2 @3.
    assert_eq!(kills.len(), 5, "{servers}");
    assert!(kills.iter().all(|k| k["server"] == "rabbitmq"));
    let rabbitmq = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == "rabbitmq")
        .unwrap();
    // One restart per kill, and the one that settled the queue before the first case.
    assert_eq!(
        rabbitmq["restart_wall_ms"].as_array().unwrap().len(),
        kills.len() + 1,
        "{servers}"
    );
    no_leftovers(&place);
}

#[test]
fn the_seed_on_a_quorum_queue_holds_and_audits_pass() {
    let place = Place::new("quorum");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--queue-type",
        "quorum",
        "--out",
        "ev",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let last = text
        .lines()
        .find(|l| l.starts_with("final-verify"))
        .unwrap_or_else(|| panic!("{text}"));
    for field in [
        "messages 0",
        "deliveries 2",
        "handled 3",
        "redelivered 1",
        "inbox 1",
        "ledger 25",
    ] {
        assert!(last.contains(field), "{field}: {last}");
    }
    assert!(text.contains("rejected 1"), "{text}");
    let audited = place.run(&["audit", "ev"]);
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));
    assert!(stdout(&audited).contains("PASS"), "{}", stdout(&audited));
    let servers = servers_json(&place, "ev");
    assert_eq!(servers["queue_type"], "quorum", "{servers}");
    assert_eq!(servers["queues_settled"], false, "{servers}");
    // The publisher declared the queue as a quorum queue, and says so in its trace.
    let publisher =
        std::fs::read_to_string(place.path().join("ev/publish-crash.stdout.txt")).unwrap();
    assert!(
        publisher.contains("DECLARED queue=messages durable=true type=quorum"),
        "{publisher}"
    );
    no_leftovers(&place);
}

/// Process crashes do not depend on the queue's type: on a quorum queue auto-ack breaks where
/// it does on a classic one, and transient holds.
#[test]
fn explore_on_a_quorum_queue_holds_to_its_predictions() {
    let place = Place::new("qexplore");
    let out = place.run(&[
        "explore",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--queue-type",
        "quorum",
        "--variants",
        "auto-ack,transient",
        "--points",
        "consumer.after-ack",
        "--out",
        "ex",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("auto-ack: predicted lost effect") && text.contains("consumer.after-ack @2"),
        "{text}"
    );
    assert!(text.contains("transient: every invariant holds"), "{text}");
    assert_eq!(servers_json(&place, "ex")["queue_type"], "quorum");
    no_leftovers(&place);
}

#[test]
fn a_queue_type_on_a_stack_without_a_broker_is_refused() {
    let place = Place::new("qbad");
    for args in [
        &["driver", "14", "--queue-type", "quorum", "--out", "ev"][..],
        &[
            "explore",
            "14",
            "--stack",
            "sqlite",
            "--queue-type",
            "quorum",
            "--out",
            "ev",
        ][..],
    ] {
        let out = place.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("crashlab: --queue-type"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!place.path().join("ev").exists());
    }
    let out = place.run(&["driver", "14", "--queue-type", "stream", "--out", "ev"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // A broker kill on a quorum queue: refused before any server starts (a restarted quorum
    // queue reads empty until its leader is elected).
    for command in ["driver", "explore"] {
        let args = [
            command,
            "14",
            "--stack",
            "postgres-rabbitmq",
            "--queue-type",
            "quorum",
            "--crash-mode",
            "server-kill",
            "--server",
            "rabbitmq",
            "--out",
            "ev",
        ];
        let out = place.run(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("crashlab: --queue-type quorum with --server rabbitmq kills"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!place.path().join("ev").exists());
    }
    no_leftovers(&place);
}
