//! The read-only view of lab f2's two files: the readback JSON of `poison-verify`, and the
//! per-message detail explore judges.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use super::schema::{QUEUE, RECEIVER};
use crate::store;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    pub messages: i64,
    pub pending: i64,
    pub done: i64,
    pub parked: i64,
    /// Failed attempts recorded, over every message.
    pub failures: i64,
    pub dead_letters: i64,
    pub dead_parked: i64,
    pub dead_replayed: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverState {
    pub credits: i64,
    pub total: i64,
}

/// The readback JSON. A file that does not exist reads as empty and is named in `absent`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub queue: QueueState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

fn n(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

pub fn queue_state(c: &Connection) -> rusqlite::Result<QueueState> {
    let status = |s: &str| {
        n(
            c,
            &format!("SELECT count(*) FROM messages WHERE status = '{s}'"),
        )
    };
    let dead = |s: &str| {
        n(
            c,
            &format!("SELECT count(*) FROM dead_letters WHERE status = '{s}'"),
        )
    };
    Ok(QueueState {
        messages: n(c, "SELECT count(*) FROM messages")?,
        pending: status("pending")?,
        done: status("done")?,
        parked: status("parked")?,
        failures: n(c, "SELECT coalesce(sum(failures), 0) FROM messages")?,
        dead_letters: n(c, "SELECT count(*) FROM dead_letters")?,
        dead_parked: dead("parked")?,
        dead_replayed: dead("replayed")?,
    })
}

pub fn receiver_state(c: &Connection) -> rusqlite::Result<ReceiverState> {
    Ok(ReceiverState {
        credits: n(c, "SELECT count(*) FROM credits")?,
        total: n(c, "SELECT coalesce(sum(amount), 0) FROM credits")?,
    })
}

pub fn state_of(
    queue: Option<&Connection>,
    receiver: Option<&Connection>,
) -> rusqlite::Result<State> {
    let mut state = State::default();
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

/// Read both files read-only; a missing one is `absent`, never created.
pub fn read(queue: &Path, receiver: &Path, trace: bool) -> Result<State> {
    let q = store::open_existing(queue, &QUEUE, trace)?;
    let r = store::open_existing(receiver, &RECEIVER, trace)?;
    state_of(q.as_ref().map(|d| &d.conn), r.as_ref().map(|d| &d.conn)).map_err(|e| {
        let shown = format!("{} or {}", queue.display(), receiver.display());
        store::explain(e, "queue or receiver", &shown)
    })
}

/// One message as the files show it, for explore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    pub id: String,
    pub amount: i64,
    pub status: String,
    pub failures: i64,
    /// The dead letter's status and attempts, when it was parked.
    pub dead: Option<(String, i64)>,
    /// The amount credited at the receiver, when it was.
    pub credited: Option<i64>,
}

/// Every message in queue order, and the credits of ids the queue does not hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Detail {
    pub messages: Vec<Message>,
    pub foreign_credits: Vec<String>,
}

pub fn detail(queue: &Path, receiver: &Path) -> Result<Detail> {
    let mut d = Detail::default();
    let mut credits: Vec<(String, i64)> = Vec::new();
    if let Some(r) = store::open_existing(receiver, &RECEIVER, false)? {
        credits = store::rows(
            &r,
            "SELECT message_id, amount FROM credits",
            receiver,
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
    }
    if let Some(q) = store::open_existing(queue, &QUEUE, false)? {
        type Row = (String, i64, String, i64, Option<String>, Option<i64>);
        let rows: Vec<Row> = store::rows(
            &q,
            "SELECT m.message_id, m.amount, m.status, m.failures, d.status, d.attempts
             FROM messages m LEFT JOIN dead_letters d ON d.message_id = m.message_id ORDER BY m.seq",
            queue,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )?;
        for (id, amount, status, failures, dead_status, attempts) in rows {
            let credited = credits.iter().find(|(m, _)| *m == id).map(|(_, a)| *a);
            d.messages.push(Message {
                dead: dead_status.zip(attempts),
                id,
                amount,
                status,
                failures,
                credited,
            });
        }
    }
    d.foreign_credits = credits
        .into_iter()
        .filter(|(m, _)| !d.messages.iter().any(|x| x.id == *m))
        .map(|(m, _)| m)
        .collect();
    Ok(d)
}

/// The readback of `poison-verify` on the replayed databases (engine::Lab::readback).
pub fn replayed(
    phase: &str,
    dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    if phase != <super::roles::Verify as crate::role::Role>::NAME {
        return None;
    }
    Some(
        state_of(dbs.get("queue").copied(), dbs.get("receiver").copied())
            .map(|s| serde_json::to_value(s).expect("a readback serializes"))
            .map_err(|e| format!("reading the replayed files: {e}")),
    )
}
