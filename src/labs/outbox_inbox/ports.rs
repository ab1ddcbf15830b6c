//! The ports lab 14's roles run against, whatever the stack: the business store with its
//! Outbox and the Inbox store are `Sql` stores (a SQLite file or a PostgreSQL database, the
//! same statements on both); the transport is the SQL queue (`queue.rs`) or RabbitMQ
//! (`broker.rs`). The roles' bodies (`outbox.rs`, `inbox.rs`, `publisher.rs`,
//! `consumer.rs`) are written once against these.

use anyhow::Result;

use super::model::Payload;

/// One delivery a consumer took: a claimed row of the SQL queue, or a message the broker
/// handed over (not acked yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The queue's delivery id, or the broker's delivery tag.
    pub id: i64,
    pub message: String,
    pub payload: String,
    /// The id its publish gave it (the broker's messages; empty in the SQL queue).
    pub publish_id: String,
    /// The broker's flag: it delivered this message before.
    pub redelivered: bool,
}

/// What a delivery comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// New to the Inbox: apply it (its payload and the payload's digest).
    Apply(Payload, String),
    /// In the Inbox with the same payload: nothing to apply.
    Duplicate,
    /// In the Inbox with another payload, or malformed: refused, with the reason.
    Reject(String),
}

impl Decision {
    /// Its word in a receipt.
    pub fn outcome(&self) -> &'static str {
        match self {
            Decision::Apply(..) => "applied",
            Decision::Duplicate => "duplicate",
            Decision::Reject(_) => "rejected",
        }
    }
}

/// `delivery 3 message M1`, or `2 deliveries 3..4`.
pub fn describe(deliveries: &[Delivery]) -> String {
    match deliveries {
        [one] => format!("delivery {} message {}", one.id, one.message),
        _ => format!(
            "{} deliveries {}..{}",
            deliveries.len(),
            deliveries[0].id,
            deliveries[deliveries.len() - 1].id
        ),
    }
}

/// `message M1`, or `3 messages through M3`.
pub fn describe_payloads(payloads: &[Payload]) -> String {
    match payloads {
        [one] => format!("message {}", one.message),
        _ => format!(
            "{} messages through {}",
            payloads.len(),
            payloads[payloads.len() - 1].message
        ),
    }
}

/// The transport between the Outbox and the Inbox. Each step reaches its crash points.
pub trait Transport {
    /// The publisher's: once this returns the transport holds `payloads` (the queue's commit
    /// returned; the broker confirmed each, unless the design does not wait for it).
    fn publish(&mut self, payloads: &[Payload]) -> Result<()>;
    /// The consumer's: the next deliveries it takes (none: nothing is ready for it).
    fn take(&mut self) -> Result<Vec<Delivery>>;
    /// Ack `taken` as decided (a refused payload is rejected, never retried); `None`: acked
    /// before any decision (auto-ack).
    fn ack(&mut self, taken: &[Delivery], decisions: Option<&[Decision]>) -> Result<()>;
    /// Ack `taken` and take the next deliveries; the SQL queue does both in one commit.
    fn ack_and_take(
        &mut self,
        taken: &[Delivery],
        decisions: &[Decision],
    ) -> Result<Vec<Delivery>> {
        self.ack(taken, Some(decisions))?;
        self.take()
    }
    /// A faulty upstream's raw message: what it became (`delivery 4`, `message M1 publish …`).
    fn enqueue(&mut self, payload: &Payload) -> Result<String>;
    /// Let go of the transport (the broker's acks reach it before the process ends).
    fn close(self: Box<Self>) -> Result<()>;
}
