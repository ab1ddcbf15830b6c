//! Lab f2 (poison) as data: its files, its crash points, its two scenarios (one per design of
//! the consumer) and the state each readback must show.

use super::model::Variant;
use super::points::{self, POINTS};
use super::roles::{Consume, Produce, Replay, Verify, QUEUE, RECEIVER};
use crate::crash::Point;
use crate::engine::scenario::{Expect, Scenario, Step};
use crate::engine::{crash_mode, Lab, LabStack};
use crate::fail::{EXIT_FAILED, EXIT_OK};
use crate::role::{entry, Argv, Role, Stage};

pub static LAB: Lab = Lab {
    id: "f2",
    slug: "poison",
    title: "Poison message: retry forever stalls the queue, retry then park applies the rest",
    roles: &[
        entry::<Produce>(),
        entry::<Consume>(),
        entry::<Replay>(),
        entry::<Verify>(),
    ],
    stacks: &[&ON_SQLITE],
};

pub static ON_SQLITE: LabStack = LabStack {
    lab: &LAB,
    title: "Poison message: retry forever stalls the queue, retry then park applies the rest",
    points: POINTS,
    databases: &[QUEUE, RECEIVER],
    scenarios,
    stages: STAGES,
    store: crate::engine::state::SQLITE,
    roles: &[Produce::NAME, Consume::NAME, Replay::NAME, Verify::NAME],
    load: None,
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[&super::schema::QUEUE, &super::schema::RECEIVER],
    readback: super::readback::replayed,
    replay: super::replay::REPLAY,
    stack: None,
    crash_modes: crash_mode::ON_FILES_NO_CUT,
};

/// The messages of every run: M2 is the poison (over the receiver's limit of 1000).
pub const AMOUNTS: &[i64] = &[25, 5000, 30, 40];
pub const POISON: &str = "M2";
/// The operator's correction of the poison's payload.
pub const FIXED_AMOUNT: i64 = 500;

pub static STAGES: &[Stage] = &[
    Stage {
        name: "skip-after-attempt",
        fields: &[
            ("queue.done", 1),
            ("queue.pending", 3),
            ("queue.failures", 1),
            ("queue.parked", 0),
            ("receiver.credits", 1),
        ],
    },
    Stage {
        name: "skip-after-park",
        fields: &[
            ("queue.done", 1),
            ("queue.pending", 2),
            ("queue.parked", 1),
            ("queue.failures", 3),
            ("queue.dead_parked", 1),
            ("receiver.credits", 1),
        ],
    },
    Stage {
        name: "skip-after-drain",
        fields: &[
            ("queue.done", 3),
            ("queue.pending", 0),
            ("queue.parked", 1),
            ("queue.dead_parked", 1),
            ("receiver.credits", 3),
            ("receiver.total", 95),
        ],
    },
    Stage {
        name: "skip-after-replay-credit",
        fields: &[
            ("queue.parked", 1),
            ("queue.dead_parked", 1),
            ("receiver.credits", 4),
            ("receiver.total", 595),
        ],
    },
    Stage {
        name: "skip-final",
        fields: &[
            ("queue.messages", 4),
            ("queue.done", 4),
            ("queue.pending", 0),
            ("queue.parked", 0),
            ("queue.dead_replayed", 1),
            ("receiver.credits", 4),
            ("receiver.total", 595),
        ],
    },
    Stage {
        name: "forever-after-attempt",
        fields: &[
            ("queue.done", 1),
            ("queue.pending", 3),
            ("queue.failures", 2),
            ("receiver.credits", 1),
        ],
    },
    Stage {
        name: "forever-stalled",
        fields: &[
            ("queue.done", 1),
            ("queue.pending", 3),
            ("queue.parked", 0),
            ("queue.dead_letters", 0),
            ("queue.failures", 5),
            ("receiver.credits", 1),
            ("receiver.total", 25),
        ],
    },
];

fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

/// A step that crashes at the `hit`-th time it reaches `point`.
fn crashing(name: &str, argv: Argv, point: Point, hit: u32) -> Step {
    let mut s = Step::crashing_at(name, &argv, point);
    if hit > 1 {
        s.crash = Some(format!("{}@{hit}", point.name));
    }
    s
}

/// The consumer crashed once its `hit`th failed attempt is recorded in the queue.
fn attempt_crash(consume: Argv, hit: u32) -> Step {
    crashing(
        "attempt-crash",
        consume,
        points::CONSUME_AFTER_ATTEMPT_COMMIT,
        hit,
    )
}

fn verify(name: &'static str) -> Step {
    let stage = *STAGES
        .iter()
        .find(|s| s.name == name)
        .expect("every readback step has a stage");
    step(
        name,
        Verify::of(Some(name)).argv(),
        EXIT_OK,
        Expect::Readback(stage),
    )
}

fn produce() -> Step {
    step(
        "produce",
        Produce::of(AMOUNTS).argv(),
        EXIT_OK,
        Expect::Exit,
    )
}

fn skip() -> Vec<Step> {
    let consume = || Consume::of(Variant::RetryThenSkip).argv();
    let fixed = || Replay::of(POISON, Some(FIXED_AMOUNT)).argv();
    vec![
        produce(),
        attempt_crash(consume(), 1),
        verify("skip-after-attempt"),
        crashing(
            "park-crash",
            consume(),
            points::CONSUME_AFTER_PARK_COMMIT,
            1,
        ),
        verify("skip-after-park"),
        step(
            "consume-recover",
            consume(),
            EXIT_OK,
            Expect::Output("CONSUMED applied=2"),
        ),
        verify("skip-after-drain"),
        step(
            "replay-unfixed",
            Replay::of(POISON, None).argv(),
            EXIT_FAILED,
            Expect::Output("still fails"),
        ),
        crashing(
            "replay-crash",
            fixed(),
            points::REPLAY_AFTER_APPLY_COMMIT,
            1,
        ),
        verify("skip-after-replay-credit"),
        step(
            "replay-recover",
            fixed(),
            EXIT_OK,
            Expect::Output("REPLAYED message M2"),
        ),
        verify("skip-final"),
        step(
            "replay-again",
            fixed(),
            EXIT_OK,
            Expect::Output("ALREADY message M2"),
        ),
    ]
}

fn forever() -> Vec<Step> {
    let consume = || Consume::of(Variant::RetryForever).argv();
    vec![
        produce(),
        attempt_crash(consume(), 2),
        verify("forever-after-attempt"),
        step(
            "consume-stall",
            consume(),
            EXIT_OK,
            Expect::Output("STALLED message M2"),
        ),
        verify("forever-stalled"),
    ]
}

/// One scenario per design of the consumer, each crashed on its retry/park path.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::named(Variant::RetryThenSkip.name(), skip()),
        Scenario::named(Variant::RetryForever.name(), forever()),
    ]
}
