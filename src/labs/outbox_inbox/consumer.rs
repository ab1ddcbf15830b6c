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
use rusqlite::{params, OptionalExtension};

use super::consumer_queue::{ack_rows, claim_rows};
use crate::crash;
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
            match decision {
                Decision::Apply(..) => {
                    outcome.applied += 1;
                    crate::events::emit(&crate::events::Event::Applied {
                        item: d.message.to_string(),
                    });
                }
                Decision::Duplicate => {
                    outcome.duplicates += 1;
                    out::line(&format!(
                        "DUPLICATE delivery {} message {}: already in the Inbox, nothing applied",
                        d.id, d.message
                    ));
                    crate::events::emit(&crate::events::Event::Duplicate {
                        item: d.message.to_string(),
                    });
                }
                Decision::Reject(reason) => {
                    outcome.rejected += 1;
                    out::line(&format!(
                        "REJECTED delivery {} message {}: {reason}",
                        d.id, d.message
                    ));
                    crate::events::emit(&crate::events::Event::Rejected {
                        item: d.message.to_string(),
                        reason: reason.to_string(),
                    });
                    first_reject.get_or_insert_with(|| reason.clone());
                }
            }
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

fn parse(d: &Delivery) -> Result<Payload, String> {
    let payload = Payload::parse(&d.payload)?;
    if payload.message != d.message {
        return Err(format!(
            "malformed payload: delivery names message {} but its payload names {}",
            d.message, payload.message
        ));
    }
    Ok(payload)
}

type Applied = (String, String, i64);

fn lookup(receiver: &Db, message: &str) -> rusqlite::Result<Option<Applied>> {
    receiver
        .conn
        .prepare_cached("SELECT digest, contract_id, amount FROM inbox WHERE message_id = ?1")?
        .query_row([message], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()
}

fn compare(payload: &Payload, digest: &str, applied: &Applied) -> Decision {
    let (applied_digest, applied_contract, applied_amount) = applied;
    if applied_digest == digest {
        return Decision::Duplicate;
    }
    let reason = if applied_amount != &payload.amount {
        format!(
            "payload conflict: message {} was applied with amount {applied_amount}, this delivery has {}",
            payload.message, payload.amount
        )
    } else {
        format!(
            "payload conflict: message {} was applied to contract {applied_contract}, this delivery names {}",
            payload.message, payload.contract
        )
    };
    Decision::Reject(reason)
}

fn decide(receiver: &Db, d: &Delivery) -> rusqlite::Result<Decision> {
    let payload = match parse(d) {
        Ok(p) => p,
        Err(reason) => return Ok(Decision::Reject(reason)),
    };
    let digest = payload.digest();
    Ok(match lookup(receiver, &payload.message)? {
        None => Decision::Apply(payload, digest),
        Some(applied) => compare(&payload, &digest, &applied),
    })
}

/// The Inbox rows of every message in `claimed`, in one statement.
fn lookup_many(receiver: &Db, claimed: &[Delivery]) -> rusqlite::Result<HashMap<String, Applied>> {
    let ids: Vec<&str> = claimed.iter().map(|d| d.message.as_str()).collect();
    let list = serde_json::to_string(&ids).expect("a list of strings serializes");
    let mut stmt = receiver.conn.prepare_cached(
        "SELECT message_id, digest, contract_id, amount FROM inbox
         WHERE message_id IN (SELECT value FROM json_each(?1))",
    )?;
    let rows = stmt.query_map([list], |r| {
        Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))
    })?;
    rows.collect()
}

fn decide_known(d: &Delivery, known: &HashMap<String, Applied>) -> Decision {
    let payload = match parse(d) {
        Ok(p) => p,
        Err(reason) => return Decision::Reject(reason),
    };
    let digest = payload.digest();
    match known.get(&payload.message) {
        None => Decision::Apply(payload, digest),
        Some(applied) => compare(&payload, &digest, applied),
    }
}

fn decide_memory(d: &Delivery, memory_inbox: &HashMap<String, String>) -> Decision {
    let payload = match parse(d) {
        Ok(p) => p,
        Err(reason) => return Decision::Reject(reason),
    };
    let digest = payload.digest();
    match memory_inbox.get(&payload.message) {
        None => Decision::Apply(payload, digest),
        Some(known) if *known == digest => Decision::Duplicate,
        Some(_) => Decision::Reject(format!(
            "payload conflict: message {} seen with another payload",
            payload.message
        )),
    }
}

fn insert_inbox(
    receiver: &Db,
    d: &Delivery,
    payload: &Payload,
    digest: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let changed = receiver
        .conn
        .prepare_cached(
            "INSERT INTO inbox(message_id, digest, contract_id, amount, delivery_id, applied_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(message_id) DO NOTHING",
        )?
        .execute(params![
            payload.message,
            digest,
            payload.contract,
            payload.amount,
            d.id,
            now
        ])?;
    Ok(changed == 1)
}

fn credit(receiver: &Db, payload: &Payload) -> rusqlite::Result<()> {
    receiver
        .conn
        .prepare_cached(
            "INSERT INTO ledger(contract_id, balance, credits) VALUES (?1, ?2, 1)
             ON CONFLICT(contract_id) DO UPDATE SET balance = balance + excluded.balance, credits = credits + 1",
        )?
        .execute(params![payload.contract, payload.amount])?;
    Ok(())
}

/// Apply every `Apply` decision. An Inbox insert that finds the row already there (another
/// consumer won the race since the look-up) turns its decision into a duplicate or conflict.
fn apply(
    receiver: &Db,
    claimed: &[Delivery],
    decisions: &mut [Decision],
    variant: Variant,
) -> rusqlite::Result<()> {
    if !decisions.iter().any(|d| matches!(d, Decision::Apply(..))) {
        return Ok(());
    }
    let now = now_ms();
    if variant == Variant::SplitInboxTx {
        // Broken on purpose: the Inbox row commits alone, the credit follows in a second tx.
        receiver.conn.execute_batch("BEGIN IMMEDIATE")?;
        for (d, decision) in claimed.iter().zip(decisions.iter_mut()) {
            if let Decision::Apply(payload, digest) = decision {
                if !insert_inbox(receiver, d, payload, digest, now)? {
                    let applied = lookup(receiver, &payload.message)?
                        .expect("the row that blocked the insert");
                    *decision = compare(payload, digest, &applied);
                }
            }
        }
        crash::point(points::CONSUMER_BEFORE_INBOX_COMMIT);
        receiver.conn.execute_batch("COMMIT")?;
        out::committed("receiver", &format!("inbox of {}", describe(claimed)));
        crash::point(points::CONSUMER_AFTER_INBOX_COMMIT);
    }
    receiver.conn.execute_batch("BEGIN IMMEDIATE")?;
    let mut credited = 0;
    for (d, decision) in claimed.iter().zip(decisions.iter_mut()) {
        let Decision::Apply(payload, digest) = decision else {
            continue;
        };
        match variant {
            Variant::MemoryInbox | Variant::SplitInboxTx => {}
            _ => {
                if !insert_inbox(receiver, d, payload, digest, now)? {
                    let applied = lookup(receiver, &payload.message)?
                        .expect("the row that blocked the insert");
                    out::line(&format!(
                        "RACE delivery {} message {}: another consumer committed its Inbox row first",
                        d.id, payload.message
                    ));
                    *decision = compare(payload, digest, &applied);
                    continue;
                }
            }
        }
        credit(receiver, payload)?;
        credited += 1;
    }
    if credited == 0 {
        receiver.conn.execute_batch("ROLLBACK")?;
        return Ok(());
    }
    crash::point(points::CONSUMER_BEFORE_RECEIVER_COMMIT);
    receiver.conn.execute_batch("COMMIT")?;
    // Report what this transaction holds: the broken variants commit the credit alone.
    let holds = match variant {
        Variant::MemoryInbox | Variant::SplitInboxTx => "ledger",
        _ => "inbox and ledger",
    };
    out::committed(
        "receiver",
        &format!("{holds} for {}", describe_applied(claimed, decisions)),
    );
    crash::point(points::CONSUMER_AFTER_RECEIVER_COMMIT);
    Ok(())
}

fn describe_applied(claimed: &[Delivery], decisions: &[Decision]) -> String {
    let applied: Vec<String> = claimed
        .iter()
        .zip(decisions)
        .filter_map(|(d, decision)| match decision {
            Decision::Apply(p, _) => {
                Some(format!("{} (+{} to {})", d.message, p.amount, p.contract))
            }
            _ => None,
        })
        .collect();
    if applied.len() <= 3 {
        format!("message {}", applied.join(", "))
    } else {
        format!("{} messages", applied.len())
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
