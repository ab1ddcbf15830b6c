//! A lab file's RabbitMQ store read back: the queue's ready messages, in order, into a SQLite
//! file in the run's directory (`NAME.rabbitmq.db`, one table `messages`), which the checks,
//! the invariants and the audit read as they read a SQLite store.
//!
//! AMQP has no look that leaves a message as it was: each is taken with `basic.get`, unacked,
//! and returned when the channel closes, so the broker marks it redelivered, as it would after
//! any consumer that took it and died. A message delivered to a running consumer and not yet
//! acked is not ready, and not in the copy.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::engine::state::server::queue;

/// How long a quiet read (no role running) waits for the broker to take back what the roles'
/// closed connections held.
pub const SETTLE_WAIT: Duration = Duration::from_secs(5);
const SETTLE_SLICE: Duration = Duration::from_millis(25);

/// Queue `name` at `url` into a new SQLite file `file`. When `quiet` (no role runs), first
/// wait until the queue has no consumer (a consumer the broker still counts holds its unacked
/// messages) and its ready count held still across two looks SETTLE_SLICE apart (a role that
/// took messages with `basic.get` is counted as no consumer: they come back once the broker
/// has seen its connection close, which a dead process's closes at once).
pub fn copy(url: &str, name: &str, file: &Path, quiet: bool) -> Result<()> {
    if quiet {
        let deadline = Instant::now() + SETTLE_WAIT;
        let mut ready = None;
        loop {
            let looked = queue::look(url, name)?.context("the queue is gone")?;
            if looked.consumers == 0 && ready == Some(looked.ready) {
                break;
            }
            ready = (looked.consumers == 0).then_some(looked.ready);
            anyhow::ensure!(
                Instant::now() < deadline,
                "the queue did not settle within {} s with no role running ({} consumers, {} ready)",
                SETTLE_WAIT.as_secs(),
                looked.consumers,
                looked.ready
            );
            std::thread::sleep(SETTLE_SLICE);
        }
    }
    let messages = queue::messages(url, name)?;
    anyhow::ensure!(
        messages.len() < queue::KEPT_MAX as usize,
        "the queue holds {} messages or more, past what is read back",
        queue::KEPT_MAX
    );
    let mut conn = super::stores::fresh_copy(file)?;
    let tx = conn.transaction()?;
    tx.execute_batch(super::stores::QUEUE_TABLE)?;
    {
        let mut insert = tx.prepare("INSERT INTO messages VALUES (?1, ?2, ?3, ?4)")?;
        for (position, m) in messages.iter().enumerate() {
            insert.execute((position as i64 + 1, &m.message_id, m.redelivered, &m.body))?;
        }
    }
    tx.commit()?;
    Ok(())
}
