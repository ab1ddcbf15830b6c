//! Lab 14's load profile on the stack (`chaos 14 --stack postgres-rabbitmq`): a sender
//! generating N contracts, one publisher (publisher confirms) and K consumers (manual acks,
//! Inbox + ledger in one PostgreSQL transaction, then the ack) at once on the run's own
//! databases and queue; progress read from PostgreSQL and the broker over connections kept
//! open (watch.rs); at the end the final rows and the queue's messages copied into SQLite
//! files (settle.rs) and the end-to-end check run on them (check.rs), so the audit re-derives
//! the verdict offline from the same files. Every argv comes from `roles`.
//!
//! The roles run one message per transaction (`--batch` and `--lease-ms` shape the SQLite
//! lab's roles; here the broker redelivers what a dead consumer held, with no lease).

mod check;
mod settle;
mod watch;

use std::path::Path;

use anyhow::Result;

use super::roles::{self, Send, STORES};
use super::variant::Variant;
use crate::engine::load::profile::{BenchStage, LoadProfile, RoleSpec, Shape, Verdict, Watch};
use crate::events::Event;
use crate::fail;

pub use check::Check;

pub struct StackLoad;

pub static LOAD: StackLoad = StackLoad;

/// What starts each role: contracts still to write, Outbox rows pending, messages ready.
const SENDER_WORK: usize = 0;
const PUBLISHER_WORK: usize = 1;
const CONSUMER_WORK: usize = 2;

/// The variant names `--variant` takes, the design's own first (`Variant::ALL`'s names; a
/// test holds them equal).
const VARIANTS: [&str; 5] = [
    "correct",
    "async-commit",
    "no-confirm",
    "auto-ack",
    "transient",
];

/// The design of a run: `--variant`, or the lab's own.
fn variant(shape: &Shape) -> Variant {
    shape
        .variant
        .and_then(Variant::from_name)
        .unwrap_or(Variant::Correct)
}

/// The variant a role runs: the run's, where it changes that role; else the design's.
fn variant_for(shape: &Shape, role: &str) -> Variant {
    let v = variant(shape);
    match v.phase() {
        Some(phase) if phase == role => v,
        _ => Variant::Correct,
    }
}

fn sender(shape: &Shape) -> RoleSpec {
    let send = Send::Generate {
        n: shape.messages,
        seed: shape.seed,
    };
    RoleSpec {
        name: "sender".into(),
        argv: roles::sender(&STORES, send).into_vec(),
        waits_on: SENDER_WORK,
    }
}

fn publisher(shape: &Shape) -> RoleSpec {
    RoleSpec {
        name: "publisher".into(),
        argv: roles::publisher(&STORES, variant_for(shape, roles::PUBLISHER)).into_vec(),
        waits_on: PUBLISHER_WORK,
    }
}

/// Consumer `c` (from 1): every consumer runs the same argv on the one queue.
fn consumer(shape: &Shape, c: usize) -> RoleSpec {
    RoleSpec {
        name: format!("consumer-c{c}"),
        argv: roles::consumer(&STORES, variant_for(shape, roles::CONSUMER)).into_vec(),
        waits_on: CONSUMER_WORK,
    }
}

impl LoadProfile for StackLoad {
    fn messages_max(&self) -> usize {
        crate::labs::outbox_inbox::sender::CONTRACTS_MAX
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::LAB.databases
    }

    /// The schemas of both databases and the durable queue, made before any role starts,
    /// so the roles and the watcher find them (and a broker kill finds the queue on disk).
    fn create(&self, work: &Path) -> Result<()> {
        watch::create(work)
    }

    /// A contract written, an Outbox row sent, a message applied: three per message.
    fn units(&self, messages: usize) -> u64 {
        3 * messages as u64
    }

    fn variants(&self) -> &'static [&'static str] {
        &VARIANTS
    }

    fn roles(&self, shape: &Shape) -> Vec<RoleSpec> {
        let mut all = vec![sender(shape), publisher(shape)];
        all.extend((1..=shape.consumers).map(|c| consumer(shape, c)));
        all
    }

    fn watch(&self, work: &Path, shape: &Shape) -> Result<Box<dyn Watch>> {
        Ok(Box::new(watch::Watcher::open(work, shape.messages as u64)?))
    }

    fn settle(&self, work: &Path) -> Result<()> {
        settle::settle(work)
    }

    fn check(&self, work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
        check::check(work, shape, events)
    }

    fn summary(&self, c: &serde_json::Value, shape: &Shape) -> Vec<String> {
        vec![
            format!(
                "physical deliveries {} of {} publishes (redelivered {}, duplicate deliveries {}), duplicates suppressed {}",
                c["physical_deliveries"],
                c["publishes"],
                c["redelivered"],
                c["duplicate_deliveries"],
                c["duplicates_suppressed"]
            ),
            format!(
                "inbox {} of {}, ledger {} (expected {}), outbox pending {}, queue ready {}",
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
    /// literal, as the SQLite lab's does).
    fn check_log(&self, stdout: &str, shape: &Shape) -> Vec<String> {
        let amounts = crate::rng::amounts(shape.seed, shape.messages);
        crate::labs::outbox_inbox::load_amounts::seeded_amounts(stdout, &amounts)
    }

    // Bench refuses a lab on servers before it asks for these (bench/mod.rs).
    fn phases(&self) -> Vec<(&'static str, Vec<String>)> {
        Vec::new()
    }

    fn stages(&self, _shape: &Shape) -> Vec<BenchStage> {
        Vec::new()
    }

    fn ceiling(&self, _dir: &Path, _shape: &Shape, _stage: usize) -> Result<f64> {
        Err(fail::usage(
            "bench measures lab 14 on SQLite files; on postgres-rabbitmq run chaos",
        ))
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

    /// Every argv the profile gives is one the real command line accepts, every role waits
    /// on an entry the watcher gives, and a variant changes only the role it is about.
    #[test]
    fn the_roles_are_the_labs_own_argv_and_a_variant_changes_its_role_only() {
        let roles = LOAD.roles(&SHAPE);
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
            roles[0].argv.join(" "),
            "stack-sender --db sender --generate 30 --seed 7"
        );
        assert_eq!(
            roles[2].argv.join(" "),
            "stack-consumer --queue messages --receiver receiver"
        );
        let auto_ack = Shape {
            variant: Some("auto-ack"),
            ..SHAPE
        };
        let broken = LOAD.roles(&auto_ack);
        assert_eq!(broken[1].argv, roles[1].argv, "auto-ack is the consumer's");
        assert!(broken[2].argv.join(" ").ends_with("--variant auto-ack"));
        let transient = LOAD.roles(&Shape {
            variant: Some("transient"),
            ..SHAPE
        });
        assert!(transient[1].argv.join(" ").ends_with("--variant transient"));
        assert_eq!(transient[3].argv, roles[3].argv);
        for argv in roles
            .iter()
            .chain(&broken)
            .chain(&transient)
            .map(|r| &r.argv)
        {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone());
            if let Err(e) = crate::cli::parser().try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
        assert!(roles.iter().all(|r| r.waits_on <= CONSUMER_WORK));
        assert_eq!(LOAD.units(SHAPE.messages), 90);
        let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(LOAD.variants(), names.as_slice());
    }
}
