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
    o.ready = ready(work, o.outbox.iter().any(|r| r.2 == "sent"))?;
    Ok(o)
}

/// How long a queue the publisher surely declared may take to reappear after a broker
/// restart, and how often it is looked for meanwhile.
const QUEUE_BACK_WAIT_MS: u64 = 10_000;
const QUEUE_LOOK_EVERY_MS: u64 = 100;

/// Messages ready in the case's queue. A restarted broker opens its port before every
/// durable queue is recovered, and a passive declare meanwhile answers "no such queue"; a
/// queue the publisher declared (an Outbox row is sent) is looked for again until it is
/// back (bounded), so a queue still recovering is never read as an empty one.
fn ready(work: &Path, declared: bool) -> Result<i64> {
    let looks = if declared {
        QUEUE_BACK_WAIT_MS / QUEUE_LOOK_EVERY_MS
    } else {
        1
    };
    for look in 0..looks {
        let mut broker = Broker::open_in(work, "messages", false, false)?;
        let count = broker.ready()?;
        broker.close()?;
        match count {
            Some(n) => return Ok(i64::from(n)),
            None if look + 1 < looks => {
                std::thread::sleep(std::time::Duration::from_millis(QUEUE_LOOK_EVERY_MS))
            }
            None => {}
        }
    }
    if declared {
        anyhow::bail!(
            "queue messages: not back {QUEUE_BACK_WAIT_MS} ms after the publisher declared it (a durable queue is lost?)"
        );
    }
    Ok(0)
}
