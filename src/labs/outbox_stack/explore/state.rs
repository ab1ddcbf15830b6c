//! What a case's stores hold after recovery: rows of both PostgreSQL databases and the queue's
//! ready messages, read from the engine's process without a trace (`stack.json` in the case's
//! work directory says where they are).

use std::path::Path;

use anyhow::Result;

use super::super::amqp::Broker;
use super::super::pg::{open_in, Pg, Session};
use super::super::schema::{RECEIVER, SENDER};

/// Every row the invariants look at. A database with no table yet reads as empty.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// (contract, amount).
    pub contracts: Vec<(String, i64)>,
    /// (message, contract, status).
    pub outbox: Vec<(String, String, String)>,
    /// Messages in the Inbox.
    pub inbox: Vec<String>,
    /// (contract, balance, credits).
    pub ledger: Vec<(String, i64, i64)>,
    /// (message, outcome, handled) per physical message.
    pub receipts: Vec<(String, String, i64)>,
    /// Messages ready in the queue.
    pub ready: i64,
}

impl Observed {
    pub fn outbox_pending(&self) -> usize {
        self.outbox.iter().filter(|r| r.2 == "pending").count()
    }
}

fn rows(pg: &mut Pg, sql: &str) -> Result<Vec<Vec<String>>> {
    let outcome = pg.run(sql, &[]).map_err(|e| pg.explain(e))?;
    Ok(outcome
        .rows
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect())
}

fn int(text: &str) -> i64 {
    text.parse().unwrap_or(0)
}

/// Read both databases and the queue of the case in `work`.
pub fn read(work: &Path) -> Result<Observed> {
    let mut o = Observed::default();
    let mut s = open_in(work, "sender", &SENDER, Session::ReadOnly, false)?;
    if !s.empty {
        o.contracts = rows(
            &mut s,
            "SELECT contract_id, amount FROM contracts ORDER BY contract_id",
        )?
        .into_iter()
        .map(|r| (r[0].clone(), int(&r[1])))
        .collect();
        o.outbox = rows(
            &mut s,
            "SELECT message_id, contract_id, status FROM outbox ORDER BY message_id",
        )?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[2].clone()))
        .collect();
    }
    let mut r = open_in(work, "receiver", &RECEIVER, Session::ReadOnly, false)?;
    if !r.empty {
        o.inbox = rows(&mut r, "SELECT message_id FROM inbox ORDER BY message_id")?
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        o.ledger = rows(
            &mut r,
            "SELECT contract_id, balance, credits FROM ledger ORDER BY contract_id",
        )?
        .into_iter()
        .map(|r| (r[0].clone(), int(&r[1]), int(&r[2])))
        .collect();
        o.receipts = rows(
            &mut r,
            "SELECT message_id, outcome, handled FROM receipts ORDER BY publish_id",
        )?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone(), int(&r[2])))
        .collect();
    }
    let mut broker = Broker::open_in(work, "messages", false, false)?;
    o.ready = i64::from(broker.ready()?.unwrap_or(0));
    broker.close()?;
    Ok(o)
}
