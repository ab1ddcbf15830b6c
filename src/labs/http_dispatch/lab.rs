//! Lab 13 (http-dispatch) as data: its files, its crash points, its scenarios and the counts
//! each readback must show. The driver runs this; the audit re-checks evidence against it.
//!
//! Every scenario runs in its own work directory; the receiver is a background step (the
//! driver waits for its `ready` event and stops it with SIGTERM), and writes its port to
//! `receiver.port`, which the dispatcher and the raw client read.

use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::{crash_mode, Lab, LabStack};
use crate::fail::{EXIT_CONFLICT, EXIT_LOCKED, EXIT_OK, EXIT_UNAVAILABLE};
use crate::labs::http_dispatch::dispatcher::Unknown;
use crate::labs::http_dispatch::points::{self, POINTS};
use crate::labs::http_dispatch::receiver::Mode;
use crate::labs::http_dispatch::roles::{Dispatcher, Intent, Post, Receiver, Verify};
use crate::labs::http_dispatch::schema::{HISTORY_DB, INTENTS_DB, RECEIPTS_DB, RECEIVER_DB};
pub use crate::labs::http_dispatch::stages::{stage, STAGES};
use crate::role::{entry, Argv, Role};

pub static LAB: Lab = Lab {
    id: "13",
    slug: "http-dispatch",
    title: "Intent log, HTTP with Idempotency-Key: a clean history is not one effect",
    roles: &[
        entry::<Intent>(),
        entry::<Receiver>(),
        entry::<Dispatcher>(),
        entry::<Verify>(),
        entry::<Post>(),
    ],
    stacks: &[&ON_SQLITE],
};

pub static ON_SQLITE: LabStack = LabStack {
    lab: &LAB,
    title: "Intent log, HTTP with Idempotency-Key: a clean history is not one effect",
    points: POINTS,
    databases: &[INTENTS_DB, RECEIPTS_DB, HISTORY_DB, RECEIVER_DB],
    scenarios,
    stages: STAGES,
    store: crate::engine::state::SQLITE,
    roles: &[
        Intent::NAME,
        Receiver::NAME,
        Dispatcher::NAME,
        Verify::NAME,
        Post::NAME,
    ],
    load: None,
    explore: Some(&super::explore::PLAN),
    history: super::history::history,
    schemas: &[
        &super::schema::INTENTS,
        &super::schema::RECEIPTS,
        &super::schema::HISTORY,
        &super::schema::RECEIVER,
    ],
    readback: |phase, dbs| (phase == Verify::NAME).then(|| super::readback::replayed(dbs)),
    replay: super::replay::REPLAY,
    stack: None,
    crash_modes: crash_mode::ON_FILES,
};

const BODY: &str = r#"{"amount":25,"to":"R1"}"#;

/// A step that runs a role's argv to the given exit.
fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

/// Builds one scenario's steps; readback stages are looked up as `<scenario>.<step>`.
struct Build {
    name: &'static str,
    steps: Vec<Step>,
}

impl Build {
    fn new(name: &'static str) -> Build {
        Build {
            name,
            steps: Vec::new(),
        }
    }

    fn step(mut self, step: Step) -> Build {
        self.steps.push(step);
        self
    }

    fn intent(self) -> Build {
        let argv = Intent::of("K1", BODY).argv();
        self.step(step("intent", argv, EXIT_OK, Expect::Exit))
    }

    /// A receiver in the background, stopped with SIGTERM after `stop_after` (None: at the
    /// end), crashing at `crash` if any.
    fn receiver(
        self,
        name: &str,
        receiver: Receiver,
        stop_after: Option<&'static str>,
        crash: Option<Point>,
    ) -> Build {
        let argv = receiver.argv();
        let step = match crash {
            Some(point) => Step::crashing_at(name, &argv, point),
            None => step(name, argv, EXIT_OK, Expect::Output("STOPPED receiver")),
        };
        self.step(step.in_background(Background {
            ready: Ready::Listening,
            stop_after,
            stop: Stop::Term,
        }))
    }

    /// A receiver in `mode` until the end.
    fn serve(self, name: &str, mode: Mode) -> Build {
        self.receiver(name, Receiver::of(mode), None, None)
    }

    fn dispatch_with(self, name: &str, how: Dispatcher, exit: i32, expect: Expect) -> Build {
        self.step(step(name, how.argv(), exit, expect))
    }

    /// The dispatcher with its defaults (an attempt without a receipt is sent again).
    fn dispatch(self, name: &str, exit: i32, expect: Expect) -> Build {
        self.dispatch_with(name, Dispatcher::of(Unknown::Resend), exit, expect)
    }

    fn dispatch_crash(self, point: Point) -> Build {
        let argv = Dispatcher::of(Unknown::Resend).argv();
        self.step(Step::crashing_at("dispatch-crash", &argv, point))
    }

    fn post(self, name: &str, how: Post, status: &'static str) -> Build {
        self.step(step(name, how.argv(), EXIT_OK, Expect::Output(status)))
    }

    fn verify(self, name: &str) -> Build {
        let full = format!("{}.{name}", self.name);
        let stage = stage(&full).expect("every readback step has a stage");
        let argv = Verify::of(Some(stage.name)).argv();
        self.step(step(name, argv, EXIT_OK, Expect::Readback(stage)))
    }

    fn done(self) -> Scenario {
        Scenario::named(self.name, self.steps)
    }
}

/// The dispatcher crashes with the reply in hand, and a fresh one recovers.
fn dispatcher_crash(name: &'static str, mode: Mode, recover: Expect) -> Scenario {
    Build::new(name)
        .intent()
        .serve("receiver", mode)
        .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
        .verify("after-crash")
        .dispatch("dispatch-recover", EXIT_OK, recover)
        .verify("final")
        .done()
}

/// The receiver crashes after committing the effect, before replying; both restart.
fn receiver_crash(name: &'static str, mode: Mode) -> Scenario {
    Build::new(name)
        .intent()
        .receiver(
            "receiver-crash",
            Receiver::of(mode),
            Some("dispatch-lost"),
            Some(points::RECEIVER_AFTER_EFFECT_COMMIT),
        )
        .dispatch(
            "dispatch-lost",
            EXIT_UNAVAILABLE,
            Expect::Output("the receiver may have run it"),
        )
        .verify("after-crash")
        .serve("receiver-restart", mode)
        .dispatch(
            "dispatch-recover",
            EXIT_OK,
            Expect::Output("DISPATCHED delivered=1"),
        )
        .verify("final")
        .done()
}

/// The table of the issue, one scenario per row, in its order.
pub fn scenarios() -> Vec<Scenario> {
    let keyed = || Receiver::of(Mode::Keyed);
    vec![
        dispatcher_crash(
            "keyed-dispatcher-crash",
            Mode::Keyed,
            Expect::Output("status 200 replayed"),
        ),
        dispatcher_crash(
            "unkeyed-dispatcher-crash",
            Mode::Unkeyed,
            Expect::Output("RESEND key K1"),
        ),
        Build::new("keyed-receiver-restart")
            .intent()
            .receiver("receiver", keyed(), Some("dispatch-crash"), None)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .verify("after-crash")
            .serve("receiver-restart", Mode::Keyed)
            .dispatch(
                "dispatch-recover",
                EXIT_OK,
                Expect::Output("status 200 replayed"),
            )
            .verify("final")
            .done(),
        Build::new("receiver-unavailable")
            .intent()
            // Started and stopped at once: its port file names a port nobody listens on.
            .receiver("receiver-gone", keyed(), Some("receiver-gone"), None)
            .dispatch(
                "dispatch-unavailable",
                EXIT_UNAVAILABLE,
                Expect::Output("not reachable"),
            )
            .verify("after-unavailable")
            .serve("receiver", Mode::Keyed)
            .dispatch(
                "dispatch-recover",
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1"),
            )
            .verify("final")
            .done(),
        Build::new("key-conflict")
            .serve("receiver", Mode::Keyed)
            .post(
                "old-request",
                Post {
                    body: r#"{"amount":10,"to":"R1"}"#.to_string(),
                    ..Post::of(Some("K1"))
                },
                "STATUS 200",
            )
            .intent()
            .dispatch(
                "dispatch-conflict",
                EXIT_CONFLICT,
                Expect::Output("payload conflict"),
            )
            .verify("final")
            .done(),
        receiver_crash("keyed-receiver-crash", Mode::Keyed),
        receiver_crash("unkeyed-receiver-crash", Mode::Unkeyed),
        Build::new("two-dispatchers")
            .intent()
            // The receiver holds each request 1.5 s, so the first dispatcher holds the lock
            // while the second one starts.
            .receiver(
                "receiver",
                Receiver {
                    delay_ms: 1500,
                    ..keyed()
                },
                None,
                None,
            )
            .step(
                step(
                    "dispatch-first",
                    Dispatcher::of(Unknown::Resend).argv(),
                    EXIT_OK,
                    Expect::Output("DISPATCHED delivered=1"),
                )
                .in_background(Background {
                    ready: Ready::LockHeld,
                    stop_after: Some("dispatch-waiting"),
                    stop: Stop::Wait,
                }),
            )
            .dispatch(
                "dispatch-second",
                EXIT_LOCKED,
                Expect::Output("held by another dispatcher"),
            )
            .dispatch_with(
                "dispatch-waiting",
                Dispatcher {
                    lock_wait_ms: 20_000,
                    ..Dispatcher::of(Unknown::Resend)
                },
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=0"),
            )
            .verify("final")
            .done(),
        Build::new("key-expired")
            .intent()
            .receiver(
                "receiver",
                Receiver {
                    key_ttl_ms: Some(1),
                    ..keyed()
                },
                None,
                None,
            )
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch(
                "dispatch-recover",
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1 replayed=0"),
            )
            .verify("final")
            .done(),
        Build::new("bad-requests")
            .serve("receiver", Mode::Keyed)
            .post("invalid-key", Post::of(Some("K1;drop")), "STATUS 400")
            .post(
                "long-key",
                Post::of(Some(
                    "K12345678901234567890123456789012345678901234567890123456789012345",
                )),
                "STATUS 400",
            )
            .post("missing-key", Post::of(None), "STATUS 400")
            .post(
                "oversized-body",
                Post {
                    body_bytes: Some(4097),
                    ..Post::of(Some("K2"))
                },
                "STATUS 413",
            )
            .verify("final")
            .done(),
        Build::new("unkeyed-unknown-hold")
            .intent()
            .serve("receiver", Mode::Unkeyed)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch_with(
                "dispatch-hold",
                Dispatcher::of(Unknown::Hold),
                EXIT_OK,
                Expect::Output("marked unknown"),
            )
            .post(
                "reconcile",
                Post {
                    get_effect: true,
                    ..Post::of(Some("K1"))
                },
                "\"ran\":true",
            )
            .verify("final")
            .done(),
    ]
}
