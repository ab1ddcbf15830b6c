//! Lab 14 on the stack under explore: the sender writes two contracts, the publisher sends
//! them, a faulty upstream publishes a copy of the first, the consumer applies; recovery runs
//! the roles again while an Outbox row is pending or a message is ready. The correct design
//! and four broken variants, each with the points and hits where it must break, under process
//! crashes (`predictions`) and under server kills (`predictions::SERVER_PREDICTIONS`).

mod check;
pub mod predictions;
mod state;

use anyhow::Result;

use super::roles::{self, Argv, Send, STORES};
use super::variant::Variant;
use crate::engine::explore::plan::{ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::Steps;
use state::Observed;

/// Contracts the scenario writes: two, so the consumer's second delivery gives `@2` hits.
pub const CONTRACTS: usize = 2;
pub const SEED: u64 = 1;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

static DESIGNS: [&str; 5] = [
    "correct",
    "async-commit",
    "no-confirm",
    "auto-ack",
    "transient",
];

static WORDS: Words = Words {
    columns: &[
        ("deliveries", "messages"),
        ("handled", "deliveries"),
        ("effects_applied", "applied"),
        ("lost_effects", "lost"),
        ("duplicated_effects", "duplicated"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n\
         no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: no Outbox row pending, no message ready;\n\
         ack=>dur: every commit a process reported is in PostgreSQL; messages = physical messages received, deliveries = with redeliveries;\n\
         bad anomalies (per message): lost-write, unseen, duplicate, G1a; a duplicate-delivery the Inbox absorbs is allowed",
    pass: "PASS: the correct design holds everywhere and every variant breaks exactly where it predicts",
    svg_pass: "PASS: the correct design holds everywhere; every variant breaks exactly where predicted",
};

fn variant(design: &str) -> Variant {
    Variant::from_name(design).expect("a design of lab 14 on the stack is a variant")
}

/// The design's own code in the role it changes, the correct code in every other.
fn in_role(variant: Variant, role: &str) -> Variant {
    match variant.phase() {
        Some(phase) if phase == role => variant,
        _ => Variant::Correct,
    }
}

fn sender() -> Argv {
    roles::sender(
        &STORES,
        Send::Generate {
            n: CONTRACTS,
            seed: SEED,
        },
    )
}

fn publisher(v: Variant) -> Argv {
    roles::publisher(&STORES, in_role(v, roles::PUBLISHER))
}

fn consumer(v: Variant) -> Argv {
    roles::consumer(&STORES, in_role(v, roles::CONSUMER))
}

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

    fn server_predictions(&self) -> &'static [Prediction] {
        predictions::SERVER_PREDICTIONS
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
        // A faulty upstream publishes M000001 again, same payload: the Inbox's job.
        let amount = crate::rng::amounts(SEED, CONTRACTS)[0];
        let copy = roles::enqueue(&STORES, "M000001", "C000001", amount);
        steps.run("", copy.into_vec())?;
        steps.run("", consumer(v).into_vec())
    }

    /// A role runs when it has work: the crashed sender, the publisher while an Outbox row is
    /// pending, the consumer while a message is ready.
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
        if observed(steps)?.ready > 0 {
            steps.run("", consumer(v).into_vec())?;
            ran = true;
        }
        Ok(ran)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<Observed>() {
            Some(o) => o.clone(),
            None => state::read(steps.work())?,
        };
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

    /// Every predicted point is one of the lab's, and every server prediction names a design
    /// and a server.
    #[test]
    fn predictions_name_real_points_designs_and_servers() {
        let all = predictions::PREDICTIONS
            .iter()
            .chain(predictions::SERVER_PREDICTIONS);
        for p in all {
            let design = p.variant.split('/').next().unwrap();
            assert!(DESIGNS.contains(&design), "{}", p.variant);
            if let Some(server) = p.variant.split('/').nth(1) {
                assert!(["postgres", "rabbitmq"].contains(&server), "{}", p.variant);
            }
            // A queue type only after the broker, whose queue it is.
            if let Some(queue_type) = p.variant.split('/').nth(2) {
                assert!(p.variant.contains("/rabbitmq/"), "{}", p.variant);
                assert!(["classic", "quorum"].contains(&queue_type), "{}", p.variant);
                assert_eq!(p.variant.split('/').count(), 3, "{}", p.variant);
            }
            for at in p.at {
                assert!(
                    super::super::points::POINTS
                        .iter()
                        .any(|q| q.name == at.point),
                    "{}",
                    at.point
                );
            }
        }
    }
}
