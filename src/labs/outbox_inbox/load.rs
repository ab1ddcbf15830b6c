//! Lab 14's load profile: a sender generating N contracts, one publisher and K consumers at
//! once on the three files; progress read from the files; the end-to-end check in
//! `load_check`, the plain-insert ceiling in `load_ceiling`, the seeded values of a log in
//! `load_amounts`. Every argv comes from `roles`.

use std::path::Path;

use anyhow::Result;
use rusqlite::OptionalExtension;

use super::roles::{self, Consume, Files, Send, CONSUME, FILES};
use super::schema::{QUEUE, RECEIVER, SENDER};
use super::variant::Variant;
use crate::engine::load::profile::{
    BenchStage, LoadProfile, Observed, RoleSpec, Shape, Verdict, Watch,
};
use crate::events::Event;
use crate::store::{self, Access, Db};

pub struct OutboxInboxLoad;

pub static LOAD: OutboxInboxLoad = OutboxInboxLoad;

/// What starts each role: contracts still to write, Outbox rows pending, deliveries pending.
const SENDER_WORK: usize = 0;
const PUBLISHER_WORK: usize = 1;
const CONSUMER_WORK: usize = 2;

fn argv(a: roles::Argv) -> Vec<String> {
    a.into_vec()
}

fn sender(shape: &Shape) -> RoleSpec {
    let send = Send::Generate {
        n: shape.messages,
        seed: shape.seed,
    };
    RoleSpec {
        name: "sender".into(),
        argv: argv(roles::sender(&FILES, send, shape.batch)),
        waits_on: SENDER_WORK,
    }
}

fn publisher(shape: &Shape) -> RoleSpec {
    RoleSpec {
        name: "publisher".into(),
        argv: argv(roles::publisher(&FILES, shape.batch, Variant::Correct)),
        waits_on: PUBLISHER_WORK,
    }
}

/// Consumer `c` (from 1), with or without an explicit lease.
fn consumer(shape: &Shape, c: usize, lease: bool) -> RoleSpec {
    let id = format!("c{c}");
    let how = Consume {
        consumer_id: Some(&id),
        lease_ms: lease.then_some(shape.lease_ms),
        batch: shape.batch,
        ..CONSUME
    };
    RoleSpec {
        name: format!("consumer-c{c}"),
        argv: argv(roles::consumer(&FILES, &how)),
        waits_on: CONSUMER_WORK,
    }
}

/// Read-only connections kept open for the run: cheap counts, estimated from rowids where
/// rows are only ever appended (the final check counts exactly).
struct Watcher {
    sender: Db,
    queue: Db,
    receiver: Db,
    messages: u64,
}

fn one(db: &Db, sql: &str) -> Result<u64> {
    let n: Option<i64> = db
        .conn
        .query_row(sql, [], |r| r.get(0))
        .optional()
        .map_err(|e| store::explain(e, db.db, db.db))?
        .flatten();
    Ok(n.unwrap_or(0).max(0) as u64)
}

impl Watch for Watcher {
    fn read(&self) -> Result<Observed> {
        let contracts = one(&self.sender, "SELECT max(rowid) FROM contracts")?;
        let outbox = one(&self.sender, "SELECT max(seq) FROM outbox")?;
        let outbox_pending = one(
            &self.sender,
            "SELECT count(*) FROM outbox WHERE status = 'pending'",
        )?;
        let queue_pending = one(
            &self.queue,
            "SELECT count(*) FROM deliveries WHERE status = 'pending'",
        )?;
        let applied = one(&self.receiver, "SELECT max(rowid) FROM inbox")?;
        let sent = outbox.saturating_sub(outbox_pending);
        Ok(Observed {
            units: contracts + sent + applied,
            work: vec![
                contracts < self.messages,
                outbox_pending > 0,
                queue_pending > 0,
            ],
        })
    }
}

fn at(work: &Path, files: &Files<'_>) -> [std::path::PathBuf; 3] {
    [
        work.join(files.sender),
        work.join(files.queue),
        work.join(files.receiver),
    ]
}

impl LoadProfile for OutboxInboxLoad {
    fn messages_max(&self) -> usize {
        super::sender::CONTRACTS_MAX
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::LAB.databases
    }

    fn create(&self, work: &Path) -> Result<()> {
        let [s, q, r] = at(work, &FILES);
        store::open_traced(&s, &SENDER, Access::WriteCreate, false)?;
        store::open_traced(&q, &QUEUE, Access::WriteCreate, false)?;
        store::open_traced(&r, &RECEIVER, Access::WriteCreate, false)?;
        Ok(())
    }

    /// A contract written, an Outbox row sent, a message applied: three per message.
    fn units(&self, messages: usize) -> u64 {
        3 * messages as u64
    }

    fn roles(&self, shape: &Shape) -> Vec<RoleSpec> {
        let mut all = vec![sender(shape), publisher(shape)];
        all.extend((1..=shape.consumers).map(|c| consumer(shape, c, true)));
        all
    }

    fn watch(&self, work: &Path, shape: &Shape) -> Result<Box<dyn Watch>> {
        let [s, q, r] = at(work, &FILES);
        Ok(Box::new(Watcher {
            sender: store::open_traced(&s, &SENDER, Access::Read, false)?,
            queue: store::open_traced(&q, &QUEUE, Access::Read, false)?,
            receiver: store::open_traced(&r, &RECEIVER, Access::Read, false)?,
            messages: shape.messages as u64,
        }))
    }

    fn check(&self, work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
        super::load_check::check(work, shape, events)
    }

    fn summary(&self, c: &serde_json::Value, shape: &Shape) -> Vec<String> {
        vec![
            format!(
                "physical deliveries {} (duplicate deliveries {}), duplicates suppressed {}",
                c["physical_deliveries"], c["duplicate_deliveries"], c["duplicates_suppressed"]
            ),
            format!(
                "inbox {} of {}, ledger {} (expected {}), outbox pending {}, queue pending {}",
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

    fn check_log(&self, stdout: &str, shape: &Shape) -> Vec<String> {
        let amounts = crate::rng::amounts(shape.seed, shape.messages);
        super::load_amounts::seeded_amounts(stdout, &amounts)
    }

    fn phases(&self) -> Vec<(&'static str, Vec<String>)> {
        let one = Send::Generate { n: 1, seed: 1 };
        vec![
            ("sender", argv(roles::sender(&FILES, one, 1))),
            (
                "publisher",
                argv(roles::publisher(&FILES, 1, Variant::Correct)),
            ),
            ("consumer", argv(roles::consumer(&FILES, &CONSUME))),
            ("verify", argv(roles::verify(&FILES, true, None))),
        ]
    }

    fn stages(&self, shape: &Shape) -> Vec<BenchStage> {
        vec![
            BenchStage {
                name: "outbox writes".into(),
                roles: vec![sender(shape)],
            },
            BenchStage {
                name: "publish".into(),
                roles: vec![publisher(shape)],
            },
            BenchStage {
                name: format!("consume x{}", shape.consumers),
                roles: (1..=shape.consumers)
                    .map(|c| consumer(shape, c, false))
                    .collect(),
            },
        ]
    }

    fn ceiling(&self, dir: &Path, shape: &Shape, stage: usize) -> Result<f64> {
        super::load_ceiling::ceiling(dir, shape, stage)
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

    /// Every argv the profile gives is one the real command line accepts, and every role
    /// waits on an entry the watcher gives.
    #[test]
    fn the_roles_and_stages_are_the_labs_own_argv() {
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
            roles[2].argv.join(" "),
            "consumer --queue queue.db --receiver receiver.db --consumer-id c1 --lease-ms 500 --batch 10"
        );
        assert_eq!(
            roles[0].argv.join(" "),
            "sender --db sender.db --generate 30 --seed 7 --batch 10"
        );
        let stages = LOAD.stages(&SHAPE);
        assert_eq!(stages[2].name, "consume x3");
        let all = roles
            .iter()
            .chain(stages.iter().flat_map(|s| s.roles.iter()))
            .map(|r| r.argv.clone())
            .chain(LOAD.phases().into_iter().map(|(_, argv)| argv));
        for argv in all {
            let words = std::iter::once("crashlab".to_string()).chain(argv.clone());
            if let Err(e) = crate::cli::parser().try_get_matches_from(words) {
                panic!("{argv:?}: {e}");
            }
        }
        assert!(roles.iter().all(|r| r.waits_on < 3));
        assert_eq!(LOAD.units(SHAPE.messages), 90);
    }
}
