//! The consumer: claim deliveries, check the Inbox by message id, apply Inbox + ledger in one
//! receiver transaction, and only then ack in the queue.
//!
//! Several consumers may share one queue. A claim is a lease: `claimed_by` and
//! `lease_until_ms`, taken in one queue transaction. A consumer restarted under the same id
//! takes its own claims back at once (it knows its previous life is over); another consumer
//! waits for the lease to expire. Two consumers that apply the same message at once meet at
//! the Inbox primary key: the second insert changes nothing, that transaction rolls back, and
//! the delivery counts as a duplicate.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;

use super::consumer_queue::{ack_rows, claim_rows};
use super::consumer_receiver::{apply, decide, decide_known, decide_memory, lookup_many};
use crate::crash;
use crate::events::Event;
use crate::fail;
use crate::labs::outbox_inbox::model::{busy_wait, now_ms, Payload};
use crate::labs::outbox_inbox::points;
use crate::labs::outbox_inbox::schema::{QUEUE, RECEIVER};
use crate::labs::outbox_inbox::variant::Variant;
use crate::out;
use crate::store::{self, Access, Db};

/// Largest number of deliveries one consumer run handles.
pub const DELIVERIES_MAX: usize = 1_000_000;

pub struct Options<'a> {
    pub queue: &'a Path,
    pub receiver: &'a Path,
    pub consumer_id: &'a str,
    pub lease_ms: i64,
    pub batch: usize,
    pub variant: Variant,
    /// Delete Inbox rows older than this before consuming (None: keep them forever).
    pub inbox_retention_ms: Option<i64>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub applied: usize,
    pub duplicates: usize,
    pub rejected: usize,
}

pub(super) struct Delivery {
    pub(super) id: i64,
    pub(super) message: String,
    pub(super) payload: String,
}

/// What to do with one claimed delivery.
pub(super) enum Decision {
    Apply(Payload, String),
    Duplicate,
    Reject(String),
}

pub fn run(options: &Options<'_>) -> Result<Outcome> {
    assert!(options.batch >= 1, "batch size is at least 1");
    assert!(options.lease_ms >= 1, "a lease lasts at least 1 ms");
    let mut queue = store::open(options.queue, &QUEUE, Access::Write)?;
    let mut receiver = store::open(options.receiver, &RECEIVER, Access::WriteCreate)?;
    let queue_shown = options.queue.display().to_string();
    let receiver_shown = options.receiver.display().to_string();
    let on_queue = |e: rusqlite::Error| store::explain(e, "queue", &queue_shown);
    let on_receiver = |e: rusqlite::Error| store::explain(e, "receiver", &receiver_shown);
    queue.conn.busy_handler(Some(busy_wait)).map_err(on_queue)?;
    receiver
        .conn
        .busy_handler(Some(busy_wait))
        .map_err(on_receiver)?;

    if let Some(retention_ms) = options.inbox_retention_ms {
        expire_inbox(&receiver, retention_ms).map_err(on_receiver)?;
    }
    // memory-inbox: the only record of what was applied dies with the process.
    let mut memory_inbox: HashMap<String, String> = HashMap::new();
    let mut outcome = Outcome::default();
    let mut first_reject: Option<String> = None;
    let rounds_max = DELIVERIES_MAX.div_ceil(options.batch);
    // The deliveries claimed with the last ack (see consumer_next), if any.
    let mut next: Option<Vec<Delivery>> = None;
    for _ in 0..rounds_max {
        let claimed = match next.take() {
            Some(claimed) => claimed,
            None => claim(&queue, options).map_err(on_queue)?,
        };
        if claimed.is_empty() {
            break;
        }
        let mut decisions = Vec::with_capacity(claimed.len());
        // More than one delivery: one Inbox look-up for the batch (one statement, one
        // snapshot) instead of one per delivery. A single delivery (batch 1, the lab's
        // default) keeps its own look-up, so its trace is unchanged.
        let known = if claimed.len() > 1 && options.variant != Variant::MemoryInbox {
            Some(lookup_many(&receiver, &claimed).map_err(on_receiver)?)
        } else {
            None
        };
        for d in &claimed {
            let decision = match (options.variant, &known) {
                (Variant::MemoryInbox, _) => {
                    let decision = decide_memory(d, &memory_inbox);
                    if let Decision::Apply(payload, digest) = &decision {
                        memory_inbox.insert(payload.message.clone(), digest.clone());
                    }
                    decision
                }
                (_, Some(known)) => decide_known(d, known),
                (_, None) => decide(&receiver, d).map_err(on_receiver)?,
            };
            decisions.push(decision);
        }
        match options.variant {
            Variant::AckBeforeApply => {
                ack(&queue, &claimed, &decisions).map_err(on_queue)?;
                apply(&receiver, &claimed, &mut decisions, options.variant).map_err(on_receiver)?;
            }
            _ if super::consumer_queue::claims_with_ack(options) => {
                apply(&receiver, &claimed, &mut decisions, options.variant).map_err(on_receiver)?;
                let claimed_next =
                    super::consumer_queue::ack_and_claim(&queue, &claimed, &decisions, options)
                        .map_err(on_queue)?;
                next = Some(claimed_next);
            }
            _ => {
                apply(&receiver, &claimed, &mut decisions, options.variant).map_err(on_receiver)?;
                ack(&queue, &claimed, &decisions).map_err(on_queue)?;
            }
        }
        for (d, decision) in claimed.iter().zip(&decisions) {
            let item = d.message.to_string();
            // What the delivery came to: a line for people (none for an applied one: its
            // commit line said it), and the event the harness reads.
            let (line, event) = match decision {
                Decision::Apply(..) => {
                    outcome.applied += 1;
                    (None, Event::Applied { item })
                }
                Decision::Duplicate => {
                    outcome.duplicates += 1;
                    let why = "already in the Inbox, nothing applied".to_string();
                    (Some(("DUPLICATE", why)), Event::Duplicate { item })
                }
                Decision::Reject(reason) => {
                    outcome.rejected += 1;
                    first_reject.get_or_insert_with(|| reason.clone());
                    let event = Event::Rejected {
                        item,
                        reason: reason.to_string(),
                    };
                    (Some(("REJECTED", reason.to_string())), event)
                }
            };
            if let Some((word, why)) = line {
                out::line(&format!(
                    "{word} delivery {} message {}: {why}",
                    d.id, d.message
                ));
            }
            crate::events::emit(&event);
        }
    }
    out::line(&format!(
        "CONSUMED applied={} duplicates={} rejected={}",
        outcome.applied, outcome.duplicates, outcome.rejected
    ));
    if let Some(reason) = first_reject {
        let more = if outcome.rejected > 1 {
            format!(" ({} deliveries rejected in all)", outcome.rejected)
        } else {
            String::new()
        };
        return Err(fail::conflict(format!("{reason}{more}")));
    }
    Ok(outcome)
}

fn expire_inbox(receiver: &Db, retention_ms: i64) -> rusqlite::Result<()> {
    let cutoff = now_ms().saturating_sub(retention_ms);
    receiver.conn.execute_batch("BEGIN IMMEDIATE")?;
    let deleted = receiver
        .conn
        .prepare_cached("DELETE FROM inbox WHERE applied_ms < ?1")?
        .execute([cutoff])?;
    receiver.conn.execute_batch("COMMIT")?;
    out::committed(
        "receiver",
        &format!("inbox retention deleted {deleted} rows"),
    );
    Ok(())
}

fn claim(queue: &Db, options: &Options<'_>) -> rusqlite::Result<Vec<Delivery>> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    let claimed = claim_rows(queue, options)?;
    if claimed.is_empty() {
        queue.conn.execute_batch("ROLLBACK")?;
        return Ok(claimed);
    }
    crash::point(points::CONSUMER_BEFORE_CLAIM_COMMIT);
    queue.conn.execute_batch("COMMIT")?;
    out::committed(
        "queue",
        &format!("claim of {} by {}", describe(&claimed), options.consumer_id),
    );
    crash::point(points::CONSUMER_AFTER_CLAIM_COMMIT);
    Ok(claimed)
}

pub(super) fn describe(deliveries: &[Delivery]) -> String {
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

fn ack(queue: &Db, claimed: &[Delivery], decisions: &[Decision]) -> rusqlite::Result<()> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    ack_rows(queue, claimed, decisions)?;
    crash::point(points::CONSUMER_BEFORE_ACK);
    queue.conn.execute_batch("COMMIT")?;
    out::committed("queue", &format!("ack of {}", describe(claimed)));
    crash::point(points::CONSUMER_AFTER_ACK);
    Ok(())
}
