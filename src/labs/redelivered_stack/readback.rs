//! The readback of lab f3 on the stack: the consumers' rows in PostgreSQL (a read-only
//! session, every statement traced), the queue's ready messages (a passive declare, which
//! changes nothing) and lab 13's receiver file (SQLite, read-only). A store with nothing in
//! it yet reads as empty and is named in `absent`; nothing is created.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::schema::CONSUMER;
use crate::labs::http_dispatch::readback::{receiver_state, ReceiverState};
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::store;
use crate::store::amqp::Broker;
use crate::store::pg::{self, Pg, Session};

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
pub struct QueueState {
    /// Messages ready in the queue.
    pub messages: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub consumer: ConsumerState,
    pub queue: QueueState,
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

/// Read the stores of the current directory's `stack.json` and the receiver's file.
pub fn read(db: &str, queue: &str, receiver: &Path) -> Result<State> {
    read_in(Path::new("."), db, queue, receiver)
}

/// As `read`, with `stack.json` in `dir` (explore's judge reads a case from the engine's
/// process, untraced).
pub fn read_in(dir: &Path, db: &str, queue: &str, receiver: &Path) -> Result<State> {
    let mut state = State::default();
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

/// The one human line of a readback.
pub fn line(s: &State) -> String {
    let c = &s.consumer;
    format!(
        "consumer: deliveries {} redelivered {} replies {} replayed {} acked {} lost {} | queue: messages {} | receiver: effects {} ledger {}",
        c.deliveries, c.redelivered, c.replies, c.replayed, c.acked, c.lost, s.queue.messages,
        s.receiver.effects, s.receiver.ledger
    )
}
