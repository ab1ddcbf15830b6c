//! Lab f2's explore plan: the producer writes four messages (M2 the poison), the consumer
//! runs its design, and under retry-then-skip the operator replays M2 with its corrected
//! amount; recovery runs the consumer while a message is pending and the replay while one is
//! parked. retry-then-skip must hold at every point and hit; retry-forever breaks everywhere
//! it runs, even without a crash: its break is a stall, not a crash window.

mod check;

use anyhow::Result;

use super::lab::{AMOUNTS, FIXED_AMOUNT};
use super::model::Variant;
use super::points;
use super::readback::{self, Detail};
use super::roles::{Consume, Produce, Replay, QUEUE, RECEIVER};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::Steps;
use crate::engine::jepsen::Anomaly;
use crate::role::Role;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

/// The designs, the lab's first (a unit test holds them to `Variant::ALL`).
static DESIGNS: [&str; 2] = ["retry-then-skip", "retry-forever"];

/// retry-forever stalls at the poison whatever crashes: every point it reaches, at every hit,
/// shows the queue stuck and the poison and the messages behind it never applied.
pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "retry-forever",
    at: &[
        At::every(points::CONSUME_AFTER_APPLY_COMMIT.name),
        At::every(points::CONSUME_AFTER_ACK_COMMIT.name),
        At::every(points::CONSUME_BEFORE_ATTEMPT_COMMIT.name),
        At::every(points::CONSUME_AFTER_ATTEMPT_COMMIT.name),
    ],
    invariants: &[Invariant::NothingStuck],
    anomalies: &[Anomaly::Unseen],
    says: "stall (the poison at the head, every message behind it never applied within the bound)",
    hidden: "",
}];

static WORDS: Words = Words {
    columns: &[
        ("messages", "messages"),
        ("deliveries", "deliveries"),
        ("applied", "applied"),
        ("failures", "failures"),
        ("parked", "parked"),
        ("replayed", "replayed"),
        ("left_pending", "pending"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n\
         no-lost: every message credited or still held by the queue (pending or parked); no-dup: one credit per message, none foreign;\n\
         no-stuck: nothing pending or parked after recovery; ack=>dur: every commit a process reported is in the files;\n\
         counts are summed over the hits; bad anomalies (per message): lost-write, unseen, duplicate, G1a; retries and replays are allowed duplicate-deliveries",
    pass: "PASS: retry-then-skip holds everywhere (poison parked, replayed once, the rest applied once); retry-forever stalls exactly where predicted",
    svg_pass: "PASS: retry-then-skip holds everywhere; retry-forever stalls exactly where predicted",
};

fn variant(design: &str) -> Variant {
    Variant::from_name(design).expect("a design of lab f2 is a variant")
}

fn consume(v: Variant) -> Vec<String> {
    Consume::of(v).argv().into_vec()
}

fn replay(message: &str) -> Vec<String> {
    Replay::of(message, Some(FIXED_AMOUNT)).argv().into_vec()
}

fn observed(steps: &mut Steps<'_>) -> Result<Detail> {
    if let Some(o) = steps.memo::<Detail>() {
        return Ok(o.clone());
    }
    let w = steps.work();
    let o = readback::detail(&w.join(QUEUE), &w.join(RECEIVER))?;
    steps.set_memo(o.clone());
    Ok(o)
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
        let v = variant(design);
        steps.run("", Produce::of(AMOUNTS).argv().into_vec())?;
        steps.run("", consume(v))?;
        // The operator replays the parked poison with its fix, unless the consumer crashed
        // before it could park it (recovery replays it then).
        if v == Variant::RetryThenSkip && steps.crashed_role().is_none() {
            steps.run("", replay(super::lab::POISON))?;
        }
        Ok(())
    }

    /// The consumer while a message is pending, then the replay of each parked one (the
    /// fix is in). retry-forever parks nothing: it stalls again each round.
    fn recover(&self, design: &'static str, _round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let v = variant(design);
        let mut ran = false;
        if observed(steps)?
            .messages
            .iter()
            .any(|m| m.status == "pending")
        {
            steps.run("", consume(v))?;
            ran = true;
        }
        let parked: Vec<String> = observed(steps)?
            .messages
            .iter()
            .filter(|m| m.status == "parked")
            .map(|m| m.id.clone())
            .collect();
        for m in parked {
            steps.run("", replay(&m))?;
            ran = true;
        }
        Ok(ran)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let w = steps.work();
        let o = readback::detail(&w.join(QUEUE), &w.join(RECEIVER))?;
        Ok(check::judge(&o, steps.records()))
    }

    fn breaks_without_crash(&self, design: &'static str) -> bool {
        variant(design) == Variant::RetryForever
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_designs_are_the_variants_in_order() {
        let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(names, DESIGNS);
    }
}
