//! The consumer, written once against its port (`Transport`): take the head of the queue
//! (a lease on SQLite, a delivery with manual ack from the broker), make the side effect (an
//! HTTP call to lab 13's receiver, outside any transaction of ours), then settle: ack and
//! record the reply. Nothing stops a consumer that lost the message while it worked (its
//! lease expired under a pause, or the broker closed its silent connection) from making its
//! call after another consumer took the message over: only the receiver, given a key, can
//! absorb it. Its ack then does nothing: `LEASE-LOST` on SQLite, `CHANNEL-LOST` on the broker.

use std::path::Path;

use anyhow::Result;

use super::points;
use super::stack::Stack;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::client::{self, NoReply};
use crate::labs::http_dispatch::model::{resolve_port, shown_key};
use crate::out;

pub struct Options<'a> {
    pub port_file: &'a Path,
    pub consumer: &'a str,
    /// The call carries the message id as its Idempotency-Key.
    pub keyed: bool,
    pub timeout_ms: u64,
}

/// A message in the consumer's hands.
#[derive(Debug, Clone)]
pub struct Taken {
    pub id: String,
    pub body: String,
    /// How the transport counts it, as the RESPONSE line says it: `delivery 2` (the lease
    /// queue's deliveries of the message), `tag 1` (the broker's delivery tag).
    pub count: (&'static str, i64),
}

/// The reply the consumer got, to record with its ack.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub status: u16,
    pub replayed: bool,
}

/// What the consumer needs of its queue.
pub trait Transport {
    /// Take the next message (bounded waits); None: nothing to consume.
    fn take(&mut self) -> Result<Option<Taken>>;
    /// Ack `taken` and record `reply`, and say so (`ACKED`, or why the ack did nothing):
    /// true when the ack held.
    fn settle(&mut self, taken: &Taken, reply: Reply) -> Result<bool>;
    /// What happens to a message whose call got no reply, for the error line.
    fn unreplied(&self) -> &'static str;
    /// Done: close what is still open (`acked` false: the broker may have closed it).
    fn close(self: Box<Self>, acked: bool) -> Result<()>;
}

/// The line of an ack that held.
pub fn acked_line(id: &str, consumer: &str) -> String {
    format!("ACKED message {} by {consumer}", shown_key(id))
}

pub fn run(stack: Stack, mut transport: Box<dyn Transport>, o: &Options<'_>) -> Result<()> {
    // Before taking anything: without a receiver, nothing is taken.
    let port = resolve_port(None, Some(o.port_file))?;
    let Some(taken) = transport.take()? else {
        out::line("EMPTY nothing to consume");
        return transport.close(true);
    };
    crash::point(points::taken(stack));
    // The side effect: one bounded call, keyed by the message id or not at all.
    let key = o.keyed.then_some(taken.id.as_str());
    let agent = client::agent(o.timeout_ms);
    let reply = match client::post(&agent, port, key, &taken.body) {
        Ok(reply) => reply,
        Err(NoReply::Connect(e)) | Err(NoReply::Lost(e)) => {
            return Err(fail::unavailable(format!(
                "receiver at 127.0.0.1:{port} gave no reply for message {}: {e}; {}",
                shown_key(&taken.id),
                transport.unreplied()
            )))
        }
    };
    let (word, n) = taken.count;
    out::line(&format!(
        "RESPONSE message {} {word} {n} status {}{}",
        shown_key(&taken.id),
        reply.status,
        if reply.replayed { " replayed" } else { "" }
    ));
    if reply.status != 200 {
        return Err(fail::failed(format!(
            "the receiver answered {} for message {}: not acked",
            reply.status,
            shown_key(&taken.id)
        )));
    }
    crash::point(points::CONSUMER_AFTER_CALL);
    let reply = Reply {
        status: reply.status,
        replayed: reply.replayed,
    };
    let acked = transport.settle(&taken, reply)?;
    crash::point(points::CONSUMER_AFTER_ACK);
    transport.close(acked)
}
