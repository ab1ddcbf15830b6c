//! Lab f1 (relay-gap) as data: its databases, its points, its scenarios and the counts each
//! readback must show. The driver runs this on a PostgreSQL server (`stack`); the audit
//! re-checks evidence against it.
//!
//! Each scenario, one per relay design, with its own databases: writer A takes id 7 from
//! the sequence and inserts its row, and the pause nemesis stops it right there, its
//! transaction open; writer B takes 8 and commits; the relay polls; A is continued and
//! commits 7; the relay polls again. The schedule is the stop's doing, never timing.
//! `last-id` publishes 8, remembers 8, and never reads 7 (`unseen`); `pending-status`
//! publishes 8, then 7; `xid-horizon` publishes nothing while A is open, then 7 and 8.

use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::stack::StackDef;
use crate::engine::state::server::ServerStore;
use crate::engine::{crash_mode, Lab, LabStack};
use crate::fail::EXIT_OK;
use crate::labs::relay_gap::points::{self, POINTS};
use crate::labs::relay_gap::relay::{Variant, VARIANTS};
use crate::labs::relay_gap::roles::{Init, Relay, Verify, Write, OUTBOX_DB, RECEIVER_DB};
pub use crate::labs::relay_gap::stages::{stage, STAGES};
use crate::role::{entry, Role};

static STORE: ServerStore = ServerStore {
    schemas: &[&super::schema::OUTBOX, &super::schema::RECEIVER],
};

/// PostgreSQL alone, with its defaults: the gap needs nothing but two concurrent writers.
pub static STACK: StackDef = StackDef {
    name: "postgres",
    databases: &[OUTBOX_DB, RECEIVER_DB],
    queues: &[],
    pg_settings: &[],
};

pub static LAB: Lab = Lab {
    id: "f1",
    slug: "relay-gap",
    title: "Relay by last id seen: a row that commits after a higher id is skipped for ever",
    roles: &[
        entry::<Init>(),
        entry::<Write>(),
        entry::<Relay>(),
        entry::<Verify>(),
    ],
    stacks: &[&ON_SERVERS],
};

pub static ON_SERVERS: LabStack = LabStack {
    lab: &LAB,
    title: "Relay by last id seen: a row that commits after a higher id is skipped for ever",
    points: POINTS,
    databases: &[OUTBOX_DB, RECEIVER_DB],
    scenarios,
    stages: STAGES,
    store: &STORE,
    roles: &[Init::NAME, Write::NAME, Relay::NAME, Verify::NAME],
    load: None,
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[&super::schema::OUTBOX, &super::schema::RECEIVER],
    readback: |phase, dbs| (phase == Verify::NAME).then(|| super::readback::replayed(dbs)),
    replay: super::replay::REPLAY,
    stack: Some(&STACK),
    crash_modes: crash_mode::ON_SERVERS,
};

/// The two writers' bodies.
pub const BODY_A: &str = r#"{"order":"A","amount":25}"#;
pub const BODY_B: &str = r#"{"order":"B","amount":40}"#;

fn verify(scenario: &str, step: &str) -> Step {
    let stage = stage(&format!("{scenario}.{step}")).expect("every readback step has a stage");
    Step::of(
        step,
        &Verify::of(Some(stage.name)).argv(),
        EXIT_OK,
        Expect::Readback(stage),
    )
}

/// What each poll prints that shows the design: (first poll, second poll).
fn polls(variant: &str) -> (&'static str, &'static str) {
    match variant {
        "last-id" => ("PUBLISHED message 8", "READ 0 -"),
        "pending-status" => ("PUBLISHED message 8", "PUBLISHED message 7"),
        _ => ("READ 0 -", "PUBLISHED message 7"),
    }
}

/// One design under the forced schedule.
fn late_commit(variant: &'static str) -> Scenario {
    let (first, second) = polls(variant);
    let relay = Relay::of(Variant::named(variant)).argv();
    let steps = vec![
        Step::of("init", &Init::of().argv(), EXIT_OK, Expect::Exit),
        Step::of(
            "writer-a",
            &Write::of("A", BODY_A, Some(points::WRITE_AFTER_INSERT)).argv(),
            EXIT_OK,
            Expect::Output("COMMITTED outbox write of message 7 by A"),
        )
        .in_background(Background {
            ready: Ready::Paused,
            stop_after: Some("during-pause"),
            stop: Stop::Continue,
        }),
        Step::of(
            "writer-b",
            &Write::of("B", BODY_B, None).argv(),
            EXIT_OK,
            Expect::Output("COMMITTED outbox write of message 8 by B"),
        ),
        Step::of("relay-1", &relay, EXIT_OK, Expect::Output(first)),
        verify(variant, "during-pause"),
        // A was continued after `during-pause` and has committed 7.
        Step::of("relay-2", &relay, EXIT_OK, Expect::Output(second)),
        verify(variant, "final"),
    ];
    Scenario::named(variant, steps)
}

/// Every design under the same schedule.
pub fn scenarios() -> Vec<Scenario> {
    VARIANTS.iter().map(|v| late_commit(v)).collect()
}

/// The scenario that shows the loss on purpose.
pub fn expects_unseen(scenario: &str) -> bool {
    scenario == "last-id"
}
