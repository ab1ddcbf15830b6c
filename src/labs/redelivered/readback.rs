//! The read-only view of lab f3's two files: the queue (messages, leases handed out, replies
//! and acks) and lab 13's receiver file (effects, idempotency ledger). A file that does not
//! exist yet reads as empty and is named in `absent`; it is never created.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use super::schema::QUEUE;
use crate::labs::http_dispatch::readback::{receiver_state, ReceiverState};
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::store;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    pub messages: i64,
    pub acked: i64,
    /// Leases handed out, over all messages: 2 when a message was redelivered once.
    pub deliveries: i64,
    /// Replies the consumers recorded (one per call that came back).
    pub replies: i64,
    /// Replies the receiver marked replayed (its key absorbed the call).
    pub replayed: i64,
    /// Replies whose ack was refused: the lease had passed to another consumer.
    pub refused: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub queue: QueueState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

fn n(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

pub fn queue_state(conn: &Connection) -> rusqlite::Result<QueueState> {
    Ok(QueueState {
        messages: n(conn, "SELECT count(*) FROM messages")?,
        acked: n(
            conn,
            "SELECT count(*) FROM messages WHERE acked_by IS NOT NULL",
        )?,
        deliveries: n(conn, "SELECT coalesce(sum(deliveries), 0) FROM messages")?,
        replies: n(conn, "SELECT count(*) FROM replies")?,
        replayed: n(conn, "SELECT count(*) FROM replies WHERE replayed = 1")?,
        refused: n(conn, "SELECT count(*) FROM replies WHERE acked = 0")?,
    })
}

/// The readback of open connections (files, or the audit's replay); None: absent.
pub fn state_of(queue: Option<&Connection>, receiver: Option<&Connection>) -> Result<State> {
    let mut state = State::default();
    match queue {
        Some(c) => state.queue = queue_state(c)?,
        None => state.absent.push("queue"),
    }
    match receiver {
        Some(c) => state.receiver = receiver_state(c, "(replayed)")?,
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// The role's readback, traced unless `--no-trace`.
pub fn read(queue: &Path, receiver: &Path) -> Result<State> {
    read_traced(queue, receiver, store::trace_on())
}

pub fn read_traced(queue: &Path, receiver: &Path, trace: bool) -> Result<State> {
    let mut state = State::default();
    match store::open_existing(queue, &QUEUE, trace)? {
        Some(db) => {
            state.queue = queue_state(&db.conn)
                .map_err(|e| store::explain(e, "queue", &queue.display().to_string()))?
        }
        None => state.absent.push("queue"),
    }
    match store::open_existing(receiver, &RECEIVER, trace)? {
        Some(db) => state.receiver = receiver_state(&db.conn, &receiver.display().to_string())?,
        None => state.absent.push("receiver"),
    }
    // Postconditions: an acked message was delivered; a refused ack is a reply.
    assert!(state.queue.acked <= state.queue.messages);
    assert!(state.queue.refused <= state.queue.replies);
    Ok(state)
}

/// The readback of `redeliver-verify` on the replayed databases (engine::Lab::readback).
pub fn replayed(
    phase: &str,
    dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    if phase != super::roles::VERIFY {
        return None;
    }
    Some(
        state_of(dbs.get("queue").copied(), dbs.get("receiver").copied())
            .map(|s| serde_json::to_value(s).expect("a readback serializes"))
            .map_err(|e| format!("reading the replayed files: {e:#}")),
    )
}
