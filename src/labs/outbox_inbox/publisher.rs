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
    for _ in 0..rounds_max {
        let rows = pending(&sender, options.batch)
            .map_err(|e| store::explain(e, "sender", &sender_shown))?;
        if rows.is_empty() {
            break;
        }
        match options.variant {
            Variant::MarkBeforeSend => {
                mark_sent(&sender, &rows)
                    .map_err(|e| store::explain(e, "sender", &sender_shown))?;
                enqueue(&queue, &rows).map_err(|e| store::explain(e, "queue", &queue_shown))?;
            }
            _ => {
                enqueue(&queue, &rows).map_err(|e| store::explain(e, "queue", &queue_shown))?;
                mark_sent(&sender, &rows)
                    .map_err(|e| store::explain(e, "sender", &sender_shown))?;
            }
        }
        published += rows.len();
    }
    Ok(published)
}

fn pending(sender: &Db, batch: usize) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = sender.conn.prepare_cached(
        "SELECT seq, message_id, contract_id, amount FROM outbox WHERE status = 'pending' ORDER BY seq LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([batch as i64], |r| {
            Ok(Row {
                seq: r.get(0)?,
                payload: Payload {
                    message: r.get(1)?,
                    contract: r.get(2)?,
                    amount: r.get(3)?,
                },
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
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
