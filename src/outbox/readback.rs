//! The read-only view of lab 14's three files: the readback JSON of `verify`, and the
//! per-contract detail the explore checker needs.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::outbox::schema::{QUEUE, RECEIVER, SENDER};
use crate::store::{self, Access, Db};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SenderState {
    pub contracts: i64,
    pub outbox_pending: i64,
    pub outbox_sent: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    pub deliveries: i64,
    pub messages: i64,
    pub pending: i64,
    pub acked: i64,
    pub rejected: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverState {
    pub inbox: i64,
    pub ledger: i64,
}

/// The readback JSON. A queue or receiver file that does not exist yet reads as empty and is
/// named in `absent`; it is never created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub sender: SenderState,
    pub queue: QueueState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

pub struct Paths<'a> {
    pub sender: &'a Path,
    pub queue: &'a Path,
    pub receiver: &'a Path,
}

fn count(db: &Db, sql: &str, shown: &str) -> Result<i64> {
    db.conn
        .query_row(sql, [], |r| r.get(0))
        .map_err(|e| store::explain(e, db.db, shown))
}

/// Read the three files read-only. The sender file must exist: every run starts there.
pub fn read(paths: &Paths<'_>, trace: bool) -> Result<State> {
    let mut state = State::default();
    let sender = store::open_traced(paths.sender, &SENDER, Access::Read, trace)?;
    let queue = store::open_existing(paths.queue, &QUEUE, trace)?;
    let receiver = store::open_existing(paths.receiver, &RECEIVER, trace)?;
    let s = paths.sender.display().to_string();
    state.sender = SenderState {
        contracts: count(&sender, "SELECT count(*) FROM contracts", &s)?,
        outbox_pending: count(
            &sender,
            "SELECT count(*) FROM outbox WHERE status = 'pending'",
            &s,
        )?,
        outbox_sent: count(
            &sender,
            "SELECT count(*) FROM outbox WHERE status = 'sent'",
            &s,
        )?,
    };
    match &queue {
        Some(q) => {
            let s = paths.queue.display().to_string();
            state.queue = QueueState {
                deliveries: count(q, "SELECT count(*) FROM deliveries", &s)?,
                messages: count(q, "SELECT count(DISTINCT message_id) FROM deliveries", &s)?,
                pending: count(
                    q,
                    "SELECT count(*) FROM deliveries WHERE status = 'pending'",
                    &s,
                )?,
                acked: count(
                    q,
                    "SELECT count(*) FROM deliveries WHERE status = 'acked'",
                    &s,
                )?,
                rejected: count(
                    q,
                    "SELECT count(*) FROM deliveries WHERE status = 'rejected'",
                    &s,
                )?,
            };
        }
        None => state.absent.push("queue"),
    }
    match &receiver {
        Some(r) => {
            let s = paths.receiver.display().to_string();
            state.receiver = ReceiverState {
                inbox: count(r, "SELECT count(*) FROM inbox", &s)?,
                ledger: count(r, "SELECT coalesce(sum(balance), 0) FROM ledger", &s)?,
            };
        }
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// Per-contract facts for the end-to-end invariants.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Detail {
    /// (contract, amount) committed in the sender.
    pub contracts: Vec<(String, i64)>,
    /// (contract, balance, credits) in the receiver's ledger.
    pub ledger: Vec<(String, i64, i64)>,
    pub deliveries: i64,
    pub duplicates_in_queue: i64,
}

pub fn detail(paths: &Paths<'_>) -> Result<Detail> {
    let mut detail = Detail::default();
    let sender = store::open_traced(paths.sender, &SENDER, Access::Read, false)?;
    let s = paths.sender.display().to_string();
    let explain = |e| store::explain(e, "sender", &s);
    let mut stmt = sender
        .conn
        .prepare("SELECT contract_id, amount FROM contracts ORDER BY contract_id")
        .map_err(explain)?;
    detail.contracts = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(explain)?;
    if let Some(q) = store::open_existing(paths.queue, &QUEUE, false)? {
        let s = paths.queue.display().to_string();
        detail.deliveries = count(&q, "SELECT count(*) FROM deliveries", &s)?;
        detail.duplicates_in_queue =
            detail.deliveries - count(&q, "SELECT count(DISTINCT message_id) FROM deliveries", &s)?;
    }
    if let Some(r) = store::open_existing(paths.receiver, &RECEIVER, false)? {
        let s = paths.receiver.display().to_string();
        let explain = |e| store::explain(e, "receiver", &s);
        let mut stmt = r
            .conn
            .prepare("SELECT contract_id, balance, credits FROM ledger ORDER BY contract_id")
            .map_err(explain)?;
        detail.ledger = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(explain)?;
    }
    Ok(detail)
}
