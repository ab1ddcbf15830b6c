//! The publisher: copy pending Outbox rows into the queue, commit the queue, only then mark
//! them sent. Two databases, no shared transaction: the window between the commits is the
//! lab's first duplicate.

use std::path::Path;

use anyhow::Result;
use rusqlite::params;

use crate::crash;
use crate::labs::outbox_inbox::model::{busy_wait, now_ms, Payload};
use crate::labs::outbox_inbox::points;
use crate::labs::outbox_inbox::schema::{QUEUE, SENDER};
use crate::labs::outbox_inbox::variant::Variant;
use crate::out;
use crate::store::{self, Access, Db};

/// Largest number of Outbox rows one publisher run sends.
pub const ROWS_MAX: usize = 1_000_000;

pub struct Options<'a> {
    pub sender: &'a Path,
    pub queue: &'a Path,
    /// Outbox rows per queue transaction (and per mark transaction).
    pub batch: usize,
    pub variant: Variant,
}

struct Row {
    seq: i64,
    payload: Payload,
}

/// Publish until no pending row is left (or ROWS_MAX rows were sent). Returns rows published.
pub fn run(options: &Options<'_>) -> Result<usize> {
    assert!(options.batch >= 1, "batch size is at least 1");
    let mut sender = store::open(options.sender, &SENDER, Access::Write)?;
    let mut queue = store::open(options.queue, &QUEUE, Access::WriteCreate)?;
    let sender_shown = options.sender.display().to_string();
    let queue_shown = options.queue.display().to_string();
    sender
        .conn
        .busy_handler(Some(busy_wait))
        .map_err(|e| store::explain(e, "sender", &sender_shown))?;
    queue
        .conn
        .busy_handler(Some(busy_wait))
        .map_err(|e| store::explain(e, "queue", &queue_shown))?;
    let rounds_max = ROWS_MAX.div_ceil(options.batch);
    let mut published = 0;
    // Rows in the queue, not yet marked sent, and the last of them: the next read starts
    // after it, so a row is never sent twice by one run.
    let mut unmarked: Vec<Row> = Vec::new();
    let shares = shares_marks(options);
    for _ in 0..rounds_max {
        let after = unmarked.last().map(|r| r.seq);
        let rows = pending(&sender, options.batch, after)
            .map_err(|e| store::explain(e, "sender", &sender_shown))?;
        if rows.is_empty() {
            break;
        }
        published += rows.len();
        match options.variant {
            Variant::MarkBeforeSend => {
                mark_sent(&sender, &rows)
                    .map_err(|e| store::explain(e, "sender", &sender_shown))?;
                enqueue(&queue, &rows).map_err(|e| store::explain(e, "queue", &queue_shown))?;
            }
            _ => {
                enqueue(&queue, &rows).map_err(|e| store::explain(e, "queue", &queue_shown))?;
                unmarked.extend(rows);
                if !shares || unmarked.len() >= MARKS_SHARED * options.batch {
                    mark_sent(&sender, &unmarked)
                        .map_err(|e| store::explain(e, "sender", &sender_shown))?;
                    unmarked.clear();
                }
            }
        }
    }
    if !unmarked.is_empty() {
        mark_sent(&sender, &unmarked).map_err(|e| store::explain(e, "sender", &sender_shown))?;
    }
    Ok(published)
}

/// With batches of more than one row, the marks of up to this many queue transactions share
/// one sender transaction: fewer commits (each an fsync) for the same guarantee. The order
/// that makes the Outbox safe stays: a row is marked sent only after the queue commit that
/// holds it returned. A crash before the shared mark re-publishes up to this many batches,
/// which the Inbox absorbs as duplicate deliveries, as it does for one.
const MARKS_SHARED: usize = 4;

/// Whether this run shares marks: the correct design with batches of more than one row.
/// Batch 1, the lab's own scenario and every explored case, marks each row at once.
fn shares_marks(options: &Options<'_>) -> bool {
    options.variant == Variant::Correct && options.batch > 1
}

/// The next `batch` pending rows (after `after`, the last row this run already queued).
fn pending(sender: &Db, batch: usize, after: Option<i64>) -> rusqlite::Result<Vec<Row>> {
    let row = |r: &rusqlite::Row<'_>| {
        Ok(Row {
            seq: r.get(0)?,
            payload: Payload {
                message: r.get(1)?,
                contract: r.get(2)?,
                amount: r.get(3)?,
            },
        })
    };
    match after {
        // The statement of the contract's trace while no row waits for its mark.
        None => sender
            .conn
            .prepare_cached(
                "SELECT seq, message_id, contract_id, amount FROM outbox WHERE status = 'pending' ORDER BY seq LIMIT ?1",
            )?
            .query_map([batch as i64], row)?
            .collect(),
        Some(seq) => sender
            .conn
            .prepare_cached(
                "SELECT seq, message_id, contract_id, amount FROM outbox WHERE status = 'pending' AND seq > ?2 ORDER BY seq LIMIT ?1",
            )?
            .query_map(params![batch as i64, seq], row)?
            .collect(),
    }
}

fn describe(rows: &[Row]) -> String {
    match rows {
        [one] => format!("message {}", one.payload.message),
        _ => format!(
            "{} messages through {}",
            rows.len(),
            rows[rows.len() - 1].payload.message
        ),
    }
}

fn enqueue(queue: &Db, rows: &[Row]) -> rusqlite::Result<()> {
    let now = now_ms();
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    for row in rows {
        queue
            .conn
            .prepare_cached(
                "INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES (?1, ?2, 'pending', ?3)",
            )?
            .execute(params![row.payload.message, row.payload.canonical(), now])?;
    }
    crash::point(points::PUBLISHER_BEFORE_QUEUE_COMMIT);
    queue.conn.execute_batch("COMMIT")?;
    out::committed("queue", &format!("delivery of {}", describe(rows)));
    crash::point(points::PUBLISHER_AFTER_QUEUE_COMMIT);
    Ok(())
}

fn mark_sent(sender: &Db, rows: &[Row]) -> rusqlite::Result<()> {
    let now = now_ms();
    sender.conn.execute_batch("BEGIN IMMEDIATE")?;
    for row in rows {
        // `AND status = 'pending'`: a second publisher may have marked it already.
        sender
            .conn
            .prepare_cached("UPDATE outbox SET status = 'sent', sent_ms = ?1 WHERE seq = ?2 AND status = 'pending'")?
            .execute(params![now, row.seq])?;
    }
    crash::point(points::PUBLISHER_BEFORE_MARK_SENT);
    sender.conn.execute_batch("COMMIT")?;
    out::committed("sender", &format!("outbox sent for {}", describe(rows)));
    crash::point(points::PUBLISHER_AFTER_MARK_SENT);
    Ok(())
}
