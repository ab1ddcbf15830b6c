//! The stores of a load run made before its roles start, and the watcher: one read-only
//! PostgreSQL connection per database and one broker channel, kept open for the run (made
//! anew by the engine after a server kill), answering each poll with three round trips.

use std::cell::RefCell;
use std::path::Path;

use anyhow::Result;

use super::super::amqp::Broker;
use super::super::pg::{self, Pg, Session};
use super::super::roles::STORES;
use super::super::schema::{RECEIVER, SENDER};
use crate::engine::load::profile::{Observed, Watch};

/// Both databases with their schemas, and the durable queue declared (as the roles declare
/// it: a declare of an existing queue with the same arguments changes nothing).
pub fn create(work: &Path) -> Result<()> {
    pg::open_in(work, STORES.sender, &SENDER, Session::Durable, true)?;
    pg::open_in(work, STORES.receiver, &RECEIVER, Session::Durable, true)?;
    let mut broker = Broker::open_in(work, STORES.queue, false, false)?;
    broker.declare_unsaid()?;
    broker.close()
}

pub struct Watcher {
    sender: RefCell<Pg>,
    receiver: RefCell<Pg>,
    broker: RefCell<Broker>,
    messages: u64,
}

impl Watcher {
    pub fn open(work: &Path, messages: u64) -> Result<Watcher> {
        Ok(Watcher {
            sender: RefCell::new(pg::open_in(
                work,
                STORES.sender,
                &SENDER,
                Session::ReadOnly,
                false,
            )?),
            receiver: RefCell::new(pg::open_in(
                work,
                STORES.receiver,
                &RECEIVER,
                Session::ReadOnly,
                false,
            )?),
            broker: RefCell::new(Broker::open_in(work, STORES.queue, false, false)?),
            messages,
        })
    }
}

/// The integers of the first row of a query (counts: never NULL, never negative).
fn counts(pg: &RefCell<Pg>, sql: &str) -> Result<Vec<u64>> {
    let mut pg = pg.borrow_mut();
    let outcome = pg.run(sql, &[]).map_err(|e| pg.explain(e))?;
    let row = outcome.rows.first().cloned().unwrap_or_default();
    Ok(row
        .iter()
        .map(|v| v.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0))
        .collect())
}

/// The work of each role from the counts: (contracts, pending, sent, applied, ready).
pub fn observed(messages: u64, read: [u64; 5]) -> Observed {
    let [contracts, pending, sent, applied, ready] = read;
    Observed {
        units: contracts.min(messages) + sent.min(messages) + applied.min(messages),
        work: vec![contracts < messages, pending > 0, ready > 0],
    }
}

impl Watch for Watcher {
    fn read(&self) -> Result<Observed> {
        let sender = counts(
            &self.sender,
            "SELECT (SELECT count(*) FROM contracts), (SELECT count(*) FROM outbox WHERE status = 'pending'), (SELECT count(*) FROM outbox WHERE status = 'sent')",
        )?;
        let applied = counts(&self.receiver, "SELECT count(*) FROM inbox")?;
        // The queue was declared before the run: absent would mean the broker lost it.
        let ready = self.broker.borrow_mut().ready()?.ok_or_else(|| {
            crate::fail::failed(
                "the run's queue is gone from the broker (it was declared durable before the run)",
            )
        })?;
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        Ok(observed(
            self.messages,
            [
                at(&sender, 0),
                at(&sender, 1),
                at(&sender, 2),
                at(&applied, 0),
                u64::from(ready),
            ],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_has_work_while_its_stage_is_unfinished() {
        let start = observed(10, [0, 0, 0, 0, 0]);
        assert_eq!(start.units, 0);
        assert_eq!(start.work, [true, false, false]);
        let mid = observed(10, [10, 3, 7, 4, 2]);
        assert_eq!(mid.units, 21);
        assert_eq!(mid.work, [false, true, true]);
        let done = observed(10, [10, 0, 10, 10, 0]);
        assert_eq!(done.units, 30);
        assert!(done.idle());
    }
}
