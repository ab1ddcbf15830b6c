//! The read-only view of lab f3's stores, for the readback role, explore and the audit's
//! replay. On SQLite: the queue file (messages, leases handed out, replies and acks). On the
//! servers: the consumers' rows in PostgreSQL (a read-only session, every statement traced)
//! and the queue's ready messages (a passive declare, which changes nothing). On both, lab
//! 13's receiver file (effects, idempotency ledger). A store with nothing in it yet reads as
//! empty and is named in `absent`; nothing is created.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use super::schema::{CONSUMER, QUEUE};
use crate::labs::http_dispatch::readback::{receiver_state, ReceiverState};
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::store;
use crate::store::amqp::Broker;
use crate::store::pg::{self, Pg, Session};

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

/// The state on SQLite.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub queue: QueueState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

impl State {
    /// The one human line of a readback.
    pub fn line(&self) -> String {
        let q = &self.queue;
        format!(
            "messages {} acked {} deliveries {} | replies {} replayed {} refused {} | effects {}",
            q.messages,
            q.acked,
            q.deliveries,
            q.replies,
            q.replayed,
            q.refused,
            self.receiver.effects
        )
    }
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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConsumerState {
    /// Deliveries the consumers took: 2 when the broker redelivered the message once.
    pub deliveries: i64,
    /// Of those, the ones the broker flagged `redelivered`.
    pub redelivered: i64,
    /// Replies the consumers recorded (one per call that came back).
    pub replies: i64,
    /// Replies the receiver marked replayed (its key absorbed the call).
    pub replayed: i64,
    /// Replies whose ack reached the broker.
    pub acked: i64,
    /// Replies whose ack did nothing: the broker had closed the channel.
    pub lost: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadyState {
    /// Messages ready in the queue.
    pub messages: i64,
}

/// The state on the servers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServersState {
    pub consumer: ConsumerState,
    pub queue: ReadyState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

/// The readback's statements, by field: every one is valid SQLite as well.
pub const COUNTS: &[(&str, &str)] = &[
    ("deliveries", "SELECT count(*) FROM deliveries"),
    (
        "redelivered",
        "SELECT count(*) FROM deliveries WHERE redelivered = 1",
    ),
    ("replies", "SELECT count(*) FROM replies"),
    (
        "replayed",
        "SELECT count(*) FROM replies WHERE replayed = 1",
    ),
    ("acked", "SELECT count(*) FROM replies WHERE acked = 1"),
    ("lost", "SELECT count(*) FROM replies WHERE acked = 0"),
];

fn counts(pg: &mut Pg) -> Result<ConsumerState> {
    let mut v = [0i64; 6];
    for (slot, (_, sql)) in v.iter_mut().zip(COUNTS) {
        *slot = pg.run(sql, &[]).map_err(|e| pg.explain(e))?.int();
    }
    let [deliveries, redelivered, replies, replayed, acked, lost] = v;
    Ok(ConsumerState {
        deliveries,
        redelivered,
        replies,
        replayed,
        acked,
        lost,
    })
}

/// Read the stores of `stack.json` in `dir` and the receiver's file: traced in the current
/// directory (the role), untraced elsewhere (explore's judge, in the engine's process).
pub fn read_servers(dir: &Path, db: &str, queue: &str, receiver: &Path) -> Result<ServersState> {
    let mut state = ServersState::default();
    let mut c = pg::open_in(dir, db, &CONSUMER, Session::ReadOnly, false)?;
    if c.empty {
        state.absent.push("consumer");
    } else {
        state.consumer = counts(&mut c)?;
    }
    let mut broker = Broker::open_in(dir, queue, false, false)?;
    match broker.ready()? {
        Some(n) => state.queue.messages = i64::from(n),
        None => state.absent.push("queue"),
    }
    broker.close()?;
    let trace = store::trace_on() && dir == Path::new(".");
    match store::open_existing(receiver, &RECEIVER, trace)? {
        Some(db) => state.receiver = receiver_state(&db.conn, &receiver.display().to_string())?,
        None => state.absent.push("receiver"),
    }
    // Postconditions: every reply and every redelivery is of a delivery taken.
    assert!(state.consumer.replies <= state.consumer.deliveries);
    assert!(state.consumer.redelivered <= state.consumer.deliveries);
    Ok(state)
}

impl ServersState {
    /// The one human line of a readback.
    pub fn line(&self) -> String {
        let c = &self.consumer;
        format!(
            "consumer: deliveries {} redelivered {} replies {} replayed {} acked {} lost {} | queue: messages {} | receiver: effects {} ledger {}",
            c.deliveries, c.redelivered, c.replies, c.replayed, c.acked, c.lost,
            self.queue.messages, self.receiver.effects, self.receiver.ledger
        )
    }
}
