//! A scenario's or case's own databases and queues on the run's servers (`prepare`), dropped
//! after it (`release`); and queues made once per run that survive a broker kill (`settle`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::{names, postgres, queues, rabbitmq, Kind, Mq, Pg, Servers};
use crate::engine::stack::StackDef;
use crate::fail;
use crate::stackfile::StackFile;

/// Declare-kill-restart rounds `settle` tries before it gives up (a round loses the queue
/// rarely: about one in twenty when the kill follows the declare at once).
const SETTLE_ATTEMPTS_MAX: usize = 5;

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
        let admin_url = self.pg.as_ref().map(|(pg, _)| match pg {
            Pg::Private(p) => p.url("postgres"),
            Pg::Given(url) => url.clone(),
        });
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
                    None => rabbitmq::delete_queues(url, &names)?,
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
            if let Some((pg, _)) = &self.pg {
                let admin_url = match pg {
                    Pg::Private(p) => p.url("postgres"),
                    Pg::Given(url) => url.clone(),
                };
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
                None => rabbitmq::delete_queues(url, &names)?,
            }
        }
        Ok(())
    }

    /// Make the run's queues of `def` once, named with `tag`, so that they survive a kill of
    /// the broker: declared, then the node SIGKILLed and restarted, then looked for; a queue
    /// the restart lost is declared again (bounded). From then on every `prepare` names these
    /// queues, purged, instead of fresh ones.
    ///
    /// Why: RabbitMQ 3.10 answers declare-ok for a durable queue before its record in Mnesia
    /// is sure to survive a SIGKILL of the node; a kill soon after the declare now and then
    /// brings the node back without the queue (docs/lab-14-stack.md). A case whose queue
    /// vanished would read as a lost message of the design under test.
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
        let mut settled = BTreeMap::new();
        for logical in def.queues {
            settled.insert(logical.to_string(), names::of(tag, logical)?);
        }
        let names: Vec<&str> = settled.values().map(String::as_str).collect();
        rabbitmq::delete_queues(&url, &names)?;
        for _ in 0..SETTLE_ATTEMPTS_MAX {
            queues::declare(&url, &names, self.queue_type)?;
            self.restart(Kind::Rabbitmq)?;
            if queues::all_present(&url, &names, self.queue_type)? {
                self.settled = Some(settled);
                return Ok(());
            }
        }
        Err(fail::unavailable(format!(
            "RabbitMQ lost the durable queues {} in each of {SETTLE_ATTEMPTS_MAX} kills after their declare",
            names.join(", ")
        )))
    }

}
