//! Lab 14's load profile, one for both stacks: a sender generating N contracts, one publisher
//! and K consumers at once on the run's stores; progress polled over connections kept open
//! (watch.rs); the end-to-end check on the final state (check.rs). On SQLite the roles batch
//! B rows per transaction and the consumers claim under leases; bench also runs here, beside
//! its plain-insert ceiling (ceiling.rs). On the servers a role handles one message per
//! transaction (the broker redelivers what a dead consumer held, with no lease), a known-broken
//! design may run (`--variant`), and at the end the final rows and the queue's messages are
//! copied into SQLite files (settle.rs) so the audit re-derives the verdict offline. Every
//! argv comes from the roles.

mod amounts;
mod ceiling;
mod check;
mod settle;
mod watch;

use std::path::Path;

use anyhow::Result;

use super::outbox::CONTRACTS_MAX;
use super::roles::{Consumer, Publisher, Sender, Verify};
use super::stack::Stack;
use super::variant::{designs, Variant};
use crate::engine::load::profile::{BenchStage, LoadProfile, RoleSpec, Shape, Verdict, Watch};
use crate::events::Event;
use crate::fail;
use crate::role::Role;

pub struct Load {
    stack: Stack,
}

pub static ON_SQLITE: Load = Load {
    stack: Stack::Sqlite,
};

pub static ON_SERVERS: Load = Load {
    stack: Stack::Servers,
};

/// What starts each role: contracts still to write, Outbox rows pending, deliveries pending.
const SENDER_WORK: usize = 0;
const PUBLISHER_WORK: usize = 1;
const CONSUMER_WORK: usize = 2;

impl Load {
    /// Rows per transaction: the run's on SQLite, one on the servers.
    fn batch(&self, shape: &Shape) -> u32 {
        match self.stack {
            Stack::Sqlite => shape.batch,
            Stack::Servers => 1,
        }
    }

    /// The design of a run: `--variant`, or the lab's own.
    fn variant(&self, shape: &Shape) -> Variant {
        shape
            .variant
            .and_then(Variant::from_name)
            .unwrap_or(Variant::Correct)
    }

    fn sender(&self, shape: &Shape) -> RoleSpec {
        let sender = Sender {
            batch: self.batch(shape),
            ..Sender::generate(self.stack, shape.messages, shape.seed)
        };
        RoleSpec {
            name: "sender".into(),
            argv: sender.argv().into_vec(),
            waits_on: SENDER_WORK,
        }
    }

    fn publisher(&self, shape: &Shape) -> RoleSpec {
        let variant = self.variant(shape).in_role(Publisher::NAME);
        let publisher = Publisher {
            batch: self.batch(shape),
            ..Publisher::of(self.stack, variant)
        };
        RoleSpec {
            name: "publisher".into(),
            argv: publisher.argv().into_vec(),
            waits_on: PUBLISHER_WORK,
        }
    }

    /// Consumer `c` (from 1), with or without an explicit lease (SQLite: every consumer
    /// claims under its own name; the servers' consumers all run the same argv).
    fn consumer(&self, shape: &Shape, c: usize, lease: bool) -> RoleSpec {
        let variant = self.variant(shape).in_role(Consumer::NAME);
        let on_files = self.stack == Stack::Sqlite;
        let consumer = Consumer {
            consumer_id: on_files.then(|| format!("c{c}")),
            lease_ms: (on_files && lease).then_some(shape.lease_ms),
            batch: self.batch(shape),
            ..Consumer::of(self.stack, variant)
        };
        RoleSpec {
            name: format!("consumer-c{c}"),
            argv: consumer.argv().into_vec(),
            waits_on: CONSUMER_WORK,
        }
    }
}

impl LoadProfile for Load {
    fn messages_max(&self) -> usize {
        CONTRACTS_MAX
    }

    fn databases(&self) -> &'static [&'static str] {
        self.stack.databases()
    }

    fn create(&self, work: &Path) -> Result<()> {
        watch::create(self.stack, work)
    }

    /// A contract written, an Outbox row sent, a message applied: three per message.
    fn units(&self, messages: usize) -> u64 {
        3 * messages as u64
    }

    /// The known-broken designs a chaos run may show on the servers; SQLite's own are shown
    /// by explore.
    fn variants(&self) -> &'static [&'static str] {
        match self.stack {
            Stack::Sqlite => &[],
            Stack::Servers => designs(self.stack),
        }
    }

    fn roles(&self, shape: &Shape) -> Vec<RoleSpec> {
        let mut all = vec![self.sender(shape), self.publisher(shape)];
        all.extend((1..=shape.consumers).map(|c| self.consumer(shape, c, true)));
        all
    }

    fn watch(&self, work: &Path, shape: &Shape) -> Result<Box<dyn Watch>> {
        let messages = shape.messages as u64;
        Ok(match self.stack {
            Stack::Sqlite => Box::new(watch::Files::open(work, messages)?),
            Stack::Servers => Box::new(watch::Watcher::open(work, messages)?),
        })
    }

    fn settle(&self, work: &Path) -> Result<()> {
        match self.stack {
            Stack::Sqlite => Ok(()),
            Stack::Servers => settle::settle(work),
        }
    }

    fn check(&self, work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
        check::check(self.stack, work, shape, events)
    }

    fn summary(&self, c: &serde_json::Value, shape: &Shape) -> Vec<String> {
        let (deliveries, queue) = match self.stack {
            Stack::Sqlite => (
                format!(
                    "physical deliveries {} (duplicate deliveries {}), duplicates suppressed {}",
                    c["physical_deliveries"], c["duplicate_deliveries"], c["duplicates_suppressed"]
                ),
                "queue pending",
            ),
            Stack::Servers => (
                format!(
                    "physical deliveries {} of {} publishes (redelivered {}, duplicate deliveries {}), duplicates suppressed {}",
                    c["physical_deliveries"],
                    c["publishes"],
                    c["redelivered"],
                    c["duplicate_deliveries"],
                    c["duplicates_suppressed"]
                ),
                "queue ready",
            ),
        };
        vec![
            deliveries,
            format!(
                "inbox {} of {}, ledger {} (expected {}), outbox pending {}, {queue} {}",
                c["inbox"],
                shape.messages,
                c["ledger"],
                c["ledger_expected"],
                c["outbox_pending"],
                c["queue_pending"]
            ),
            format!(
                "events: applied {}, duplicates {}, rejected {}",
                c["applied_events"], c["duplicate_events"], c["rejected_events"]
            ),
        ]
    }

    /// Every contract's amount in a log is the seed's (the roles' SQL carries it as a
    /// literal on every stack).
    fn check_log(&self, stdout: &str, shape: &Shape) -> Vec<String> {
        let amounts = crate::rng::amounts(shape.seed, shape.messages);
        amounts::seeded_amounts(stdout, &amounts)
    }

    // Bench refuses a lab on servers before it asks for these (bench/mod.rs).
    fn phases(&self) -> Vec<(&'static str, Vec<String>)> {
        if self.stack == Stack::Servers {
            return Vec::new();
        }
        let one = Shape {
            messages: 1,
            consumers: 1,
            batch: 1,
            seed: 1,
            lease_ms: 1,
            variant: None,
        };
        vec![
            ("sender", self.sender(&one).argv),
            ("publisher", self.publisher(&one).argv),
            (
                "consumer",
                Consumer::of(self.stack, Variant::Correct).argv().into_vec(),
            ),
            ("verify", Verify::of(self.stack, None).argv().into_vec()),
        ]
    }

    fn stages(&self, shape: &Shape) -> Vec<BenchStage> {
        if self.stack == Stack::Servers {
            return Vec::new();
        }
        vec![
            BenchStage {
                name: "outbox writes".into(),
                roles: vec![self.sender(shape)],
            },
            BenchStage {
                name: "publish".into(),
                roles: vec![self.publisher(shape)],
            },
            BenchStage {
                name: format!("consume x{}", shape.consumers),
                roles: (1..=shape.consumers)
                    .map(|c| self.consumer(shape, c, false))
                    .collect(),
            },
        ]
    }

    fn ceiling(&self, dir: &Path, shape: &Shape, stage: usize) -> Result<f64> {
        match self.stack {
            Stack::Sqlite => ceiling::ceiling(dir, shape, stage),
            Stack::Servers => Err(fail::usage(
                "bench measures lab 14 on SQLite files; on postgres-rabbitmq run chaos",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: Shape = Shape {
        messages: 30,
        consumers: 3,
        batch: 10,
        seed: 7,
        lease_ms: 500,
        variant: None,
    };

    fn parses(argv: &[String]) {
        let words = std::iter::once("crashlab".to_string()).chain(argv.iter().cloned());
        if let Err(e) = crate::cli::parser(crate::labs::LABS).try_get_matches_from(words) {
            panic!("{argv:?}: {e}");
        }
    }

    /// Every argv the profile gives is one the real command line accepts, and every role
    /// waits on an entry the watcher gives.
    #[test]
    fn the_roles_and_stages_are_the_labs_own_argv() {
        let roles = ON_SQLITE.roles(&SHAPE);
        let names: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "sender",
                "publisher",
                "consumer-c1",
                "consumer-c2",
                "consumer-c3"
            ]
        );
        assert_eq!(
            roles[2].argv.join(" "),
            "consumer --queue queue.db --receiver receiver.db --consumer-id c1 --lease-ms 500 --batch 10"
        );
        assert_eq!(
            roles[0].argv.join(" "),
            "sender --db sender.db --generate 30 --seed 7 --batch 10"
        );
        let stages = ON_SQLITE.stages(&SHAPE);
        assert_eq!(stages[2].name, "consume x3");
        let all = roles
            .iter()
            .chain(stages.iter().flat_map(|s| s.roles.iter()))
            .map(|r| r.argv.clone())
            .chain(ON_SQLITE.phases().into_iter().map(|(_, argv)| argv));
        for argv in all {
            parses(&argv);
        }
        assert!(roles.iter().all(|r| r.waits_on < 3));
        assert_eq!(ON_SQLITE.units(SHAPE.messages), 90);
    }

    /// On the servers: one message per transaction, no lease, and a variant changes only
    /// the role it is about.
    #[test]
    fn on_the_servers_a_variant_changes_its_role_only() {
        let roles = ON_SERVERS.roles(&SHAPE);
        assert_eq!(
            roles[0].argv.join(" "),
            "sender --stack postgres-rabbitmq --db sender --generate 30 --seed 7"
        );
        assert_eq!(
            roles[2].argv.join(" "),
            "consumer --stack postgres-rabbitmq --queue messages --receiver receiver"
        );
        let auto_ack = ON_SERVERS.roles(&Shape {
            variant: Some("auto-ack"),
            ..SHAPE
        });
        assert_eq!(
            auto_ack[1].argv, roles[1].argv,
            "auto-ack is the consumer's"
        );
        assert!(auto_ack[2].argv.join(" ").ends_with("--variant auto-ack"));
        let transient = ON_SERVERS.roles(&Shape {
            variant: Some("transient"),
            ..SHAPE
        });
        assert!(transient[1].argv.join(" ").ends_with("--variant transient"));
        assert_eq!(transient[3].argv, roles[3].argv);
        for r in roles.iter().chain(&auto_ack).chain(&transient) {
            parses(&r.argv);
        }
        assert!(roles.iter().all(|r| r.waits_on <= CONSUMER_WORK));
        assert_eq!(ON_SERVERS.units(SHAPE.messages), 90);
        assert_eq!(ON_SERVERS.variants(), designs(Stack::Servers));
        assert!(ON_SERVERS.phases().is_empty() && ON_SERVERS.stages(&SHAPE).is_empty());
    }
}
