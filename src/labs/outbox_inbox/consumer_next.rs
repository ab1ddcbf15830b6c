//! The consumer's ack and its next claim in one queue transaction: with batches of more than
//! one delivery, the correct design acks batch k and claims batch k+1 in one commit (one
//! fsync instead of two). The order that makes the Inbox safe stays: batch k is acked only
//! after the receiver commit that applied it returned. A crash before this commit leaves
//! batch k unacked and k+1 unclaimed, exactly as a crash before the ack does; after it, batch
//! k+1 is claimed under this consumer's lease, exactly as after a claim. Batch 1, the lab's
//! own scenario and every explored case, keeps the two commits apart.

use super::consumer::{ack_rows, claim_rows, describe, Decision, Delivery, Options};
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
    crash::point("consumer.before-ack");
    if !next.is_empty() {
        crash::point("consumer.before-claim-commit");
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
    crash::point("consumer.after-ack");
    if !next.is_empty() {
        crash::point("consumer.after-claim-commit");
    }
    Ok(next)
}
