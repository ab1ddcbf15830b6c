//! The consumer's side in the receiver: parse a delivery, look its message up in the Inbox,
//! decide (apply, duplicate, reject), and apply Inbox row and ledger credit in one
//! transaction.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use super::consumer::{describe, Decision, Delivery};
use super::points;
use crate::crash;
use crate::labs::outbox_inbox::model::{now_ms, Payload};
use crate::labs::outbox_inbox::variant::Variant;
use crate::out;
use crate::store::Db;

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

pub(super) fn decide(receiver: &Db, d: &Delivery) -> rusqlite::Result<Decision> {
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
pub(super) fn lookup_many(
    receiver: &Db,
    claimed: &[Delivery],
) -> rusqlite::Result<HashMap<String, Applied>> {
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

pub(super) fn decide_known(d: &Delivery, known: &HashMap<String, Applied>) -> Decision {
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

pub(super) fn decide_memory(d: &Delivery, memory_inbox: &HashMap<String, String>) -> Decision {
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
pub(super) fn apply(
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
