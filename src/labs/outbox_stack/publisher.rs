//! The publisher on the stack: read a pending Outbox row, publish it (persistent, with its
//! message id) to the durable queue, wait for the broker's confirm, and only then mark the row
//! sent. A crash anywhere before the mark's commit leaves the row pending, so it is published
//! again: the second copy is the lab's first duplicate, which the Inbox absorbs.
//! Also the faulty upstream (`stack-enqueue`): a raw message straight into the queue.

use anyhow::Result;

use super::amqp::{publish_id, Broker};
use super::pg::{self, Session, Val};
use super::points;
use super::schema::SENDER;
use super::variant::Variant;
use crate::crash;
use crate::labs::outbox_inbox::model::{now_ms, Payload};
use crate::out;

/// Largest number of Outbox rows one publisher run sends.
pub const ROWS_MAX: usize = 1_000_000;

/// Publish until no pending row is left (or ROWS_MAX were sent). Returns rows published.
pub fn run(sender: &str, queue: &str, variant: Variant) -> Result<usize> {
    let mut pg = pg::open(sender, &SENDER, Session::Durable, false)?;
    if pg.empty {
        return Ok(0);
    }
    // no-confirm: the channel is not even in confirm mode; the broker never says whether it
    // stored anything.
    let confirms = variant != Variant::NoConfirm;
    let mut broker = Broker::open(queue, confirms, true)?;
    let mut published = 0;
    for n in 0..ROWS_MAX {
        let rows = pg
            .run(
                "SELECT message_id, contract_id, amount FROM outbox WHERE status = 'pending' ORDER BY message_id LIMIT $1",
                &[Val::Int(1)],
            )
            .map_err(|e| pg.explain(e))?
            .rows;
        let Some(row) = rows.first() else {
            break;
        };
        let field = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let payload = Payload::new(&field(0), &field(1), field(2).parse().unwrap_or(0));
        let sent = broker.publish(
            &payload.message,
            &publish_id(n as u64 + 1),
            &payload.canonical(),
            variant != Variant::Transient,
        )?;
        crash::point(points::PUBLISHER_AFTER_PUBLISH);
        if confirms {
            broker.confirm(sent)?;
            crash::point(points::PUBLISHER_AFTER_CONFIRM);
        }
        mark_sent(&mut pg, &payload.message)?;
        published += 1;
    }
    broker.close()?;
    out::line(&format!(
        "PUBLISHED {}",
        out::plural(published, "message", "messages")
    ));
    Ok(published)
}

fn mark_sent(pg: &mut pg::Pg, message: &str) -> Result<()> {
    let result = (|| {
        pg.run("BEGIN", &[])?;
        // `AND status = 'pending'`: a second publisher may have marked it already.
        pg.run(
            "UPDATE outbox SET status = 'sent', sent_ms = $1 WHERE message_id = $2 AND status = 'pending'",
            &[Val::Int(now_ms()), Val::Text(message)],
        )?;
        crash::point(points::PUBLISHER_BEFORE_MARK_COMMIT);
        pg.run("COMMIT", &[])
    })();
    if let Err(e) = result {
        pg.rollback();
        return Err(pg.explain(e));
    }
    out::committed("sender", &format!("outbox sent for message {message}"));
    crash::point(points::PUBLISHER_AFTER_MARK_COMMIT);
    Ok(())
}

/// A faulty upstream's raw message (persistent, confirmed): returns its publish id.
pub fn enqueue(queue: &str, payload: &Payload) -> Result<String> {
    let mut broker = Broker::open(queue, true, true)?;
    let id = publish_id(1);
    let sent = broker.publish(&payload.message, &id, &payload.canonical(), true)?;
    broker.confirm(sent)?;
    broker.close()?;
    Ok(id)
}
