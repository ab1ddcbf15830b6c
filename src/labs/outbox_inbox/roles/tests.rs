//! Each role's argv, from its one struct: flags spelled as clap reads them, defaults left
//! out, parsing back to the same values on both stacks.

use super::*;
use crate::role::parses_back;

#[test]
fn each_role_spells_its_flags_with_defaults_left_out() {
    let argv = |r: crate::role::Argv| r.into_vec().join(" ");
    assert_eq!(
        argv(Sender::one(Stack::Sqlite, "R1", 25, "M1").argv()),
        "sender --db sender.db --contract R1 --amount 25 --message M1"
    );
    assert_eq!(
        argv(
            Sender {
                batch: 50,
                ..Sender::generate(Stack::Sqlite, 3, 7)
            }
            .argv()
        ),
        "sender --db sender.db --generate 3 --seed 7 --batch 50"
    );
    assert_eq!(
        argv(Sender::one(Stack::Servers, "R1", 25, "M1").argv()),
        "sender --stack postgres-rabbitmq --db sender --contract R1 --amount 25 --message M1"
    );
    assert_eq!(
        argv(Publisher::of(Stack::Sqlite, Variant::MarkBeforeSend).argv()),
        "publisher --sender sender.db --queue queue.db --variant mark-before-send"
    );
    assert_eq!(
        argv(Publisher::of(Stack::Servers, Variant::NoConfirm).argv()),
        "publisher --stack postgres-rabbitmq --sender sender --queue messages --variant no-confirm"
    );
    let c = Consumer {
        consumer_id: Some("c2".into()),
        lease_ms: Some(100),
        ..Consumer::of(Stack::Sqlite, Variant::Correct)
    };
    assert_eq!(
        argv(c.argv()),
        "consumer --queue queue.db --receiver receiver.db --consumer-id c2 --lease-ms 100"
    );
    assert_eq!(
        argv(Consumer::of(Stack::Servers, Variant::Correct).argv()),
        "consumer --stack postgres-rabbitmq --queue messages --receiver receiver"
    );
    assert_eq!(
        argv(Verify::of(Stack::Sqlite, Some("final-verify")).argv()),
        "verify --sender sender.db --queue queue.db --receiver receiver.db --json --expect final-verify"
    );
    assert_eq!(
        argv(Enqueue::of(Stack::Sqlite, "M1", "R1", 99).argv()),
        "enqueue --queue queue.db --message M1 --contract R1 --amount 99"
    );
}

/// Each role's argv parses back into the very same values, on both stacks.
#[test]
fn every_argv_parses_back_into_its_role() {
    for stack in Stack::ALL {
        parses_back(&Sender::one(stack, "R1", 1, "M1"));
        parses_back(&Sender::generate(stack, 2, 9));
        parses_back(&Publisher::of(stack, Variant::Correct));
        parses_back(&Consumer {
            consumer_id: Some("c3".into()),
            inbox_retention_ms: Some(0),
            ..Consumer::of(stack, Variant::AutoAck)
        });
        parses_back(&Enqueue::of(stack, "M1", "C1", 5));
        parses_back(&Verify::of(stack, None));
        parses_back(&Verify::of(stack, Some("after-business")));
    }
}
