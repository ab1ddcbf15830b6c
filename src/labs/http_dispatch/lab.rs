//! Lab 13 (http-dispatch) as data: its files, its crash points, its scenarios and the counts
//! each readback must show. The driver runs this; the audit re-checks evidence against it.
//!
//! Every scenario runs in its own work directory; the receiver is a background step (the
//! driver waits for its `ready` event and stops it with SIGTERM), and writes its port to
//! `receiver.port`, which the dispatcher and the raw client read.

use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Step, Stop};
use crate::engine::Lab;
use crate::fail::{EXIT_CONFLICT, EXIT_LOCKED, EXIT_OK, EXIT_UNAVAILABLE};
use crate::labs::http_dispatch::points::{self, POINTS};
use crate::labs::http_dispatch::roles::{self, Argv, Dispatch, Post, Serve, FILES};
pub use crate::labs::http_dispatch::stages::{stage, STAGES};

pub static LAB: Lab = Lab {
    id: "13",
    slug: "http-dispatch",
    title: "Intent log, HTTP with Idempotency-Key: a clean history is not one effect",
    points: POINTS,
    databases: &["intents.db", "receipts.db", "history.db", "receiver.db"],
    scenarios,
    stages: STAGES,
    store: crate::engine::state::SQLITE,
    roles: &[
        "intent",
        "receiver",
        "dispatcher",
        "dispatch-verify",
        "dispatch-post",
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
    readback: super::readback::replayed,
    replay: super::replay::REPLAY,
    cli: crate::engine::RoleCli {
        augment: super::commands::augment,
        run: super::route::run,
    },
    stack: None,
};

const BODY: &str = r#"{"amount":25,"to":"R1"}"#;

/// A step that runs a role's argv to the given exit.
fn step(name: &str, argv: Argv, exit: i32, expect: Expect) -> Step {
    Step::of(name, &argv, exit, expect)
}

/// A step that runs a role's argv and crashes at `point`.
fn crashing(name: &str, argv: Argv, point: Point) -> Step {
    Step::crashing_at(name, &argv, point)
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

    fn intent(self, body: &'static str) -> Build {
        self.step(step(
            "intent",
            roles::intent(&FILES, "K1", body),
            EXIT_OK,
            Expect::Exit,
        ))
    }

    /// A receiver in the background, stopped with SIGTERM after `stop_after` (None: at the end).
    fn receiver(
        self,
        name: &str,
        mode: &'static str,
        serve: Serve,
        stop_after: Option<&'static str>,
        crash: Option<Point>,
    ) -> Build {
        let argv = roles::receiver(&FILES, mode, &serve);
        let step = match crash {
            Some(point) => crashing(name, argv, point),
            None => step(name, argv, EXIT_OK, Expect::Output("STOPPED receiver")),
        };
        self.step(step.in_background(Background {
            ready: Ready::Listening,
            stop_after,
            stop: Stop::Term,
        }))
    }

    fn dispatch(self, name: &str, how: Dispatch, exit: i32, expect: Expect) -> Build {
        self.step(step(name, roles::dispatcher(&FILES, &how), exit, expect))
    }

    fn dispatch_crash(self, point: Point) -> Build {
        let argv = roles::dispatcher(&FILES, &Dispatch::default());
        self.step(crashing("dispatch-crash", argv, point))
    }

    fn post(self, name: &str, how: Post, status: &'static str) -> Build {
        self.step(step(
            name,
            roles::post(&FILES, &how),
            EXIT_OK,
            Expect::Output(status),
        ))
    }

    fn verify(self, name: &str) -> Build {
        let full = format!("{}.{name}", self.name);
        let stage = stage(&full).expect("every readback step has a stage");
        self.step(step(
            name,
            roles::verify(&FILES, true, Some(stage.name)),
            EXIT_OK,
            Expect::Readback(stage),
        ))
    }

    fn done(self) -> Scenario {
        Scenario {
            name: self.name.to_string(),
            dir: Some(self.name.to_string()),
            steps: self.steps,
        }
    }
}

/// The dispatcher crashes with the reply in hand, and a fresh one recovers.
fn dispatcher_crash(name: &'static str, mode: &'static str, recover: Expect) -> Scenario {
    Build::new(name)
        .intent(BODY)
        .receiver("receiver", mode, Serve::default(), None, None)
        .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
        .verify("after-crash")
        .dispatch("dispatch-recover", Dispatch::default(), EXIT_OK, recover)
        .verify("final")
        .done()
}

/// The receiver crashes after committing the effect, before replying; both restart.
fn receiver_crash(name: &'static str, mode: &'static str) -> Scenario {
    Build::new(name)
        .intent(BODY)
        .receiver(
            "receiver-crash",
            mode,
            Serve::default(),
            Some("dispatch-lost"),
            Some(points::RECEIVER_AFTER_EFFECT_COMMIT),
        )
        .dispatch(
            "dispatch-lost",
            Dispatch::default(),
            EXIT_UNAVAILABLE,
            Expect::Output("the receiver may have run it"),
        )
        .verify("after-crash")
        .receiver("receiver-restart", mode, Serve::default(), None, None)
        .dispatch(
            "dispatch-recover",
            Dispatch::default(),
            EXIT_OK,
            Expect::Output("DISPATCHED delivered=1"),
        )
        .verify("final")
        .done()
}

/// The table of the issue, one scenario per row, in its order.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        dispatcher_crash(
            "keyed-dispatcher-crash",
            "keyed",
            Expect::Output("status 200 replayed"),
        ),
        dispatcher_crash(
            "unkeyed-dispatcher-crash",
            "unkeyed",
            Expect::Output("RESEND key K1"),
        ),
        Build::new("keyed-receiver-restart")
            .intent(BODY)
            .receiver(
                "receiver",
                "keyed",
                Serve::default(),
                Some("dispatch-crash"),
                None,
            )
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .verify("after-crash")
            .receiver("receiver-restart", "keyed", Serve::default(), None, None)
            .dispatch(
                "dispatch-recover",
                Dispatch::default(),
                EXIT_OK,
                Expect::Output("status 200 replayed"),
            )
            .verify("final")
            .done(),
        Build::new("receiver-unavailable")
            .intent(BODY)
            // Started and stopped at once: its port file names a port nobody listens on.
            .receiver(
                "receiver-gone",
                "keyed",
                Serve::default(),
                Some("receiver-gone"),
                None,
            )
            .dispatch(
                "dispatch-unavailable",
                Dispatch::default(),
                EXIT_UNAVAILABLE,
                Expect::Output("not reachable"),
            )
            .verify("after-unavailable")
            .receiver("receiver", "keyed", Serve::default(), None, None)
            .dispatch(
                "dispatch-recover",
                Dispatch::default(),
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1"),
            )
            .verify("final")
            .done(),
        Build::new("key-conflict")
            .receiver("receiver", "keyed", Serve::default(), None, None)
            .post(
                "old-request",
                Post {
                    key: Some("K1"),
                    body: Some(r#"{"amount":10,"to":"R1"}"#),
                    ..Post::default()
                },
                "STATUS 200",
            )
            .intent(BODY)
            .dispatch(
                "dispatch-conflict",
                Dispatch::default(),
                EXIT_CONFLICT,
                Expect::Output("payload conflict"),
            )
            .verify("final")
            .done(),
        receiver_crash("keyed-receiver-crash", "keyed"),
        receiver_crash("unkeyed-receiver-crash", "unkeyed"),
        Build::new("two-dispatchers")
            .intent(BODY)
            // The receiver holds each request 1.5 s, so the first dispatcher holds the lock
            // while the second one starts.
            .receiver(
                "receiver",
                "keyed",
                Serve {
                    delay_ms: Some(1500),
                    ..Serve::default()
                },
                None,
                None,
            )
            .step(
                step(
                    "dispatch-first",
                    roles::dispatcher(&FILES, &Dispatch::default()),
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
                Dispatch::default(),
                EXIT_LOCKED,
                Expect::Output("held by another dispatcher"),
            )
            .dispatch(
                "dispatch-waiting",
                Dispatch {
                    lock_wait_ms: Some(20_000),
                    ..Dispatch::default()
                },
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=0"),
            )
            .verify("final")
            .done(),
        Build::new("key-expired")
            .intent(BODY)
            .receiver(
                "receiver",
                "keyed",
                Serve {
                    key_ttl_ms: Some(1),
                    ..Serve::default()
                },
                None,
                None,
            )
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch(
                "dispatch-recover",
                Dispatch::default(),
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1 replayed=0"),
            )
            .verify("final")
            .done(),
        Build::new("bad-requests")
            .receiver("receiver", "keyed", Serve::default(), None, None)
            .post(
                "invalid-key",
                Post {
                    key: Some("K1;drop"),
                    ..Post::default()
                },
                "STATUS 400",
            )
            .post(
                "long-key",
                Post {
                    key: Some("K12345678901234567890123456789012345678901234567890123456789012345"),
                    ..Post::default()
                },
                "STATUS 400",
            )
            .post("missing-key", Post::default(), "STATUS 400")
            .post(
                "oversized-body",
                Post {
                    key: Some("K2"),
                    body_bytes: Some(4097),
                    ..Post::default()
                },
                "STATUS 413",
            )
            .verify("final")
            .done(),
        Build::new("unkeyed-unknown-hold")
            .intent(BODY)
            .receiver("receiver", "unkeyed", Serve::default(), None, None)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch(
                "dispatch-hold",
                Dispatch {
                    unknown: Some("hold"),
                    ..Dispatch::default()
                },
                EXIT_OK,
                Expect::Output("marked unknown"),
            )
            .post(
                "reconcile",
                Post {
                    key: Some("K1"),
                    get_effect: true,
                    ..Post::default()
                },
                "\"ran\":true",
            )
            .verify("final")
            .done(),
    ]
}
