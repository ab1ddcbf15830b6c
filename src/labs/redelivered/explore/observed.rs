//! What a case's stores hold after recovery, read alike on both stacks: the message and
//! whether it is still owed, each effect at the receiver with its key, the commits the
//! stores hold (as the consumers reported them), and the counts of the table.

use std::path::Path;

use anyhow::Result;

use crate::labs::http_dispatch::schema::{RECEIVER, RECEIVER_DB};
use crate::labs::redelivered::history::MESSAGE;
use crate::labs::redelivered::schema::{CONSUMER, QUEUE};
use crate::labs::redelivered::stack::Stack;
use crate::labs::redelivered::state;
use crate::store;
use crate::store::pg::{self, Session};

#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// The messages enqueued (one per case).
    pub messages: Vec<String>,
    /// A message is not acked yet, or is ready in the queue again.
    pub owed: bool,
    /// Each effect at the receiver and its key (None: an unkeyed call).
    pub effects: Vec<(i64, Option<String>)>,
    /// The commits of the lab's own store that the store holds, by their first words as the
    /// roles report them (`ack of message M1 by B`, `delivery of message M1 to A`).
    pub held: Vec<String>,
    /// The count columns of the table, in order.
    pub counts: Vec<(&'static str, i64)>,
}

/// The commits a role reports of the lab's own store, and the store's name in them:
/// `(store, kinds)`. The others (a claim, a refused ack) need no row to hold them.
pub fn checked(stack: Stack) -> (&'static str, &'static [&'static str]) {
    match stack {
        Stack::Sqlite => ("queue", &["enqueue", "ack"]),
        Stack::Servers => ("consumer", &["delivery", "reply"]),
    }
}

/// The words a commit is known by: up to `<kind> of message M by|to C`.
pub fn key(what: &str) -> String {
    what.split_whitespace()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Observed {
    pub fn read(stack: Stack, work: &Path) -> Result<Observed> {
        let receiver = work.join(RECEIVER_DB);
        let mut o = match stack {
            Stack::Sqlite => on_files(work, &receiver)?,
            Stack::Servers => on_servers(work, &receiver)?,
        };
        if let Some(db) = store::open_existing(&receiver, &RECEIVER, false)? {
            o.effects = store::rows(
                &db,
                "SELECT effect_id, key FROM effects ORDER BY effect_id",
                &receiver,
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
        }
        Ok(o)
    }

    /// Effects of message `id`: its key's; an unkeyed effect (no key) belongs to the one
    /// message a case enqueues.
    pub fn effects_of(&self, id: &str) -> usize {
        let single = self.messages.len() == 1;
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref() == Some(id) || (k.is_none() && single))
            .count()
    }
}

fn on_files(work: &Path, receiver: &Path) -> Result<Observed> {
    let queue = work.join(Stack::Sqlite.stores().queue);
    let s = state::read_traced(&queue, receiver, false)?;
    let mut o = Observed {
        counts: vec![
            ("messages", s.queue.messages),
            ("deliveries", s.queue.deliveries),
            ("replies", s.queue.replies),
            ("replayed", s.queue.replayed),
            ("effects", s.receiver.effects),
            ("acked", s.queue.acked),
        ],
        ..Observed::default()
    };
    if let Some(db) = store::open_existing(&queue, &QUEUE, false)? {
        let rows: Vec<(String, Option<String>)> = store::rows(
            &db,
            "SELECT id, acked_by FROM messages ORDER BY id",
            &queue,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, acked) in rows {
            o.held.push(format!("enqueue of message {id}"));
            match acked {
                Some(by) => o.held.push(format!("ack of message {id} by {by}")),
                None => o.owed = true,
            }
            o.messages.push(id);
        }
    }
    Ok(o)
}

fn on_servers(work: &Path, receiver: &Path) -> Result<Observed> {
    let stores = Stack::Servers.stores();
    let db = stores.db.expect("the servers have the consumers' database");
    let s = state::read_servers(work, db, stores.queue, receiver)?;
    let c = &s.consumer;
    let mut o = Observed {
        messages: vec![MESSAGE.0.to_string()],
        // No consumer recorded an ack that reached the broker, or the message is ready in
        // the queue again (a broker killed right after an ack may come back without it: the
        // ack was answered, not yet written).
        owed: c.acked == 0 || s.queue.messages > 0,
        counts: vec![
            ("messages", s.queue.messages),
            ("deliveries", c.deliveries),
            ("redelivered", c.redelivered),
            ("replies", c.replies),
            ("replayed", c.replayed),
            ("effects", s.receiver.effects),
            ("acked", c.acked),
        ],
        ..Observed::default()
    };
    let mut pg = pg::open_in(work, db, &CONSUMER, Session::ReadOnly, false)?;
    if !pg.empty {
        for (table, kind) in [("deliveries", "delivery"), ("replies", "reply")] {
            let sql = format!("SELECT message, consumer FROM {table} ORDER BY message, consumer");
            let rows = pg.run(&sql, &[]).map_err(|e| pg.explain(e))?.rows;
            o.held.extend(rows.into_iter().map(|r| {
                let text = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
                format!("{kind} of message {} to {}", text(0), text(1))
            }));
        }
    }
    Ok(o)
}
