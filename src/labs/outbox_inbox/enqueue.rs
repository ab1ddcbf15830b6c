//! A raw delivery, as a faulty upstream that reuses a message id would write it.

use std::path::Path;

use anyhow::Result;
use rusqlite::params;

use crate::crash;
use crate::labs::outbox_inbox::model::{check_amount, check_id, now_ms, Payload};
use crate::labs::outbox_inbox::points;
use crate::labs::outbox_inbox::schema::QUEUE;
use crate::out;
use crate::store::{self, Access};

pub fn run(queue_path: &Path, message: &str, contract: &str, amount: i64) -> Result<i64> {
    check_id("message", message)?;
    check_id("contract", contract)?;
    check_amount(amount)?;
    let queue = store::open(queue_path, &QUEUE, Access::WriteCreate)?;
    let payload = Payload::new(message, contract, amount);
    let write = || -> rusqlite::Result<i64> {
        queue.conn.execute_batch("BEGIN IMMEDIATE")?;
        queue
            .conn
            .prepare_cached(
                "INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES (?1, ?2, 'pending', ?3)",
            )?
            .execute(params![message, payload.canonical(), now_ms()])?;
        let id = queue.conn.last_insert_rowid();
        crash::point(points::ENQUEUE_BEFORE_COMMIT);
        queue.conn.execute_batch("COMMIT")?;
        Ok(id)
    };
    let id = write().map_err(|e| store::explain(e, "queue", &queue_path.display().to_string()))?;
    out::committed(
        "queue",
        &format!("raw delivery {id} message {message} amount {amount}"),
    );
    crash::point(points::ENQUEUE_AFTER_COMMIT);
    Ok(id)
}
