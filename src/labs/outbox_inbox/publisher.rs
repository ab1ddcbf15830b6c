//! The publisher, written once for every stack: hand pending Outbox rows to the transport,
//! and only once it holds them (the queue's commit returned; the broker confirmed) mark them
//! sent. The business store and the transport share no transaction: a crash between the two
//! sends a row again, the lab's first duplicate, which the Inbox absorbs.

use anyhow::Result;

use super::model::Payload;
use super::outbox::{Outbox, Pending};
use super::ports::Transport;
use super::variant::Variant;

/// Largest number of Outbox rows one publisher run sends.
pub const ROWS_MAX: usize = 1_000_000;

/// With batches of more than one row, the marks of up to this many publishes share one
/// sender transaction: fewer commits (each an fsync) for the same guarantee. The order that
/// makes the Outbox safe stays: a row is marked sent only after the publish that holds it
/// returned. A crash before the shared mark re-publishes up to this many batches, which the
/// Inbox absorbs as duplicate deliveries, as it does for one.
const MARKS_SHARED: usize = 4;

/// Publish until no pending row is left (or ROWS_MAX rows were sent), then let go of both
/// stores. Returns the rows published.
pub fn run(
    mut outbox: Outbox,
    mut transport: Box<dyn Transport>,
    batch: usize,
    variant: Variant,
) -> Result<usize> {
    assert!(batch >= 1, "batch size is at least 1");
    let mut published = 0;
    // Rows the transport holds, not yet marked sent, the last of them where the next read
    // starts: a row is never sent twice by one run.
    let mut unmarked: Vec<Pending> = Vec::new();
    // Batch 1, the lab's own scenario and every explored case, marks each row at once.
    let shares = variant == Variant::Correct && batch > 1;
    for _ in 0..ROWS_MAX.div_ceil(batch) {
        let rows = outbox.pending(batch, unmarked.last())?;
        if rows.is_empty() {
            break;
        }
        published += rows.len();
        let payloads: Vec<Payload> = rows.iter().map(|r| r.payload.clone()).collect();
        if variant == Variant::MarkBeforeSend {
            outbox.mark_sent(&rows)?;
            transport.publish(&payloads)?;
            continue;
        }
        transport.publish(&payloads)?;
        unmarked.extend(rows);
        if !shares || unmarked.len() >= MARKS_SHARED * batch {
            outbox.mark_sent(&unmarked)?;
            unmarked.clear();
        }
    }
    if !unmarked.is_empty() {
        outbox.mark_sent(&unmarked)?;
    }
    transport.close()?;
    drop(outbox);
    Ok(published)
}
