//! The check on hand-made final files of a run on the servers (as `settle` leaves them):
//! what it counts, and what it calls each fault.

use rusqlite::Connection;

use super::super::super::schema::{PG_RECEIVER, PG_SENDER};
use super::super::settle::QUEUE_DDL;
use super::*;

const SHAPE: Shape = Shape {
    messages: 3,
    consumers: 2,
    batch: 1,
    seed: 5,
    lease_ms: 1,
    variant: None,
};

/// Final files where message i (from 1) was delivered `handled[i]` times over
/// `publishes[i]` publishes and credited `credits[i]` times; `ready` messages left queued.
fn files(dir: &Path, publishes: &[i64], handled: &[i64], credits: &[i64], ready: usize) {
    let amounts = crate::rng::amounts(SHAPE.seed, SHAPE.messages);
    let s = Connection::open(dir.join("sender")).unwrap();
    s.execute_batch(PG_SENDER.ddl).unwrap();
    let r = Connection::open(dir.join("receiver")).unwrap();
    r.execute_batch(PG_RECEIVER.ddl).unwrap();
    for (i, amount) in amounts.iter().enumerate() {
        let (c, m) = (format!("C{:06}", i + 1), format!("M{:06}", i + 1));
        s.execute(
            "INSERT INTO contracts VALUES (?1, ?2)",
            rusqlite::params![c, amount],
        )
        .unwrap();
        s.execute(
            "INSERT INTO outbox VALUES (?1, ?2, ?3, 'sent', 1)",
            rusqlite::params![m, c, amount],
        )
        .unwrap();
        if credits[i] > 0 {
            r.execute(
                "INSERT INTO inbox VALUES (?1, 'd', ?2, ?3, 'p', 1)",
                rusqlite::params![m, c, amount],
            )
            .unwrap();
            r.execute(
                "INSERT INTO ledger VALUES (?1, ?2, ?3)",
                rusqlite::params![c, amount * credits[i], credits[i]],
            )
            .unwrap();
        }
        for p in 0..publishes[i] {
            let first = if p == 0 {
                handled[i] - publishes[i] + 1
            } else {
                1
            };
            let outcome = if p == 0 && credits[i] > 0 {
                "applied"
            } else {
                "duplicate"
            };
            r.execute(
                "INSERT INTO receipts VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![format!("{m}-{p}"), m, outcome, i64::from(first > 1), first],
            )
            .unwrap();
        }
    }
    let q = Connection::open(dir.join("messages")).unwrap();
    q.execute_batch(QUEUE_DDL).unwrap();
    for n in 0..ready {
        q.execute(
            "INSERT INTO messages VALUES (?1, 'M000001', 1, '{}')",
            [n as i64 + 1],
        )
        .unwrap();
    }
}

fn names(found: &[crate::engine::jepsen::Found]) -> Vec<Anomaly> {
    found.iter().map(|f| f.anomaly).collect()
}

#[test]
fn a_redelivery_absorbed_by_the_inbox_is_the_one_allowed_anomaly() {
    let dir = tempfile::tempdir().unwrap();
    // M2 was published twice (a publisher crash after the confirm), M3 redelivered once.
    files(dir.path(), &[1, 2, 1], &[1, 2, 2], &[1, 1, 1], 0);
    let v = check(Stack::Servers, dir.path(), &SHAPE, &[]).unwrap();
    assert!(v.problems.is_empty(), "{:?}", v.problems);
    assert_eq!((v.lost, v.duplicated), (0, 0));
    assert_eq!(v.check["publishes"], 4);
    assert_eq!(v.check["physical_deliveries"], 5);
    assert_eq!(v.check["duplicate_deliveries"], 2);
    assert_eq!(v.check["redelivered"], 1);
    assert_eq!(v.check["duplicates_suppressed"], 2);
    assert_eq!(
        names(&v.anomalies),
        [Anomaly::DuplicateDelivery, Anomaly::DuplicateDelivery]
    );
    assert!(v.bad_anomalies.is_empty());
}

#[test]
fn a_lost_effect_a_doubled_effect_and_a_message_left_queued_are_each_found() {
    let dir = tempfile::tempdir().unwrap();
    // M1 never applied (acked before its effect: auto-ack), M2 credited twice, one left queued.
    files(dir.path(), &[0, 2, 1], &[0, 2, 1], &[0, 2, 1], 1);
    let v = check(Stack::Servers, dir.path(), &SHAPE, &[]).unwrap();
    assert_eq!((v.lost, v.duplicated), (1, 1));
    let bad = names(&v.bad_anomalies);
    assert!(bad.contains(&Anomaly::Duplicate), "{bad:?}");
    assert!(
        bad.contains(&Anomaly::LostWrite) || bad.contains(&Anomaly::Unseen),
        "{bad:?}"
    );
    let problems = v.problems.join("; ");
    for want in [
        "inbox is 2, expected 3",
        "queue_pending is 1, expected 0",
        "lost_effects is 1",
    ] {
        assert!(problems.contains(want), "{want}: {problems}");
    }
}

#[test]
fn applied_events_beyond_the_ledger_are_a_problem_and_a_missing_file_an_error() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path(), &[1, 1, 1], &[1, 1, 1], &[1, 1, 1], 0);
    let twice = [
        Event::Applied {
            item: "M000001".into(),
        },
        Event::Applied {
            item: "M000001".into(),
        },
    ];
    let v = check(Stack::Servers, dir.path(), &SHAPE, &twice).unwrap();
    // The ledger holds one credit: one effect, and one acknowledged commit that vanished.
    assert_eq!((v.lost, v.duplicated), (0, 0));
    assert!(
        v.problems.iter().any(|p| p
            == "M000001: 2 applied events, yet 1 credits in the ledger (an acknowledged commit lost)"),
        "{:?}",
        v.problems
    );
    // An effect acknowledged by its event whose commit the server lost: lost, not applied.
    let lost_commit = [Event::Applied {
        item: "M000001".into(),
    }];
    let gone = tempfile::tempdir().unwrap();
    files(gone.path(), &[1, 1, 1], &[1, 1, 1], &[0, 1, 1], 0);
    let v = check(Stack::Servers, gone.path(), &SHAPE, &lost_commit).unwrap();
    assert_eq!((v.lost, v.duplicated), (1, 0));
    assert!(
        names(&v.bad_anomalies).contains(&Anomaly::LostWrite),
        "{:?}",
        v.bad_anomalies
    );
    std::fs::remove_file(dir.path().join("messages")).unwrap();
    let e = check(Stack::Servers, dir.path(), &SHAPE, &[]).unwrap_err();
    assert!(format!("{e:#}").contains("messages is missing"), "{e:#}");
}

#[test]
fn events_are_counted_per_message() {
    let events = [
        Event::Applied {
            item: "M000001".into(),
        },
        Event::Duplicate {
            item: "M000001".into(),
        },
        Event::Applied {
            item: "M000002".into(),
        },
        Event::Rejected {
            item: "M000002".into(),
            reason: "payload conflict".into(),
        },
        Event::End { code: 0 },
    ];
    let seen = by_message(&events);
    assert_eq!(seen["M000001"], (1, 1, 0));
    assert_eq!(seen["M000002"], (1, 0, 1));
    assert_eq!(seen.len(), 2);
}
