//! The producer: every message of a run (`M1`, `M2`, … in queue order) in one commit.

use std::path::Path;

use anyhow::Result;
use rusqlite::params;

use super::model::message_id;
use super::schema::QUEUE;
use crate::fail;
use crate::out;
use crate::store::{self, Access};

/// Write one message per amount into an empty queue; returns how many.
pub fn run(queue_path: &Path, amounts: &[i64]) -> Result<usize> {
    assert!(
        !amounts.is_empty(),
        "the command line gives at least one amount"
    );
    let queue = store::open(queue_path, &QUEUE, Access::WriteCreate)?;
    let shown = queue_path.display().to_string();
    let explain = |e| store::explain(e, "queue", &shown);
    let held: i64 = queue
        .conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .map_err(explain)?;
    if held > 0 {
        return Err(fail::usage(format!(
            "queue database {shown} already holds {}; the producer writes into an empty queue",
            out::plural(held, "message", "messages")
        )));
    }
    let write = || -> rusqlite::Result<Vec<String>> {
        queue.conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut ids = Vec::with_capacity(amounts.len());
        let now = crate::common::now_ms();
        for (i, amount) in amounts.iter().enumerate() {
            let id = message_id(i + 1);
            queue
                .conn
                .prepare_cached(
                    "INSERT INTO messages(message_id, amount, status, enqueued_ms) VALUES (?1, ?2, 'pending', ?3)",
                )?
                .execute(params![id, amount, now])?;
            ids.push(id);
        }
        queue.conn.execute_batch("COMMIT")?;
        Ok(ids)
    };
    let ids = write().map_err(explain)?;
    out::committed("queue", &format!("messages {}", ids.join(" ")));
    Ok(ids.len())
}
