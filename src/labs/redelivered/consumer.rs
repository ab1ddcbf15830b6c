//! The consumer: claim the head of the queue with a lease, make the side effect (an HTTP
//! call to lab 13's receiver, outside any transaction of ours), then record the reply and
//! ack. Nothing stops a consumer that was paused past its lease from making its call after
//! another consumer took the message over: only the receiver, given a key, can absorb it.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::commands::Variant;
use super::points;
use super::queue::{self, Claim, Reply};
use super::schema::QUEUE;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::client::{self, NoReply};
use crate::labs::http_dispatch::model::{check_key, resolve_port, shown_key};
use crate::out;
use crate::store::{self, Access};

pub struct Options<'a> {
    pub queue: &'a Path,
    pub port_file: &'a Path,
    pub consumer: &'a str,
    pub variant: Variant,
    pub lease_ms: u64,
    pub wait_ms: u64,
    pub timeout_ms: u64,
}

/// How a consumer run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    Empty,
    Acked,
    /// The call ran, the ack was refused: the lease had passed to another consumer.
    LeaseLost,
}

/// The most claim attempts one run makes (each waits for a lease to end, within --wait-ms).
const CLAIM_ROUNDS_MAX: u32 = 64;

pub fn run(o: &Options<'_>) -> Result<Done> {
    check_key(o.consumer)
        .map_err(|e| fail::usage(format!("--consumer is not a valid consumer name: {e}")))?;
    let db = store::open(o.queue, &QUEUE, Access::Write)?;
    // Before the claim: without a receiver, nothing is claimed and no lease is left behind.
    let port = resolve_port(None, Some(o.port_file))?;
    let waited_since = std::time::Instant::now();
    let mut claimed = None;
    for _ in 0..CLAIM_ROUNDS_MAX {
        match queue::claim(&db, o.queue, o.consumer, o.lease_ms)? {
            Claim::Empty => {
                out::line("EMPTY nothing to consume");
                return Ok(Done::Empty);
            }
            Claim::Claimed { head, delivery } => {
                claimed = Some((head, delivery));
                break;
            }
            Claim::Leased { head, for_ms } => {
                let left_ms = o.wait_ms as i64 - waited_since.elapsed().as_millis() as i64;
                let owner = head.owner.as_deref().unwrap_or("-");
                if for_ms > left_ms {
                    return Err(fail::locked(format!(
                        "message {} is leased by {owner} for {for_ms} ms more, past --wait-ms {}",
                        shown_key(&head.id),
                        o.wait_ms
                    )));
                }
                out::line(&format!(
                    "WAITING message {} leased by {owner}",
                    shown_key(&head.id)
                ));
                // One ms past the lease's end, so the next look finds it expired.
                std::thread::sleep(Duration::from_millis(for_ms as u64 + 1));
            }
        }
    }
    let Some((head, delivery)) = claimed else {
        return Err(fail::locked(format!(
            "no claim after {CLAIM_ROUNDS_MAX} attempts: the head kept being leased again"
        )));
    };
    crash::point(points::CONSUMER_AFTER_CLAIM);
    // The side effect: one bounded call, keyed by the message id or not at all.
    let key = (o.variant == Variant::Keyed).then_some(head.id.as_str());
    let agent = client::agent(o.timeout_ms);
    let reply = match client::post(&agent, port, key, &head.body) {
        Ok(reply) => reply,
        Err(NoReply::Connect(e)) | Err(NoReply::Lost(e)) => {
            return Err(fail::unavailable(format!(
                "receiver at 127.0.0.1:{port} gave no reply for message {}: {e}; the lease will expire and the message be delivered again",
                shown_key(&head.id)
            )))
        }
    };
    out::line(&format!(
        "RESPONSE message {} delivery {delivery} status {}{}",
        shown_key(&head.id),
        reply.status,
        if reply.replayed { " replayed" } else { "" }
    ));
    if reply.status != 200 {
        return Err(fail::failed(format!(
            "the receiver answered {} for message {}: not acked",
            reply.status,
            shown_key(&head.id)
        )));
    }
    crash::point(points::CONSUMER_AFTER_CALL);
    let acked = queue::ack(
        &db,
        o.queue,
        &head.id,
        o.consumer,
        Reply {
            delivery,
            status: reply.status,
            replayed: reply.replayed,
        },
    )?;
    let done = if acked {
        out::line(&format!(
            "ACKED message {} by {}",
            shown_key(&head.id),
            o.consumer
        ));
        Done::Acked
    } else {
        out::line(&format!(
            "LEASE-LOST message {}: the lease passed to another consumer, ack refused; the call ran all the same",
            shown_key(&head.id)
        ));
        Done::LeaseLost
    };
    crash::point(points::CONSUMER_AFTER_ACK);
    Ok(done)
}
