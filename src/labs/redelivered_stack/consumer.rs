//! The consumer: take the head of the queue with manual ack, record the delivery, make the
//! side effect (an HTTP call to lab 13's receiver, outside any transaction), ack, record the
//! reply. Nothing stops a consumer whose connection the broker closed while it worked from
//! making its call: the broker has already handed the message to another consumer, and only
//! the receiver, given a key, can absorb the second call. Its ack then fails (the channel is
//! gone): `CHANNEL-LOST`, like the lease lost on SQLite.

use std::path::Path;

use anyhow::Result;

use super::commands::Variant;
use super::link::Link;
use super::points;
use super::schema::CONSUMER;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::client::{self, NoReply};
use crate::labs::http_dispatch::model::{check_key, resolve_port, shown_key};
use crate::out;
use crate::store::amqp::Got;
use crate::store::pg::{self, Pg, Session, Val};

pub struct Options<'a> {
    pub queue: &'a str,
    pub db: &'a str,
    pub port_file: &'a Path,
    pub consumer: &'a str,
    pub variant: Variant,
    pub heartbeat_s: u16,
    pub wait_ms: u64,
    pub timeout_ms: u64,
}

/// How a consumer run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    Empty,
    Acked,
    /// The call ran, the ack did not: the broker had closed the channel.
    ChannelLost,
}

pub fn run(o: &Options<'_>) -> Result<Done> {
    check_key(o.consumer)
        .map_err(|e| fail::usage(format!("--consumer is not a valid consumer name: {e}")))?;
    let mut db = pg::open(o.db, &CONSUMER, Session::Durable, true)?;
    // Before taking anything: without a receiver nothing is taken.
    let port = resolve_port(None, Some(o.port_file))?;
    let link = Link::open(o.queue, o.heartbeat_s)?;
    let Some(got) = link.get(o.wait_ms)? else {
        out::line("EMPTY nothing to consume");
        link.close()?;
        return Ok(Done::Empty);
    };
    record(
        &mut db,
        "INSERT INTO deliveries(message, consumer, tag, redelivered, taken_ms) VALUES ($1, $2, $3, $4, $5)",
        &[
            Val::Text(&got.message),
            Val::Text(o.consumer),
            Val::Int(got.tag as i64),
            Val::Int(i64::from(got.redelivered)),
            Val::Int(crate::common::now_ms()),
        ],
        &format!(
            "delivery of message {} to {}{}",
            got.message,
            o.consumer,
            if got.redelivered { " redelivered" } else { "" }
        ),
    )?;
    crash::point(points::CONSUMER_AFTER_DELIVER);
    // The side effect: one bounded call, keyed by the message id or not at all.
    let key = (o.variant == Variant::Keyed).then_some(got.message.as_str());
    let agent = client::agent(o.timeout_ms);
    let reply = match client::post(&agent, port, key, &got.payload) {
        Ok(reply) => reply,
        Err(NoReply::Connect(e)) | Err(NoReply::Lost(e)) => {
            return Err(fail::unavailable(format!(
                "receiver at 127.0.0.1:{port} gave no reply for message {}: {e}; not acked, the broker will deliver it again",
                shown_key(&got.message)
            )))
        }
    };
    out::line(&format!(
        "RESPONSE message {} tag {} status {}{}",
        shown_key(&got.message),
        got.tag,
        reply.status,
        if reply.replayed { " replayed" } else { "" }
    ));
    if reply.status != 200 {
        return Err(fail::failed(format!(
            "the receiver answered {} for message {}: not acked",
            reply.status,
            shown_key(&got.message)
        )));
    }
    crash::point(points::CONSUMER_AFTER_CALL);
    let acked = ack(&link, &got, o.consumer);
    record(
        &mut db,
        "INSERT INTO replies(message, consumer, status, replayed, acked, at_ms) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            Val::Text(&got.message),
            Val::Text(o.consumer),
            Val::Int(i64::from(reply.status)),
            Val::Int(i64::from(reply.replayed)),
            Val::Int(i64::from(acked)),
            Val::Int(crate::common::now_ms()),
        ],
        &format!(
            "reply of message {} to {} {}",
            got.message,
            o.consumer,
            if acked { "acked" } else { "ack lost" }
        ),
    )?;
    crash::point(points::CONSUMER_AFTER_ACK);
    if acked {
        link.close()?;
        Ok(Done::Acked)
    } else {
        // The broker closed the connection: nothing is left to close.
        drop(link);
        Ok(Done::ChannelLost)
    }
}

/// Ack, and say how it went: `ACKED`, or `CHANNEL-LOST` with the client's reason.
fn ack(link: &Link, got: &Got, consumer: &str) -> bool {
    match link.ack(got) {
        Ok(()) => {
            out::line(&format!(
                "ACKED message {} by {consumer}",
                shown_key(&got.message)
            ));
            true
        }
        // The client's own words vary with who saw the closed socket first (the client
        // before the ack: "invalid channel state"; the ack itself: "connection reset"); the
        // line says what both mean, so two runs print the same trace.
        Err(_) => {
            out::line(&format!(
                "CHANNEL-LOST message {} tag {}: the broker closed the channel and requeued the message, the ack did nothing; the call ran all the same",
                shown_key(&got.message),
                got.tag
            ));
            false
        }
    }
}

/// One statement in its own transaction, reported once committed.
fn record(db: &mut Pg, sql: &str, args: &[Val<'_>], what: &str) -> Result<()> {
    let done = (|| {
        db.run("BEGIN", &[])?;
        db.run(sql, args)?;
        db.run("COMMIT", &[])
    })();
    if let Err(e) = done {
        db.rollback();
        return Err(db.explain(e));
    }
    out::committed(db.db, what);
    Ok(())
}
