//! The pure checks: good traces pass; each broken one gives its finding.

use super::amqp::{self, Op};
use super::scene::Proc;
use super::{cross, pg, queue};

fn proc(index: usize, lines: &[&str], ended_well: bool) -> Proc {
    let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let ops = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| amqp::parse(l).map(|op| (i + 1, op.expect("a good AMQP line"))))
        .collect();
    Proc {
        label: format!("step{index}"),
        file: format!("step{index}.stdout.txt"),
        index,
        last: index,
        background: false,
        ended_well,
        lines,
        ops,
        bad: Vec::new(),
    }
}

const SENDER: &[&str] = &[
    "SQL sender BEGIN",
    "SQL sender INSERT INTO outbox(message_id, contract_id, amount) VALUES ('M1', 'R1', 25)",
    "SQL sender COMMIT",
];
const PUBLISH: &[&str] = &[
    "AMQP publish queue=messages message=M1 publish=pA tag=1 persistent=true",
    "AMQP confirm message=M1 tag=1 ack",
];
const CONSUME: &[&str] = &[
    "AMQP deliver queue=messages message=M1 publish=pA tag=1 redelivered=false auto_ack=false",
    "AMQP ack message=M1 tag=1",
];

fn protocol(lines: &[&str], ended_well: bool) -> Vec<String> {
    let p = proc(0, lines, ended_well);
    amqp::protocol(&p.ops, ended_well)
        .into_iter()
        .map(|(_, why)| why)
        .collect()
}

#[test]
fn lines_parse_as_the_roles_write_them() {
    let op = amqp::parse(PUBLISH[0]).unwrap().unwrap();
    assert_eq!(
        op,
        Op::Publish {
            queue: "messages".into(),
            message: "M1".into(),
            publish: "pA".into(),
            tag: 1,
            persistent: true
        }
    );
    assert!(amqp::parse("SQL sender BEGIN").is_none());
    assert!(amqp::parse("AMQP publish message=M1").unwrap().is_err());
    assert!(amqp::parse("AMQP frobnicate x=1").unwrap().is_err());
    assert!(amqp::parse(CONSUME[0].replace("tag=1", "tag=x").as_str())
        .unwrap()
        .is_err());
}

#[test]
fn a_good_channel_passes() {
    assert!(protocol(PUBLISH, true).is_empty());
    assert!(protocol(CONSUME, true).is_empty());
    let nack = "AMQP nack message=M1 tag=1 requeue=false";
    assert!(protocol(&[CONSUME[0], nack], true).is_empty());
    // A killed publisher may die before its confirm.
    assert!(protocol(&PUBLISH[..1], false).is_empty());
}

#[test]
fn each_broken_channel_gives_its_finding() {
    let found = protocol(&["AMQP confirm message=M1 tag=1 ack"], true);
    assert!(found[0].contains("never published"), "{found:?}");
    let found = protocol(&[PUBLISH[0], PUBLISH[1], PUBLISH[1]], true);
    assert!(found[0].contains("already confirmed"), "{found:?}");
    let found = protocol(&[&PUBLISH[0].replace("tag=1", "tag=2")], false);
    assert!(found[0].contains("this channel's publish 1"), "{found:?}");
    let found = protocol(&[&CONSUME[0].replace("tag=1", "tag=3")], false);
    assert!(found[0].contains("this channel's delivery 1"), "{found:?}");
    let found = protocol(&[CONSUME[0], "AMQP ack message=M1 tag=2"], true);
    assert!(found[0].contains("never delivered"), "{found:?}");
    let found = protocol(&[CONSUME[0], CONSUME[1], CONSUME[1]], true);
    assert!(found[0].contains("already settled"), "{found:?}");
    let auto = CONSUME[0].replace("auto_ack=false", "auto_ack=true");
    let found = protocol(&[&auto, CONSUME[1]], true);
    assert!(found[0].contains("never delivered"), "{found:?}");
    let found = protocol(&[CONSUME[0], "AMQP ack message=M2 tag=1"], true);
    assert!(found[0].contains("that delivery was M1"), "{found:?}");
    let select = "AMQP confirm-select queue=messages";
    let found = protocol(&[select, PUBLISH[0]], true);
    assert!(found[0].contains("never confirmed"), "{found:?}");
    assert!(protocol(&[select, PUBLISH[0], PUBLISH[1]], true).is_empty());
    let found = protocol(&[PUBLISH[0], select, PUBLISH[1]], true);
    assert!(
        found
            .iter()
            .any(|f| f.contains("after this channel published")),
        "{found:?}"
    );
}

fn run(steps: &[(&[&str], bool)]) -> Vec<Proc> {
    steps
        .iter()
        .enumerate()
        .map(|(i, (lines, well))| proc(i, lines, *well))
        .collect()
}

fn texts(found: cross::Found) -> Vec<String> {
    found.into_iter().map(|(_, t)| t).collect()
}

#[test]
fn deliveries_of_what_was_published_pass() {
    let procs = run(&[(SENDER, true), (PUBLISH, true), (CONSUME, true)]);
    assert!(cross::deliveries(&procs).is_empty());
    assert!(cross::published_rows(&procs).is_empty());
}

#[test]
fn a_delivery_nobody_published_before_is_found() {
    let other = CONSUME[0].replace("publish=pA", "publish=pZ");
    let found = texts(cross::deliveries(&run(&[
        (PUBLISH, true),
        (&[&other], false),
    ])));
    assert!(
        found[0].contains("no process of the scenario published"),
        "{found:?}"
    );
    // Delivered in a step before the one that published it.
    let found = texts(cross::deliveries(&run(&[(CONSUME, true), (PUBLISH, true)])));
    assert!(
        found[0].contains("before any process published it"),
        "{found:?}"
    );
    let m2 = CONSUME[0].replace("message=M1", "message=M2");
    let found = texts(cross::deliveries(&run(&[(PUBLISH, true), (&[&m2], false)])));
    assert!(found[0].contains("that publish was of M1"), "{found:?}");
    // A second delivery of one publish is marked redelivered.
    let found = texts(cross::deliveries(&run(&[
        (PUBLISH, true),
        (&CONSUME[..1], false),
        (CONSUME, true),
    ])));
    assert!(found[0].contains("redelivered=false"), "{found:?}");
}

/// A relay: it reads its database, then publishes.
fn relay<'a>(publish: &[&'a str]) -> Vec<&'a str> {
    let mut lines = vec!["SQL sender SELECT message_id FROM outbox WHERE status = 'pending'"];
    lines.extend_from_slice(publish);
    lines
}

#[test]
fn a_publish_of_no_committed_row_is_found() {
    let publish = relay(PUBLISH);
    let procs = run(&[(SENDER, true), (&publish, true)]);
    assert!(cross::published_rows(&procs).is_empty());
    // An upstream that runs no SQL is not held to rows.
    assert!(cross::published_rows(&run(&[(PUBLISH, true)])).is_empty());
    let rolled = ["SQL sender BEGIN", SENDER[1], "SQL sender ROLLBACK"];
    let found = texts(cross::published_rows(&run(&[
        (&rolled, true),
        (&publish, true),
    ])));
    assert!(found[0].contains("no committed INSERT"), "{found:?}");
    // Committed after the publish: no Outbox row existed when it left.
    let found = texts(cross::published_rows(&run(&[
        (&publish, true),
        (SENDER, true),
    ])));
    assert_eq!(found.len(), 1, "{found:?}");
    // A killed sender's open transaction was never committed.
    let found = texts(cross::published_rows(&run(&[
        (&SENDER[..2], false),
        (&publish, true),
    ])));
    assert_eq!(found.len(), 1, "{found:?}");
}

fn bounds(procs: &[Proc], k: usize, killed: bool) -> (u64, u64) {
    let b = queue::bounds(procs, "messages", k, killed);
    (b.lo, b.hi)
}

#[test]
fn the_ready_count_follows_the_trace() {
    let procs = run(&[
        (SENDER, true),
        (PUBLISH, true),
        (PUBLISH, true),
        (CONSUME, true),
    ]);
    assert_eq!(bounds(&procs, 0, false), (0, 0));
    assert_eq!(bounds(&procs, 1, false), (1, 1));
    assert_eq!(bounds(&procs, 2, false), (2, 2));
    assert_eq!(bounds(&procs, 3, false), (1, 1));
    // The broker killed: messages may be lost, never made.
    assert_eq!(bounds(&procs, 3, true), (0, 1));
}

#[test]
fn what_a_killed_process_did_last_is_bounded() {
    // Killed before its confirm: the message may or may not be stored.
    let procs = run(&[(&PUBLISH[..1], false)]);
    assert_eq!(bounds(&procs, 0, false), (0, 1));
    // Delivered later, so stored: surely from the step after its publisher's.
    let procs = run(&[(&PUBLISH[..1], false), (&[], true), (&CONSUME[..1], true)]);
    assert_eq!(bounds(&procs, 0, false), (0, 1));
    assert_eq!(bounds(&procs, 1, false), (1, 1));
    // Killed holding a delivery: requeued, maybe not yet at its own step's snapshot.
    let procs = run(&[(PUBLISH, true), (&CONSUME[..1], false), (&[], true)]);
    assert_eq!(bounds(&procs, 1, false), (0, 1));
    assert_eq!(bounds(&procs, 2, false), (1, 1));
    // Killed right after its ack: the ack may have died in its socket.
    let procs = run(&[(PUBLISH, true), (CONSUME, false)]);
    assert_eq!(bounds(&procs, 1, false), (0, 1));
    // One copy settled on two channels (the first one's closed by the broker) leaves once.
    let other = [
        "AMQP publish queue=messages message=M2 publish=pB tag=1 persistent=true",
        "AMQP confirm message=M2 tag=1 ack",
    ];
    let procs = run(&[
        (PUBLISH, true),
        (&other, true),
        (CONSUME, true),
        (CONSUME, true),
    ]);
    assert_eq!(bounds(&procs, 3, false), (1, 1));
    // An auto-ack delivery is gone when it is handed over.
    let auto = CONSUME[0].replace("auto_ack=false", "auto_ack=true");
    let procs = run(&[(PUBLISH, true), (&[&auto], false)]);
    assert_eq!(bounds(&procs, 1, false), (0, 0));
}

#[test]
fn insert_values_split_outside_quotes() {
    let values = pg::insert_values(
        "INSERT INTO outbox(id, body, xid) VALUES (8, '{\"a\":1, \"b\":(2)}', 752) ON CONFLICT (id) DO NOTHING",
    );
    assert_eq!(values, vec!["8", "'{\"a\":1, \"b\":(2)}'", "752"]);
}

const WRITER: &[&str] = &[
    "SQL outbox BEGIN",
    "SEQUENCE outbox outbox_id_seq 7",
    "XID outbox 740",
    "SQL outbox INSERT INTO outbox(id, writer, xid) VALUES (7, 'A', 740)",
    "SQL outbox COMMIT",
];

fn in_process(lines: &[&str], well: bool) -> Vec<String> {
    texts(pg::in_process(&proc(0, lines, well)))
}

#[test]
fn postgres_facts_beside_their_sql() {
    assert!(in_process(WRITER, true).is_empty());
    let other = WRITER[3].replace("(7,", "(9,");
    let found = in_process(&[WRITER[0], WRITER[1], WRITER[2], &other, WRITER[4]], true);
    assert!(found[0].contains("does not bind 7"), "{found:?}");
    let found = in_process(&[WRITER[2]], true);
    assert!(found[0].contains("outside a transaction"), "{found:?}");
    let found = in_process(&WRITER[..2], true);
    assert!(found[0].contains("bound by no INSERT"), "{found:?}");
    assert!(in_process(&WRITER[..2], false).is_empty());
    let again = [WRITER, &["SQL outbox BEGIN", "XID outbox 739"]].concat();
    let found = in_process(&again, false);
    assert!(found[0].contains("xid 739 after 740"), "{found:?}");
}

#[test]
fn postgres_facts_across_processes() {
    let created: &[&str] = &["SEQUENCE-CREATED outbox outbox_id_seq start 7"];
    let b = [
        "SQL outbox BEGIN",
        "SEQUENCE outbox outbox_id_seq 8",
        "XID outbox 741",
        "SQL outbox INSERT INTO outbox(id, writer, xid) VALUES (8, 'B', 741)",
        "SQL outbox COMMIT",
    ];
    let procs = run(&[(created, true), (WRITER, true), (&b, true)]);
    assert!(pg::across(&procs, false).is_empty());
    let procs = run(&[(created, true), (WRITER, true), (WRITER, true)]);
    let found = texts(pg::across(&procs, false));
    assert!(
        found.iter().any(|f| f.contains("gave 7 again")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("xid 740 is also")),
        "{found:?}"
    );
    // A PostgreSQL kill may hand out an unlogged xid or sequence value again.
    assert!(pg::across(&procs, true).is_empty());
    let low = WRITER[1].replace(" 7", " 5");
    let procs = run(&[(created, true), (&[&low], false)]);
    let found = texts(pg::across(&procs, false));
    assert!(found[0].contains("below its start 7"), "{found:?}");
    let procs = run(&[
        (&["HORIZON outbox 743"], true),
        (&["HORIZON outbox 740"], true),
    ]);
    let found = texts(pg::across(&procs, false));
    assert!(found[0].contains("horizon 740, back from 743"), "{found:?}");
    let procs = run(&[
        (&["HORIZON outbox 740"], true),
        (&["HORIZON outbox 743"], true),
    ]);
    assert!(pg::across(&procs, false).is_empty());
}
