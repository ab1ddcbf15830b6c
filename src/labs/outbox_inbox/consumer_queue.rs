//! The consumer's statements on the queue: its claim, its ack, and both in one transaction.
//! With batches of more than one delivery, the correct design acks batch k and claims batch
//! k+1 in one commit (one fsync instead of two). The order that makes the Inbox safe stays: batch k is acked only
//! after the receiver commit that applied it returned. A crash before this commit leaves
//! batch k unacked and k+1 unclaimed, exactly as a crash before the ack does; after it, batch
//! k+1 is claimed under this consumer's lease, exactly as after a claim. Batch 1, the lab's
//! own scenario and every explored case, keeps the two commits apart.

use rusqlite::params;

use super::consumer::{describe, Decision, Delivery, Options};
use super::model::now_ms;
use super::points;
use super::variant::Variant;
use crate::crash;
use crate::out;
use crate::store::Db;

/// Whether this run claims with its acks: the correct design with batches of more than one.
pub fn claims_with_ack(options: &Options<'_>) -> bool {
    options.variant == Variant::Correct && options.batch > 1
}

/// Ack `claimed` as `decisions` say and claim the next deliveries, in one queue commit; the
/// crash points of both commits are reached, the ack's first.
pub(super) fn ack_and_claim(
    queue: &Db,
    claimed: &[Delivery],
    decisions: &[Decision],
    options: &Options<'_>,
) -> rusqlite::Result<Vec<Delivery>> {
    debug_assert!(claims_with_ack(options));
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    ack_rows(queue, claimed, decisions)?;
    let next = claim_rows(queue, options)?;
    crash::point(points::CONSUMER_BEFORE_ACK);
    if !next.is_empty() {
        crash::point(points::CONSUMER_BEFORE_CLAIM_COMMIT);
    }
    queue.conn.execute_batch("COMMIT")?;
    let what = match next.is_empty() {
        true => format!("ack of {}", describe(claimed)),
        false => format!(
            "ack of {} and claim of {} by {}",
            describe(claimed),
            describe(&next),
            options.consumer_id
        ),
    };
    out::committed("queue", &what);
    crash::point(points::CONSUMER_AFTER_ACK);
    if !next.is_empty() {
        crash::point(points::CONSUMER_AFTER_CLAIM_COMMIT);
    }
    Ok(next)
}

/// The claim's statement, inside the caller's queue transaction: the next deliveries this
/// consumer may take, in delivery order.
pub(super) fn claim_rows(queue: &Db, options: &Options<'_>) -> rusqlite::Result<Vec<Delivery>> {
    let now = now_ms();
    let mut claimed = {
        let mut stmt = queue.conn.prepare_cached(
            "UPDATE deliveries SET claimed_by = ?1, lease_until_ms = ?2
             WHERE delivery_id IN (
               SELECT delivery_id FROM deliveries
               WHERE status = 'pending'
                 AND (claimed_by IS NULL OR claimed_by = ?1 OR lease_until_ms < ?3)
               ORDER BY delivery_id LIMIT ?4)
             RETURNING delivery_id, message_id, payload",
        )?;
        let rows = stmt
            .query_map(
                params![
                    options.consumer_id,
                    now.saturating_add(options.lease_ms),
                    now,
                    options.batch as i64
                ],
                |r| {
                    Ok(Delivery {
                        id: r.get(0)?,
                        message: r.get(1)?,
                        payload: r.get(2)?,
                    })
                },
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows
    };
    // RETURNING gives no order; the lab promises delivery order.
    claimed.sort_by_key(|d| d.id);
    Ok(claimed)
}

/// The ack's statements, inside the caller's queue transaction.
pub(super) fn ack_rows(
    queue: &Db,
    claimed: &[Delivery],
    decisions: &[Decision],
) -> rusqlite::Result<()> {
    let now = now_ms();
    // More than one delivery: the acks in one statement; a single delivery (batch 1) and
    // every rejection keep their own statement.
    let batched = claimed.len() > 1;
    if batched {
        let acked: Vec<i64> = claimed
            .iter()
            .zip(decisions)
            .filter(|(_, decision)| !matches!(decision, Decision::Reject(_)))
            .map(|(d, _)| d.id)
            .collect();
        let list = serde_json::to_string(&acked).expect("a list of integers serializes");
        queue
            .conn
            .prepare_cached(
                "UPDATE deliveries SET status = 'acked', reason = NULL, done_ms = ?1
                 WHERE delivery_id IN (SELECT value FROM json_each(?2)) AND status = 'pending'",
            )?
            .execute(params![now, list])?;
    }
    for (d, decision) in claimed.iter().zip(decisions) {
        let (status, reason) = match decision {
            Decision::Reject(reason) => ("rejected", Some(reason.as_str())),
            _ if batched => continue,
            _ => ("acked", None),
        };
        // `AND status = 'pending'`: a consumer that took over an expired lease may be first.
        queue
            .conn
            .prepare_cached(
                "UPDATE deliveries SET status = ?1, reason = ?2, done_ms = ?3 WHERE delivery_id = ?4 AND status = 'pending'",
            )?
            .execute(params![status, reason, now, d.id])?;
    }
    Ok(())
}
