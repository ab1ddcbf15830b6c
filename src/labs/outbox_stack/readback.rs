//! The readback of lab 14 on the stack: the sender's and receiver's rows in PostgreSQL (read
//! in read-only sessions, every statement traced) and the queue's ready messages (a passive
//! declare, which changes nothing).

use anyhow::Result;
use serde::Serialize;

use super::amqp::Broker;
use super::pg::{self, Pg, Session};
use super::schema::{RECEIVER, SENDER};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SenderState {
    pub contracts: i64,
    pub outbox_pending: i64,
    pub outbox_sent: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    /// Messages ready in the queue.
    pub messages: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverState {
    /// Physical messages the consumer handled (one receipt each, by publish id).
    pub deliveries: i64,
    /// Deliveries handled in all, redeliveries of the same message included.
    pub handled: i64,
    /// Messages whose last delivery came with the broker's `redelivered` flag.
    pub redelivered: i64,
    /// Messages rejected (a conflicting or malformed payload).
    pub rejected: i64,
    pub inbox: i64,
    pub ledger: i64,
}

/// The readback JSON. A database with no table yet reads as empty and is named in `absent`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub sender: SenderState,
    pub queue: QueueState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

/// The readback's statements, by field: every one is valid SQLite as well.
pub const SENDER_COUNTS: &[(&str, &str)] = &[
    ("contracts", "SELECT count(*) FROM contracts"),
    (
        "outbox_pending",
        "SELECT count(*) FROM outbox WHERE status = 'pending'",
    ),
    (
        "outbox_sent",
        "SELECT count(*) FROM outbox WHERE status = 'sent'",
    ),
];
pub const RECEIVER_COUNTS: &[(&str, &str)] = &[
    ("deliveries", "SELECT count(*) FROM receipts"),
    ("handled", "SELECT coalesce(sum(handled), 0) FROM receipts"),
    (
        "redelivered",
        "SELECT count(*) FROM receipts WHERE redelivered = 1",
    ),
    (
        "rejected",
        "SELECT count(*) FROM receipts WHERE outcome = 'rejected'",
    ),
    ("inbox", "SELECT count(*) FROM inbox"),
    ("ledger", "SELECT coalesce(sum(balance), 0) FROM ledger"),
];

fn counts(pg: &mut Pg, queries: &[(&str, &str)]) -> Result<Vec<i64>> {
    let mut values = Vec::with_capacity(queries.len());
    for (_, sql) in queries {
        let n = pg.run(sql, &[]).map_err(|e| pg.explain(e))?.int();
        values.push(n);
    }
    Ok(values)
}

/// Read the stores named by logical name.
pub fn read(sender: &str, queue: &str, receiver: &str) -> Result<State> {
    let mut state = State::default();
    let mut s = pg::open(sender, &SENDER, Session::ReadOnly, false)?;
    if s.empty {
        state.absent.push("sender");
    } else if let [contracts, outbox_pending, outbox_sent] = counts(&mut s, SENDER_COUNTS)?[..] {
        state.sender = SenderState {
            contracts,
            outbox_pending,
            outbox_sent,
        };
    }
    let mut r = pg::open(receiver, &RECEIVER, Session::ReadOnly, false)?;
    if r.empty {
        state.absent.push("receiver");
    } else if let [deliveries, handled, redelivered, rejected, inbox, ledger] =
        counts(&mut r, RECEIVER_COUNTS)?[..]
    {
        state.receiver = ReceiverState {
            deliveries,
            handled,
            redelivered,
            rejected,
            inbox,
            ledger,
        };
    }
    let mut broker = Broker::open(queue, false, false)?;
    match broker.ready()? {
        Some(n) => state.queue.messages = i64::from(n),
        None => state.absent.push("queue"),
    }
    broker.close()?;
    Ok(state)
}

/// The one human line of a readback.
pub fn line(state: &State) -> String {
    let (s, q, r) = (&state.sender, &state.queue, &state.receiver);
    format!(
        "sender: contracts {} outbox_pending {} outbox_sent {} | queue: messages {} | receiver: deliveries {} handled {} redelivered {} rejected {} inbox {} ledger {}",
        s.contracts, s.outbox_pending, s.outbox_sent, q.messages, r.deliveries, r.handled,
        r.redelivered, r.rejected, r.inbox, r.ledger
    )
}
