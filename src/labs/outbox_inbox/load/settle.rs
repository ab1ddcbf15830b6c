//! The final state of a load run on the stack as SQLite files in the work directory, named as
//! the lab's stores (`sender`, `receiver`, `messages`): each database's rows loaded into
//! SQLite under the lab's own DDL (the server store's way, so its logical digest is the
//! server's), and the messages left in the queue. The check reads these files, the evidence
//! keeps them (`db/`), and the audit re-derives the verdict from them with no server.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::Connection;

use super::super::schema::{PG_RECEIVER, PG_SENDER};
use super::super::stack::Stack;
use crate::engine::state::server::{pg, queue};

/// The table of the kept queue: one row per message still in it, in the broker's order.
pub const QUEUE_DDL: &str = "CREATE TABLE messages(
    n INTEGER PRIMARY KEY,
    message_id TEXT,
    redelivered INTEGER NOT NULL CHECK (redelivered IN (0, 1)),
    body TEXT NOT NULL);";

/// Write the three files into `work` (whose `stack.json` says where the servers are).
pub fn settle(work: &Path) -> Result<()> {
    let file = crate::stackfile::read(work)?;
    let queue_name = Stack::Servers.stores().queue;
    for schema in [&PG_SENDER, &PG_RECEIVER] {
        let url = file
            .postgres
            .get(schema.db)
            .with_context(|| format!("stack.json names no database {}", schema.db))?;
        let conn = pg::read(url, schema)
            .with_context(|| format!("reading the {} database", schema.db))?
            .with_context(|| format!("the {} database has no tables", schema.db))?;
        let path = work.join(schema.db);
        let shown = path.display().to_string();
        conn.execute("VACUUM INTO ?1", [shown.as_str()])
            .with_context(|| format!("copying the {} rows into {shown}", schema.db))?;
    }
    let url = file
        .amqp_url
        .as_deref()
        .context("stack.json names no broker")?;
    let name = file
        .queues
        .get(queue_name)
        .with_context(|| format!("stack.json names no queue {queue_name}"))?;
    let kept = queue::messages(url, name).context("reading the messages left in the queue")?;
    let conn = Connection::open(work.join(queue_name)).context("creating the kept queue")?;
    conn.execute_batch(QUEUE_DDL)?;
    let mut insert = conn.prepare(
        "INSERT INTO messages(n, message_id, redelivered, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (n, m) in kept.iter().enumerate() {
        insert.execute(rusqlite::params![
            n as i64 + 1,
            m.message_id,
            i64::from(m.redelivered),
            m.body
        ])?;
    }
    Ok(())
}
