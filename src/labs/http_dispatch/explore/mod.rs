//! Lab 13's explore plan: the business records two intents, a receiver in the background and
//! a dispatcher deliver them, the crash armed in one of them; recovery retries a crashed
//! intent, then a fresh receiver and a fresh dispatcher while any intent lacks its receipt or
//! its history. Three designs: `keyed` (the receiver's idempotency ledger absorbs a resend),
//! `unkeyed` (a resend runs again: the predicted duplicates) and `unkeyed-hold` (no key, but
//! the dispatcher holds an attempt without a receipt as unknown instead of resending it).

mod check;
mod power_predictions;
mod visible;

use anyhow::Result;

use super::dispatcher::Unknown;
use super::readback::{self, State};
use super::receiver::Mode;
use super::roles::{Dispatcher, Intent, Receiver};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::Steps;
use crate::engine::jepsen::Anomaly;
use crate::fail;
use crate::role::Role;

/// The intents the business records: two, so the dispatcher's and the receiver's points are
/// reached twice (`@2` is the second intent's window).
pub const INTENTS_OWED: &[(&str, &str)] = &[
    ("K1", r#"{"amount":25,"to":"R1"}"#),
    ("K2", r#"{"amount":40,"to":"R2"}"#),
];
/// A receiver stops by itself after this long, whatever happens to explore.
const RECEIVER_LIFETIME_MS: u64 = 120_000;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

static DESIGNS: [&str; 3] = ["keyed", "unkeyed", "unkeyed-hold"];

/// Where the unkeyed receiver must run an intent twice: between the receiver's effect commit
/// and the dispatcher's receipt commit, at every hit (each intent's window). Everywhere else,
/// and everywhere in the other modes, one effect per intent.
pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "unkeyed",
    at: &[
        At::every("dispatcher.after-response"),
        At::every("dispatcher.before-receipt-commit"),
        At::every("receiver.after-effect-commit"),
    ],
    invariants: &[Invariant::NoDuplicateEffect],
    anomalies: &[Anomaly::Duplicate],
    says: "duplicate effect (effect committed, no receipt: the resend runs it again)",
    hidden: "",
}];

static WORDS: Words = Words {
    columns: &[
        ("intents", "intents"),
        ("attempts", "attempts"),
        ("effects", "effects"),
        ("receipts", "receipts"),
        ("history", "history"),
        ("replays", "replays"),
        ("resends", "resends"),
        ("lost_effects", "lost"),
        ("duplicated_effects", "duplicated"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the mode predicts a break here\n\
         no-lost: every committed intent has an effect at the receiver; no-dup: at most one effect per intent, none without one;\n\
         no-stuck: every intent has its receipt and its history after recovery (unless held unknown);\n\
         ack=>dur: every commit a process reported is in the files; counts are summed over the hits;\n\
         bad anomalies (per key): lost-write, unseen, duplicate, G1a; a duplicate-delivery the key absorbs is allowed, an intent held unknown that ran is recovered",
    pass: "PASS: keyed and unkeyed-hold hold everywhere (one effect per intent); unkeyed duplicates exactly at the predicted points",
    svg_pass: "PASS: keyed and unkeyed-hold hold everywhere; unkeyed duplicates exactly where predicted",
};

/// The receiver's mode and the dispatcher's answer to an attempt without a receipt.
fn design(name: &str) -> (Mode, Unknown) {
    match name {
        "keyed" => (Mode::Keyed, Unknown::Resend),
        "unkeyed" => (Mode::Unkeyed, Unknown::Resend),
        "unkeyed-hold" => (Mode::Unkeyed, Unknown::Hold),
        other => unreachable!("lab 13 has no design {other}"),
    }
}

/// The business records intent `key` (again, after a crash: a committed one answers ALREADY).
fn intent(steps: &mut Steps<'_>, (key, body): (&str, &str)) -> Result<()> {
    steps.run(
        &format!("intent-{key}"),
        Intent::of(key, body).argv().into_vec(),
    )
}

/// One round of delivery: a fresh receiver, a dispatcher, the receiver stopped. In the
/// scenario, the receiver may be the one the crash is armed in.
fn deliver(name: &str, in_scenario: bool, steps: &mut Steps<'_>) -> Result<()> {
    let (mode, unknown) = design(name);
    let receiver = Receiver {
        lifetime_ms: RECEIVER_LIFETIME_MS,
        ..Receiver::of(mode)
    };
    let receiver = steps.start("", receiver.argv().into_vec())?;
    if receiver.is_some() {
        // The dispatcher's own connect/read bound stays inside the step timeout, so a hung
        // receiver (`--crash-mode hang`) gives a lost reply, not a killed dispatcher.
        let bound = (steps.timeout().as_millis() / 2).clamp(1, 5_000) as u64;
        let dispatcher = Dispatcher {
            timeout_ms: bound,
            ..Dispatcher::of(unknown)
        };
        steps.run("", dispatcher.argv().into_vec())?;
        // A receiver that crashed under it leaves the dispatcher without a reply.
        if in_scenario && steps.crashed_role() == Some(Receiver::NAME) {
            steps.expect_last(fail::EXIT_UNAVAILABLE);
        }
    }
    steps.stop(receiver)
}

impl ExplorePlan for Exploration {
    fn designs(&self) -> &'static [&'static str] {
        &DESIGNS
    }

    fn predictions(&self) -> &'static [Prediction] {
        PREDICTIONS
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::ON_SQLITE.databases
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        for owed in INTENTS_OWED {
            intent(steps, *owed)?;
        }
        deliver(design, true, steps)
    }

    /// The business retries a crashed intent (same key, same body: a committed one answers
    /// ALREADY), then a fresh receiver and dispatcher while anything is owed.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let mut ran = false;
        if round == 1 && steps.crashed_role() == Some(Intent::NAME) {
            intent(steps, INTENTS_OWED[0])?;
            ran = true;
        }
        let o = readback::read_work(steps.work())?;
        let quiescent = o.quiescent();
        steps.set_memo(o);
        if !quiescent {
            deliver(design, false, steps)?;
            ran = true;
        }
        Ok(ran)
    }

    fn power_predictions(&self) -> &'static [Prediction] {
        power_predictions::POWER_PREDICTIONS
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<State>() {
            Some(o) => o.clone(),
            None => readback::read_work(steps.work())?,
        };
        Ok(check::judge(&o, steps.records()))
    }
}
