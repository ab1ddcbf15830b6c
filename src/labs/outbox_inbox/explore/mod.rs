//! Lab 14's explore plan, one for both stacks: the sender writes two contracts, the
//! publisher sends them, a faulty upstream sends a copy of the first, the consumer applies;
//! recovery runs the roles again while an Outbox row or a delivery is pending. The correct
//! design and each stack's broken ones, each with the exact points and hits where it must
//! break: under process crashes, under power loss (SQLite), under server kills (the servers).

mod check;
mod power_predictions;
mod predictions;
mod visible;

use anyhow::Result;

use super::open::{read_files, read_servers};
use super::roles::{Consumer, Enqueue, Publisher, Sender};
use super::stack::Stack;
use super::state::State;
use super::variant::{designs, Variant};
use crate::engine::explore::plan::{ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::Steps;
use crate::role::Role;

/// Contracts the scenario writes: two, so the consumer's second delivery gives `@2` hits.
pub const CONTRACTS: usize = 2;
/// The seed of the generated amounts.
pub const SEED: u64 = 1;

pub struct Exploration {
    stack: Stack,
    words: Words,
}

/// The legend's first line, the same on both stacks.
macro_rules! legend {
    ($rest:literal) => {
        concat!(
            "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n",
            $rest
        )
    };
}

const PASS: &str =
    "PASS: the correct design holds everywhere and every variant breaks exactly where it predicts";
const SVG_PASS: &str =
    "PASS: the correct design holds everywhere; every variant breaks exactly where predicted";

pub static ON_SQLITE: Exploration = Exploration {
    stack: Stack::Sqlite,
    words: Words {
        columns: &[
            ("deliveries", "deliveries"),
            ("claims", "claims"),
            ("effects_applied", "applied"),
            ("duplicates_suppressed", "suppressed"),
            ("lost_effects", "lost"),
            ("duplicated_effects", "duplicated"),
            ("lost_messages", "lost msgs"),
        ],
        legend: legend!(
            "no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: nothing pending after recovery;\n\
             ack=>dur: every commit a process reported is in the files; counts are summed over the hits;\n\
             bad anomalies (per message): lost-write, unseen, duplicate, G1a; a duplicate-delivery the Inbox absorbs is allowed"
        ),
        pass: PASS,
        svg_pass: SVG_PASS,
    },
};

pub static ON_SERVERS: Exploration = Exploration {
    stack: Stack::Servers,
    words: Words {
        columns: &[
            ("deliveries", "messages"),
            ("handled", "deliveries"),
            ("effects_applied", "applied"),
            ("lost_effects", "lost"),
            ("duplicated_effects", "duplicated"),
        ],
        legend: legend!(
            "no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: no Outbox row pending, no message ready;\n\
             ack=>dur: every commit a process reported is in PostgreSQL; messages = physical messages received, deliveries = with redeliveries;\n\
             bad anomalies (per message): lost-write, unseen, duplicate, G1a; a duplicate-delivery the Inbox absorbs is allowed"
        ),
        pass: PASS,
        svg_pass: SVG_PASS,
    },
};

impl Exploration {
    fn variant(&self, design: &str) -> Variant {
        Variant::from_name(design).expect("a design of lab 14 is a variant")
    }

    /// The stores as they are now: read once, kept until a process runs.
    fn state(&self, steps: &mut Steps<'_>) -> Result<State> {
        if let Some(o) = steps.memo::<State>() {
            return Ok(o.clone());
        }
        let o = self.read(steps)?;
        steps.set_memo(o.clone());
        Ok(o)
    }

    fn read(&self, steps: &Steps<'_>) -> Result<State> {
        let work = steps.work();
        let stores = self.stack.stores();
        let [s, q, r] = [stores.sender, stores.queue, stores.receiver].map(|n| work.join(n));
        match self.stack {
            Stack::Sqlite => read_files([&s, &q, &r], false, false),
            Stack::Servers => {
                let names =
                    [stores.sender, stores.queue, stores.receiver].map(std::path::Path::new);
                read_servers(work, names, true)
            }
        }
    }

    fn sender(&self) -> Vec<String> {
        Sender::generate(self.stack, CONTRACTS, SEED)
            .argv()
            .into_vec()
    }

    fn publisher(&self, v: Variant) -> Vec<String> {
        Publisher::of(self.stack, v.in_role(Publisher::NAME))
            .argv()
            .into_vec()
    }

    fn consumer(&self, v: Variant) -> Vec<String> {
        Consumer::of(self.stack, v.in_role(Consumer::NAME))
            .argv()
            .into_vec()
    }
}

impl ExplorePlan for Exploration {
    fn designs(&self) -> &'static [&'static str] {
        designs(self.stack)
    }

    fn predictions(&self) -> &'static [Prediction] {
        match self.stack {
            Stack::Sqlite => predictions::ON_SQLITE,
            Stack::Servers => predictions::ON_SERVERS,
        }
    }

    fn power_predictions(&self) -> &'static [Prediction] {
        match self.stack {
            Stack::Sqlite => power_predictions::POWER_PREDICTIONS,
            Stack::Servers => &[],
        }
    }

    fn server_predictions(&self) -> &'static [Prediction] {
        match self.stack {
            Stack::Sqlite => &[],
            Stack::Servers => predictions::SERVER_KILLS,
        }
    }

    fn words(&self) -> &'static Words {
        // The statics this plan lives in hold its words.
        match self.stack {
            Stack::Sqlite => &ON_SQLITE.words,
            Stack::Servers => &ON_SERVERS.words,
        }
    }

    fn databases(&self) -> &'static [&'static str] {
        self.stack.databases()
    }

    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let v = self.variant(design);
        steps.run("", self.sender())?;
        steps.run("", self.publisher(v))?;
        // A faulty upstream sends the first message again, same payload: the Inbox's job.
        let amount = crate::rng::amounts(SEED, CONTRACTS)[0];
        let copy = Enqueue::of(self.stack, "M000001", "C000001", amount);
        steps.run("", copy.argv().into_vec())?;
        steps.run("", self.consumer(v))
    }

    /// A role runs when it has work: the crashed sender (the business retries; a restarted
    /// generator skips what it committed), the publisher while an Outbox row is pending, the
    /// consumer while a delivery is. One with nothing pending would only read and leave.
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let v = self.variant(design);
        let mut ran = false;
        if round == 1 && steps.crashed_role() == Some(Sender::NAME) {
            steps.run("", self.sender())?;
            ran = true;
        }
        if self.state(steps)?.outbox_pending() > 0 {
            steps.run("", self.publisher(v))?;
            ran = true;
        }
        if self.state(steps)?.queue_pending(self.stack) > 0 {
            steps.run("", self.consumer(v))?;
            ran = true;
        }
        Ok(ran)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<State>() {
            Some(o) => o.clone(),
            None => self.read(steps)?,
        };
        Ok(check::judge(self.stack, &o, steps.records()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every predicted point is one of its stack's, and every server prediction names a
    /// design of the stack and a server.
    #[test]
    fn predictions_name_real_points_designs_and_servers() {
        for plan in [&ON_SQLITE, &ON_SERVERS] {
            let points = super::super::points::of(plan.stack);
            let all = plan.predictions().iter().chain(plan.server_predictions());
            for p in all {
                let design = p.variant.split('/').next().unwrap();
                assert!(plan.designs().contains(&design), "{}", p.variant);
                if let Some(server) = p.variant.split('/').nth(1) {
                    assert!(["postgres", "rabbitmq"].contains(&server), "{}", p.variant);
                }
                // A queue type only after the broker, whose queue it is.
                if let Some(queue_type) = p.variant.split('/').nth(2) {
                    assert!(p.variant.contains("/rabbitmq/"), "{}", p.variant);
                    assert!(["classic", "quorum"].contains(&queue_type), "{}", p.variant);
                    assert_eq!(p.variant.split('/').count(), 3, "{}", p.variant);
                }
            }
            let every = plan
                .predictions()
                .iter()
                .chain(plan.server_predictions())
                .chain(plan.power_predictions());
            for p in every {
                for at in p.at {
                    assert!(points.iter().any(|q| q.name == at.point), "{}", at.point);
                }
            }
        }
    }
}
