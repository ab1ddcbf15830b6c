//! Lab 13 (http-dispatch) as data: its files, its crash points, its scenarios and the counts
//! each readback must show. The driver runs this; the audit re-checks evidence against it.
//!
//! Every scenario runs in its own work directory; the receiver is a background step (the
//! driver waits for its `ready` event and stops it with SIGTERM), and writes its port to
//! `receiver.port`, which the dispatcher and the raw client read.

use crate::crash::Point;
use crate::engine::scenario::{Background, Expect, Ready, Scenario, Stage, Step, Stop};
use crate::engine::Lab;
use crate::fail::{EXIT_CONFLICT, EXIT_LOCKED, EXIT_OK, EXIT_UNAVAILABLE};
use crate::labs::http_dispatch::points::{self, POINTS};

pub static LAB: Lab = Lab {
    id: "13",
    slug: "http-dispatch",
    title: "Intent log, HTTP with Idempotency-Key: a clean history is not one effect",
    points: POINTS,
    databases: &["intents.db", "receipts.db", "history.db", "receiver.db"],
    scenarios,
    stages: STAGES,
    history: super::history::history,
    schemas: &[
        &super::schema::INTENTS,
        &super::schema::RECEIPTS,
        &super::schema::HISTORY,
        &super::schema::RECEIVER,
    ],
    readback: super::readback::replayed,
};

const E: &str = "receiver.effects";
const R: &str = "receipts.receipts";
const H: &str = "history.history";

/// Stages are named `<scenario>.<step>`: step names repeat across scenarios.
pub static STAGES: &[Stage] = &[
    Stage {
        name: "keyed-dispatcher-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "keyed-dispatcher-crash.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1)],
    },
    Stage {
        name: "unkeyed-dispatcher-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "unkeyed-dispatcher-crash.final",
        fields: &[(E, 2), (R, 1), (H, 1), ("receiver.keys", 1)],
    },
    Stage {
        name: "keyed-receiver-restart.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0)],
    },
    Stage {
        name: "keyed-receiver-restart.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1)],
    },
    Stage {
        name: "receiver-unavailable.after-unavailable",
        fields: &[(E, 0), (R, 0), (H, 0), ("intents.attempts", 0)],
    },
    Stage {
        name: "receiver-unavailable.final",
        fields: &[(E, 1), (R, 1), (H, 1)],
    },
    Stage {
        name: "key-conflict.final",
        fields: &[(E, 1), (R, 0), (H, 0), ("receiver.ledger", 1)],
    },
    Stage {
        name: "keyed-receiver-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "keyed-receiver-crash.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("receipts.replayed", 1)],
    },
    Stage {
        name: "unkeyed-receiver-crash.after-crash",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.attempts", 1)],
    },
    Stage {
        name: "unkeyed-receiver-crash.final",
        fields: &[(E, 2), (R, 1), (H, 1)],
    },
    Stage {
        name: "two-dispatchers.final",
        fields: &[(E, 1), (R, 1), (H, 1), ("intents.attempts", 1)],
    },
    Stage {
        name: "key-expired.final",
        fields: &[(E, 2), (R, 1), (H, 1), ("receipts.replayed", 0)],
    },
    Stage {
        name: "bad-requests.final",
        fields: &[(E, 0), (R, 0), (H, 0), ("receiver.ledger", 0)],
    },
    Stage {
        name: "unkeyed-unknown-hold.final",
        fields: &[(E, 1), (R, 0), (H, 0), ("intents.unknown", 1)],
    },
];

pub fn stage(name: &str) -> Option<Stage> {
    STAGES.iter().find(|s| s.name == name).copied()
}

const BODY: &str = r#"{"amount":25,"to":"R1"}"#;
const DISPATCHER: &[&str] = &[
    "--intents",
    "intents.db",
    "--receipts",
    "receipts.db",
    "--history",
    "history.db",
    "--port-file",
    "receiver.port",
];
const POST: &[&str] = &["--port-file", "receiver.port"];

fn with(base: &[&'static str], more: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(more).copied().collect()
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
        self.step(Step::new(
            "intent",
            "intent",
            &["--intents", "intents.db", "--key", "K1", "--body", body],
            EXIT_OK,
            Expect::Exit,
        ))
    }

    /// A receiver in the background, stopped with SIGTERM after `stop_after` (None: at the end).
    fn receiver(
        self,
        name: &str,
        mode: &'static str,
        more: &[&'static str],
        stop_after: Option<&'static str>,
        crash: Option<Point>,
    ) -> Build {
        let args = with(
            &[
                "--db",
                "receiver.db",
                "--mode",
                mode,
                "--port-file",
                "receiver.port",
            ],
            more,
        );
        let step = match crash {
            Some(point) => Step::crashing(name, "receiver", &args, point),
            None => Step::new(
                name,
                "receiver",
                &args,
                EXIT_OK,
                Expect::Output("STOPPED receiver"),
            ),
        };
        self.step(step.in_background(Background {
            ready: Ready::Listening,
            stop_after,
            stop: Stop::Term,
        }))
    }

    fn dispatch(self, name: &str, more: &[&'static str], exit: i32, expect: Expect) -> Build {
        self.step(Step::new(
            name,
            "dispatcher",
            &with(DISPATCHER, more),
            exit,
            expect,
        ))
    }

    fn dispatch_crash(self, point: Point) -> Build {
        self.step(Step::crashing(
            "dispatch-crash",
            "dispatcher",
            DISPATCHER,
            point,
        ))
    }

    fn post(self, name: &str, more: &[&'static str], status: &'static str) -> Build {
        self.step(Step::new(
            name,
            "dispatch-post",
            &with(POST, more),
            EXIT_OK,
            Expect::Output(status),
        ))
    }

    fn verify(self, step: &str) -> Build {
        let full = format!("{}.{step}", self.name);
        let stage = stage(&full).expect("every readback step has a stage");
        let args = [
            "--intents",
            "intents.db",
            "--receipts",
            "receipts.db",
            "--history",
            "history.db",
            "--receiver",
            "receiver.db",
            "--json",
            "--expect",
            stage.name,
        ];
        self.step(Step::new(
            step,
            "dispatch-verify",
            &args,
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
        .receiver("receiver", mode, &[], None, None)
        .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
        .verify("after-crash")
        .dispatch("dispatch-recover", &[], EXIT_OK, recover)
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
            &[],
            Some("dispatch-lost"),
            Some(points::RECEIVER_AFTER_EFFECT_COMMIT),
        )
        .dispatch(
            "dispatch-lost",
            &[],
            EXIT_UNAVAILABLE,
            Expect::Output("the receiver may have run it"),
        )
        .verify("after-crash")
        .receiver("receiver-restart", mode, &[], None, None)
        .dispatch(
            "dispatch-recover",
            &[],
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
            .receiver("receiver", "keyed", &[], Some("dispatch-crash"), None)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .verify("after-crash")
            .receiver("receiver-restart", "keyed", &[], None, None)
            .dispatch(
                "dispatch-recover",
                &[],
                EXIT_OK,
                Expect::Output("status 200 replayed"),
            )
            .verify("final")
            .done(),
        Build::new("receiver-unavailable")
            .intent(BODY)
            // Started and stopped at once: its port file names a port nobody listens on.
            .receiver("receiver-gone", "keyed", &[], Some("receiver-gone"), None)
            .dispatch(
                "dispatch-unavailable",
                &[],
                EXIT_UNAVAILABLE,
                Expect::Output("not reachable"),
            )
            .verify("after-unavailable")
            .receiver("receiver", "keyed", &[], None, None)
            .dispatch(
                "dispatch-recover",
                &[],
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1"),
            )
            .verify("final")
            .done(),
        Build::new("key-conflict")
            .receiver("receiver", "keyed", &[], None, None)
            .post(
                "old-request",
                &["--key", "K1", "--body", r#"{"amount":10,"to":"R1"}"#],
                "STATUS 200",
            )
            .intent(BODY)
            .dispatch(
                "dispatch-conflict",
                &[],
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
            .receiver("receiver", "keyed", &["--delay-ms", "1500"], None, None)
            .step(
                Step::new(
                    "dispatch-first",
                    "dispatcher",
                    DISPATCHER,
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
                &[],
                EXIT_LOCKED,
                Expect::Output("held by another dispatcher"),
            )
            .dispatch(
                "dispatch-waiting",
                &["--lock-wait-ms", "20000"],
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=0"),
            )
            .verify("final")
            .done(),
        Build::new("key-expired")
            .intent(BODY)
            .receiver("receiver", "keyed", &["--key-ttl-ms", "1"], None, None)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch(
                "dispatch-recover",
                &[],
                EXIT_OK,
                Expect::Output("DISPATCHED delivered=1 replayed=0"),
            )
            .verify("final")
            .done(),
        Build::new("bad-requests")
            .receiver("receiver", "keyed", &[], None, None)
            .post("invalid-key", &["--key", "K1;drop"], "STATUS 400")
            .post(
                "long-key",
                &[
                    "--key",
                    "K12345678901234567890123456789012345678901234567890123456789012345",
                ],
                "STATUS 400",
            )
            .post("missing-key", &[], "STATUS 400")
            .post(
                "oversized-body",
                &["--key", "K2", "--body-bytes", "4097"],
                "STATUS 413",
            )
            .verify("final")
            .done(),
        Build::new("unkeyed-unknown-hold")
            .intent(BODY)
            .receiver("receiver", "unkeyed", &[], None, None)
            .dispatch_crash(points::DISPATCHER_AFTER_RESPONSE)
            .dispatch(
                "dispatch-hold",
                &["--unknown", "hold"],
                EXIT_OK,
                Expect::Output("marked unknown"),
            )
            .post(
                "reconcile",
                &["--key", "K1", "--get-effect"],
                "\"ran\":true",
            )
            .verify("final")
            .done(),
    ]
}
