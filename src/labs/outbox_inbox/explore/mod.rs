//! Lab 14's explore plan: the business writes two contracts, the publisher sends them, a
//! faulty upstream redelivers the first, the consumer applies; recovery runs the roles again
//! while an Outbox row or a delivery is pending. The correct design and four broken
//! variants, each with the exact points and hits where it must break.

mod check;
mod power_predictions;
mod predictions;
mod state;
mod visible;

use anyhow::Result;

use super::roles::{self, Argv, Consume, Send, CONSUME, FILES};
use super::variant::Variant;
use crate::engine::explore::plan::{ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::Steps;
use state::Observed;

/// Contracts the scenario writes: two, so the consumer's second delivery gives `@2` hits.
pub const CONTRACTS: usize = 2;
/// The seed of the generated amounts.
pub const SEED: u64 = 1;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

/// The variants' names, the correct design first (a unit test holds them to `Variant::ALL`).
static DESIGNS: [&str; 5] = [
    "correct",
    "mark-before-send",
    "memory-inbox",
    "split-inbox-tx",
    "ack-before-apply",
];

static WORDS: Words = Words {
    columns: &[
        ("deliveries", "deliveries"),
        ("claims", "claims"),
        ("effects_applied", "applied"),
        ("duplicates_suppressed", "suppressed"),
        ("lost_effects", "lost"),
        ("duplicated_effects", "duplicated"),
        ("lost_messages", "lost msgs"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n\
         no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: nothing pending after recovery;\n\
         ack=>dur: every commit a process reported is in the files; counts are summed over the hits;\n\
         bad anomalies (per message): lost-write, unseen, duplicate, G1a; a duplicate-delivery the Inbox absorbs is allowed",
    pass: "PASS: the correct design holds everywhere and every variant breaks exactly where it predicts",
    svg_pass: "PASS: the correct design holds everywhere; every variant breaks exactly where predicted",
};

/// The variant of a design name (the engine passes only names this plan gave it).
fn variant(design: &str) -> Variant {
    Variant::from_name(design).expect("a design of lab 14 is a variant")
}

/// The variant a role runs: the design's own in the role it changes, the correct code in
/// every other.
fn in_role(variant: Variant, role: &str) -> Variant {
    match variant.phase() {
        Some(phase) if phase == role => variant,
        _ => Variant::Correct,
    }
}

fn sender() -> Argv {
    roles::sender(
        &FILES,
        Send::Generate {
            n: CONTRACTS,
            seed: SEED,
        },
        1,
    )
}

fn publisher(v: Variant) -> Argv {
    roles::publisher(&FILES, 1, in_role(v, roles::PUBLISHER))
}

fn consumer(v: Variant) -> Argv {
    roles::consumer(
        &FILES,
        &Consume {
            variant: in_role(v, roles::CONSUMER),
            ..CONSUME
        },
    )
}

/// The files as they are now: read once, kept until a process runs.
fn observed(steps: &mut Steps<'_>) -> Result<Observed> {
    if let Some(o) = steps.memo::<Observed>() {
        return Ok(o.clone());
    }
    let o = state::read(steps.work())?;
    steps.set_memo(o.clone());
    Ok(o)
}

impl ExplorePlan for Exploration {
    fn design_word(&self) -> &'static str {
        "variant"
    }

    fn designs(&self) -> &'static [&'static str] {
        &DESIGNS
    }

    fn predictions(&self) -> &'static [Prediction] {
        predictions::PREDICTIONS
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::LAB.databases
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let v = variant(design);
        steps.run("", sender().into_vec())?;
        steps.run("", publisher(v).into_vec())?;
        // A faulty upstream redelivers the first message, same payload: the Inbox's job.
        let amount = crate::rng::amounts(SEED, CONTRACTS)[0];
        let enqueue = roles::enqueue(&FILES, "M000001", "C000001", amount);
        steps.run("", enqueue.into_vec())?;
        steps.run("", consumer(v).into_vec())
    }

    /// A role runs when it has work: the crashed sender (the business retries; a restarted
    /// generator skips what it committed), the publisher while an Outbox row is pending, the
    /// consumer while a delivery is. One with nothing pending would only read and leave.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let v = variant(design);
        let mut ran = false;
        if round == 1 && steps.crashed_role() == Some(roles::SENDER) {
            steps.run("", sender().into_vec())?;
            ran = true;
        }
        if observed(steps)?.outbox_pending() > 0 {
            steps.run("", publisher(v).into_vec())?;
            ran = true;
        }
        if observed(steps)?.queue_pending() > 0 {
            steps.run("", consumer(v).into_vec())?;
            ran = true;
        }
        Ok(ran)
    }

    fn power_predictions(&self) -> &'static [Prediction] {
        power_predictions::POWER_PREDICTIONS
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<Observed>() {
            Some(o) => o.clone(),
            None => state::read(steps.work())?,
        };
        state::cross_check(steps.work(), &o)?;
        Ok(check::judge(&o, steps.records()))
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
