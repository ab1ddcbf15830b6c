//! A scenario's or case's own databases and queues on the run's servers (`prepare`), dropped
//! after it (`release`); and queues made once per run that survive a broker kill (`settle`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::{names, postgres, queues, Kind, Mq, Servers};
use crate::engine::stack::{QueueType, StackDef};
use crate::fail;
use crate::stackfile::StackFile;

/// How long `settle` leaves a fresh queue before it kills the broker, per attempt (one more
/// attempt, left longer, after each queue the kill lost or broke). Measured on RabbitMQ
/// 3.10.8: a classic queue killed at once is lost about once in twenty; a quorum queue killed
/// at once comes back broken, left 8 s it comes back whole.
pub const SETTLE_WAIT_MS: [u64; 4] = [1_000, 3_000, 8_000, 16_000];
/// How long the Raft leaders of settled quorum queues may take to come back after a restart.
const LEADERS_WAIT_MS: u64 = 60_000;

impl Servers {
    /// Fresh databases and queues of `def` for one scenario or case, tagged `tag` (a short
    /// [a-z0-9_] string unique in the run), and `stack.json` written into `work`. Queues are
    /// deleted if a leftover has the name, never declared: the lab's roles declare them with
    /// the arguments `stack.json` gives (durable, of the run's queue type). After `settle`,
    /// the run's settled queues are named instead, purged.
    pub fn prepare(&self, def: &StackDef, tag: &str, work: &Path) -> Result<StackFile> {
        // Every name and server is checked before anything is made.
        let amqp_url = self.amqp_url();
        if !def.databases.is_empty() && self.pg.is_none()
            || !def.queues.is_empty() && amqp_url.is_none()
        {
            return Err(fail::failed(format!(
                "stack {} needs a server that was not started",
                def.name
            )));
        }
        let mut file = StackFile {
            stack: def.name.to_string(),
            postgres: BTreeMap::new(),
            amqp_url,
            queues: BTreeMap::new(),
            queue_type: self.queue_type,
        };
        let admin_url = self.pg_url();
        let mut databases = Vec::new();
        for logical in def.databases {
            let name = names::of(tag, logical)?;
            let url = postgres::database_url(admin_url.as_deref().unwrap_or_default(), &name)?;
            file.postgres.insert(logical.to_string(), url);
            databases.push(name);
        }
        for logical in def.queues {
            let name = match &self.settled {
                Some(settled) => settled.get(*logical).cloned().ok_or_else(|| {
                    fail::failed(format!("queue {logical} was not settled for this run"))
                })?,
                None => names::of(tag, logical)?,
            };
            file.queues.insert(logical.to_string(), name);
        }
        let made = (|| {
            if let Some(admin_url) = &admin_url {
                let mut client = postgres::admin(admin_url)?;
                for name in &databases {
                    postgres::create_database(&mut client, name)?;
                }
            }
            if let Some(url) = &file.amqp_url {
                let names: Vec<&str> = file.queues.values().map(String::as_str).collect();
                match self.settled {
                    Some(_) => queues::purge(url, &names)?,
                    None => queues::delete(url, &names)?,
                }
            }
            crate::stackfile::write(work, &file)
        })();
        match made {
            Ok(()) => Ok(file),
            Err(e) => {
                // Nothing half made is left behind: the databases made so far are dropped.
                let _ = self.release(&file);
                Err(e)
            }
        }
    }

    /// Drop what `prepare` made (databases dropped, queues deleted).
    pub fn release(&self, file: &StackFile) -> Result<()> {
        if !file.postgres.is_empty() {
            if let Some(admin_url) = self.pg_url() {
                let mut client = postgres::admin(&admin_url)?;
                for url in file.postgres.values() {
                    let name = super::database_of(url);
                    if names::ours(name) {
                        postgres::drop_database(&mut client, name)?;
                    }
                }
            }
        }
        if let Some(url) = &file.amqp_url {
            let names: Vec<&str> = file
                .queues
                .values()
                .map(String::as_str)
                .filter(|n| names::ours(n))
                .collect();
            match self.settled {
                // Kept for the next case (the run's end takes the node down with them).
                Some(_) => queues::purge(url, &names)?,
                None => queues::delete(url, &names)?,
            }
        }
        Ok(())
    }

    /// After a restart of the broker, with settled quorum queues: wait (bounded) until the
    /// probe queue answers a purge, that is until the node's Raft leaders are elected again.
    /// Before that a quorum queue answers a passive declare with 0 messages, and a case's
    /// recovery would read its full queue as empty.
    pub(super) fn await_leaders(&self) -> Result<()> {
        let (Some(probe), Some(url)) = (&self.probe, self.amqp_url()) else {
            return Ok(());
        };
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_millis(LEADERS_WAIT_MS);
        while !queues::usable(&url, &[probe.as_str()])? {
            if std::time::Instant::now() >= deadline {
                return Err(fail::unavailable(format!(
                    "RabbitMQ: the quorum queues had no leader {LEADERS_WAIT_MS} ms after the restart"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Ok(())
    }

    /// Make the run's queues of `def` once, named with `tag`, so that they survive a kill of
    /// the broker: declared, left a moment, then the node SIGKILLed and restarted, then
    /// looked for and purged; a queue the restart lost or broke is given up and a fresh one
    /// made, left longer (bounded). From then on every `prepare` names these queues, purged,
    /// instead of fresh ones.
    ///
    /// Why: RabbitMQ 3.10 answers declare-ok before a queue is sure to survive a SIGKILL of
    /// the node. A classic queue killed at once after its declare is now and then gone after
    /// the restart; a quorum queue killed at once comes back without a Raft leader and
    /// refuses every operation (docs/lab-14-stack.md). A case on such a queue would read as
    /// a message the design lost, or hang.
    pub fn settle(&mut self, def: &StackDef, tag: &str) -> Result<()> {
        assert!(self.settled.is_none(), "a run's queues are settled once");
        if def.queues.is_empty() {
            return Ok(());
        }
        let url = match &self.mq {
            Some((Mq::Private(m), _)) => m.url(),
            Some((Mq::Given(_), _)) => return Err(super::refuse_given(Kind::Rabbitmq)),
            None => return Err(super::not_started(Kind::Rabbitmq)),
        };
        for (attempt, wait_ms) in SETTLE_WAIT_MS.iter().enumerate() {
            let mut settled = BTreeMap::new();
            for logical in def.queues {
                let name = names::of(&format!("{tag}a{attempt}"), logical)?;
                settled.insert(logical.to_string(), name);
            }
            // A quorum queue's count is its Raft leader's: a probe queue tells when the
            // leaders are back after each restart (`await_leaders`).
            let probe = (self.queue_type == QueueType::Quorum)
                .then(|| names::of(&format!("{tag}a{attempt}"), "probe"))
                .transpose()?;
            let mut names: Vec<&str> = settled.values().map(String::as_str).collect();
            names.extend(probe.as_deref());
            queues::delete(&url, &names)?;
            queues::declare(&url, &names, self.queue_type)?;
            std::thread::sleep(std::time::Duration::from_millis(*wait_ms));
            self.restart(Kind::Rabbitmq)?;
            if queues::usable(&url, &names)? {
                self.settled = Some(settled);
                self.probe = probe;
                return Ok(());
            }
        }
        Err(fail::unavailable(format!(
            "RabbitMQ lost or broke the run's {} queues in each of {} kills after their declare",
            self.queue_type.name(),
            SETTLE_WAIT_MS.len()
        )))
    }
}
