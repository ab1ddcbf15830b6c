//! The stores of a load run made before its roles start, and the watchers that poll its
//! progress over connections kept open for the run: on SQLite read-only connections to the
//! three files (cheap counts, estimated from rowids where rows are only ever appended; the
//! final check counts exactly); on the servers one read-only PostgreSQL connection per
//! database and one broker channel (made anew by the engine after a server kill), answering
//! each poll with three round trips.

use std::cell::RefCell;
use std::path::Path;

use anyhow::Result;
use rusqlite::OptionalExtension;

use super::super::schema::{PG_RECEIVER, PG_SENDER, QUEUE, RECEIVER, SENDER};
use super::super::stack::Stack;
use crate::engine::load::profile::{Observed, Watch};
use crate::store::amqp::Broker;
use crate::store::pg::{self, Pg, Session};
use crate::store::{self, Access, Db};

/// The stores with their schemas, before any role starts: the three files; or both
/// databases and the durable queue declared (as the roles declare it: a declare of an
/// existing queue with the same arguments changes nothing).
pub fn create(stack: Stack, work: &Path) -> Result<()> {
    let stores = stack.stores();
    if stack == Stack::Sqlite {
        for (name, schema) in [
            (stores.sender, &SENDER),
            (stores.queue, &QUEUE),
            (stores.receiver, &RECEIVER),
        ] {
            store::open_traced(&work.join(name), schema, Access::WriteCreate, false)?;
        }
        return Ok(());
    }
    pg::open_in(work, stores.sender, &PG_SENDER, Session::Durable, true)?;
    pg::open_in(work, stores.receiver, &PG_RECEIVER, Session::Durable, true)?;
    let mut broker = Broker::open_in(work, stores.queue, false, false)?;
    broker.declare_unsaid()?;
    broker.close()
}

/// The three files of a SQLite run, read-only.
pub struct Files {
    sender: Db,
    queue: Db,
    receiver: Db,
    messages: u64,
}

impl Files {
    pub fn open(work: &Path, messages: u64) -> Result<Files> {
        let stores = Stack::Sqlite.stores();
        let open = |name, schema| store::open_traced(&work.join(name), schema, Access::Read, false);
        Ok(Files {
            sender: open(stores.sender, &SENDER)?,
            queue: open(stores.queue, &QUEUE)?,
            receiver: open(stores.receiver, &RECEIVER)?,
            messages,
        })
    }
}

fn one(db: &Db, sql: &str) -> Result<u64> {
    let n: Option<i64> = db
        .conn
        .query_row(sql, [], |r| r.get(0))
        .optional()
        .map_err(|e| store::explain(e, db.db, &db.shown))?
        .flatten();
    Ok(n.unwrap_or(0).max(0) as u64)
}

impl Watch for Files {
    fn read(&self) -> Result<Observed> {
        let contracts = one(&self.sender, "SELECT max(rowid) FROM contracts")?;
        let outbox = one(&self.sender, "SELECT max(seq) FROM outbox")?;
        let pending = one(
            &self.sender,
            "SELECT count(*) FROM outbox WHERE status = 'pending'",
        )?;
        let ready = one(
            &self.queue,
            "SELECT count(*) FROM deliveries WHERE status = 'pending'",
        )?;
        let applied = one(&self.receiver, "SELECT max(rowid) FROM inbox")?;
        let sent = outbox.saturating_sub(pending);
        Ok(observed(
            self.messages,
            [contracts, pending, sent, applied, ready],
        ))
    }
}

pub struct Watcher {
    sender: RefCell<Pg>,
    receiver: RefCell<Pg>,
    broker: RefCell<Broker>,
    messages: u64,
}

impl Watcher {
    pub fn open(work: &Path, messages: u64) -> Result<Watcher> {
        let stores = Stack::Servers.stores();
        let open = |name, schema| pg::open_in(work, name, schema, Session::ReadOnly, false);
        Ok(Watcher {
            sender: RefCell::new(open(stores.sender, &PG_SENDER)?),
            receiver: RefCell::new(open(stores.receiver, &PG_RECEIVER)?),
            broker: RefCell::new(Broker::open_in(work, stores.queue, false, false)?),
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
