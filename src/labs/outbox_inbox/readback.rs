//! The read-only view of lab 14's three files: the readback JSON of `verify`, and the
//! per-contract detail the explore checker needs.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use crate::labs::outbox_inbox::schema::{QUEUE, RECEIVER, SENDER};
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

fn n(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

/// The sender's part of the readback, from an open connection (a file, or the audit's replay).
pub fn sender_state(conn: &Connection) -> rusqlite::Result<SenderState> {
    Ok(SenderState {
        contracts: n(conn, "SELECT count(*) FROM contracts")?,
        outbox_pending: n(conn, "SELECT count(*) FROM outbox WHERE status = 'pending'")?,
        outbox_sent: n(conn, "SELECT count(*) FROM outbox WHERE status = 'sent'")?,
    })
}

pub fn queue_state(conn: &Connection) -> rusqlite::Result<QueueState> {
    Ok(QueueState {
        deliveries: n(conn, "SELECT count(*) FROM deliveries")?,
        messages: n(conn, "SELECT count(DISTINCT message_id) FROM deliveries")?,
        pending: n(
            conn,
            "SELECT count(*) FROM deliveries WHERE status = 'pending'",
        )?,
        acked: n(
            conn,
            "SELECT count(*) FROM deliveries WHERE status = 'acked'",
        )?,
        rejected: n(
            conn,
            "SELECT count(*) FROM deliveries WHERE status = 'rejected'",
        )?,
    })
}

pub fn receiver_state(conn: &Connection) -> rusqlite::Result<ReceiverState> {
    Ok(ReceiverState {
        inbox: n(conn, "SELECT count(*) FROM inbox")?,
        ledger: n(conn, "SELECT coalesce(sum(balance), 0) FROM ledger")?,
    })
}

/// The readback JSON of open connections; `None` is a file that does not exist (`absent`).
pub fn state_of(
    sender: &Connection,
    queue: Option<&Connection>,
    receiver: Option<&Connection>,
) -> rusqlite::Result<State> {
    let mut state = State {
        sender: sender_state(sender)?,
        ..State::default()
    };
    match queue {
        Some(q) => state.queue = queue_state(q)?,
        None => state.absent.push("queue"),
    }
    match receiver {
        Some(r) => state.receiver = receiver_state(r)?,
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// Read the three files read-only. The sender file must exist: every run starts there.
pub fn read(paths: &Paths<'_>, trace: bool) -> Result<State> {
    let mut state = State::default();
    let sender = store::open_traced(paths.sender, &SENDER, Access::Read, trace)?;
    let queue = store::open_existing(paths.queue, &QUEUE, trace)?;
    let receiver = store::open_existing(paths.receiver, &RECEIVER, trace)?;
    let shown = |p: &Path| p.display().to_string();
    state.sender = sender_state(&sender.conn)
        .map_err(|e| store::explain(e, sender.db, &shown(paths.sender)))?;
    match &queue {
        Some(q) => {
            state.queue =
                queue_state(&q.conn).map_err(|e| store::explain(e, q.db, &shown(paths.queue)))?
        }
        None => state.absent.push("queue"),
    }
    match &receiver {
        Some(r) => {
            state.receiver = receiver_state(&r.conn)
                .map_err(|e| store::explain(e, r.db, &shown(paths.receiver)))?
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

/// The readback of `verify` on the replayed databases (engine::Lab::readback).
pub fn replayed(
    phase: &str,
    dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    if phase != "verify" {
        return None;
    }
    let Some(sender) = dbs.get("sender") else {
        return Some(Err(
            "the replay has no sender database for it to read".to_string()
        ));
    };
    Some(
        state_of(
            sender,
            dbs.get("queue").copied(),
            dbs.get("receiver").copied(),
        )
        .map(|s| serde_json::to_value(s).expect("a readback serializes"))
        .map_err(|e| format!("reading the replayed files: {e}")),
    )
}
