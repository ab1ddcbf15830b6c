//! Each role's argv, and its parsing back.

use super::*;
use crate::role::parses_back;

#[test]
fn each_role_spells_its_flags_with_defaults_left_out() {
    assert_eq!(
        Intent::of("K1", "{}").argv().into_vec().join(" "),
        "intent --intents intents.db --key K1 --body {}"
    );
    let r = Receiver {
        delay_ms: 1500,
        ..Receiver::of(Mode::Keyed)
    };
    assert_eq!(r.argv().role(), "receiver");
    assert_eq!(
        r.argv().args().join(" "),
        "--db receiver.db --mode keyed --port-file receiver.port --delay-ms 1500"
    );
    assert_eq!(
        Dispatcher::of(Unknown::Hold).argv().args().join(" "),
        "--intents intents.db --receipts receipts.db --history history.db --port-file receiver.port --unknown hold"
    );
    assert_eq!(
        Dispatcher::of(Unknown::Resend).argv().args().join(" "),
        "--intents intents.db --receipts receipts.db --history history.db --port-file receiver.port"
    );
    let p = Post {
        get_effect: true,
        ..Post::of(Some("K1"))
    };
    assert_eq!(
        p.argv().args().join(" "),
        "--port-file receiver.port --key K1 --get-effect"
    );
    assert_eq!(
        Verify::of(Some("s.final")).argv().args().join(" "),
        "--intents intents.db --receipts receipts.db --history history.db --receiver receiver.db --json --expect s.final"
    );
}

/// Each role's argv parses back into the very same values.
#[test]
fn every_argv_parses_back_into_its_role() {
    parses_back(&Intent::of("K1", "{}"));
    parses_back(&Receiver {
        key_ttl_ms: Some(1),
        delay_ms: 1,
        lifetime_ms: 1000,
        workers: 2,
        ..Receiver::of(Mode::Unkeyed)
    });
    parses_back(&Receiver {
        port: 8080,
        port_file: None,
        ..Receiver::of(Mode::Keyed)
    });
    parses_back(&Dispatcher {
        lock: Some("d.lock".into()),
        lock_wait_ms: 1,
        timeout_ms: 100,
        ..Dispatcher::of(Unknown::Hold)
    });
    parses_back(&Dispatcher {
        peer: Peer {
            port: Some(8080),
            port_file: None,
        },
        ..Dispatcher::of(Unknown::Resend)
    });
    parses_back(&Post {
        body_bytes: Some(10),
        ..Post::of(None)
    });
    parses_back(&Post {
        body: r#"{"amount":10}"#.into(),
        timeout_ms: 1,
        ..Post::of(Some("K1;drop"))
    });
    parses_back(&Verify::of(None));
    parses_back(&Verify::of(Some("s.final")));
}
