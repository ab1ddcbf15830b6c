//! The one reader of lab 14's state, per stack: every row the lab's checks look at, read
//! once. `verify` prints its readback (the counts the stages name), explore judges a case by
//! it, the load check a run: the same rows, the same statements, so no two readers can
//! disagree. The business store and the Inbox store are read by the same statements on every
//! stack; the transport by its own (the SQL queue's rows; the broker's ready messages, and
//! the receipts its deliveries left in the receiver).

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::stack::Stack;
use crate::store::sql::{rows, Sql};

/// One Outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outboxed {
    pub message: String,
    pub contract: String,
    pub status: String,
}

/// One row of the SQL queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub id: i64,
    pub message: String,
    pub status: String,
    pub claimed_by: Option<String>,
}

/// One Inbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inboxed {
    pub message: String,
    pub contract: String,
    pub amount: i64,
}

/// One receipt: a message the broker delivered, as the consumer recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub message: String,
    pub outcome: String,
    pub redelivered: bool,
    /// How many times it was delivered.
    pub handled: i64,
}

/// Every row the lab's checks look at. A store not there yet reads as empty and is named in
/// `absent`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// (contract, amount) committed in the sender.
    pub contracts: Vec<(String, i64)>,
    pub outbox: Vec<Outboxed>,
    /// The SQL queue's rows (SQLite).
    pub deliveries: Vec<Queued>,
    pub inbox: Vec<Inboxed>,
    /// (contract, balance, credits).
    pub ledger: Vec<(String, i64, i64)>,
    /// One per message the broker delivered (the servers).
    pub receipts: Vec<Receipt>,
    /// Messages ready in the broker's queue (the servers).
    pub ready: i64,
    pub absent: Vec<&'static str>,
}

/// The business store's rows (`by`: the Outbox's order, its key).
pub fn read_sender(state: &mut State, s: &mut dyn Sql, by: &str) -> Result<()> {
    state.contracts = rows(
        s,
        "SELECT contract_id, amount FROM contracts ORDER BY contract_id",
        &[],
        |r| Some((r[0].text()?, r[1].int()?)),
    )?;
    let outbox = format!("SELECT message_id, contract_id, status FROM outbox ORDER BY {by}");
    state.outbox = rows(s, &outbox, &[], |r| {
        Some(Outboxed {
            message: r[0].text()?,
            contract: r[1].text()?,
            status: r[2].text()?,
        })
    })?;
    Ok(())
}

/// The SQL queue's rows.
pub fn read_queue(state: &mut State, q: &mut dyn Sql) -> Result<()> {
    state.deliveries = rows(
        q,
        "SELECT delivery_id, message_id, status, claimed_by FROM deliveries ORDER BY delivery_id",
        &[],
        |r| {
            Some(Queued {
                id: r[0].int()?,
                message: r[1].text()?,
                status: r[2].text()?,
                claimed_by: r[3].maybe_text()?,
            })
        },
    )?;
    Ok(())
}

/// The Inbox store's rows, and the receipts where its stack keeps them.
pub fn read_receiver(state: &mut State, r: &mut dyn Sql, stack: Stack) -> Result<()> {
    state.inbox = rows(
        r,
        "SELECT message_id, contract_id, amount FROM inbox ORDER BY message_id",
        &[],
        |r| {
            Some(Inboxed {
                message: r[0].text()?,
                contract: r[1].text()?,
                amount: r[2].int()?,
            })
        },
    )?;
    state.ledger = rows(
        r,
        "SELECT contract_id, balance, credits FROM ledger ORDER BY contract_id",
        &[],
        |r| Some((r[0].text()?, r[1].int()?, r[2].int()?)),
    )?;
    if stack.receipts() {
        state.receipts = rows(
            r,
            "SELECT message_id, outcome, redelivered, handled FROM receipts ORDER BY publish_id",
            &[],
            |r| {
                Some(Receipt {
                    message: r[0].text()?,
                    outcome: r[1].text()?,
                    redelivered: r[2].int()? == 1,
                    handled: r[3].int()?,
                })
            },
        )?;
    }
    Ok(())
}

/// `verify`'s JSON: the counts of the stack's stages.
#[derive(Debug, Serialize)]
struct Sender {
    contracts: usize,
    outbox_pending: usize,
    outbox_sent: usize,
}

impl State {
    pub fn outbox_pending(&self) -> usize {
        self.outbox.iter().filter(|r| r.status == "pending").count()
    }

    /// What the transport still owes: SQL queue rows pending, or messages ready.
    pub fn queue_pending(&self, stack: Stack) -> i64 {
        match stack {
            Stack::Sqlite => self.status_count("pending") as i64,
            Stack::Servers => self.ready,
        }
    }

    fn status_count(&self, status: &str) -> usize {
        self.deliveries
            .iter()
            .filter(|d| d.status == status)
            .count()
    }

    /// The sum of the ledger's balances.
    pub fn ledger_total(&self) -> i64 {
        self.ledger.iter().map(|l| l.1).sum()
    }

    /// The credits of `contract` in the ledger.
    pub fn credits(&self, contract: &str) -> i64 {
        self.ledger
            .iter()
            .find(|l| l.0 == contract)
            .map_or(0, |l| l.2)
    }

    /// How many times the transport delivered each message: its rows in the SQL queue, or
    /// the deliveries its receipts count but for a refused payload's.
    pub fn deliveries(&self) -> BTreeMap<&str, i64> {
        let mut by: BTreeMap<&str, i64> = BTreeMap::new();
        for d in &self.deliveries {
            *by.entry(&d.message).or_default() += 1;
        }
        for r in self.receipts.iter().filter(|r| r.outcome != "rejected") {
            *by.entry(&r.message).or_default() += r.handled;
        }
        by
    }

    /// The readback `verify` prints: the counts its stack's stages name.
    pub fn readback(&self, stack: Stack) -> Value {
        let sender = Sender {
            contracts: self.contracts.len(),
            outbox_pending: self.outbox_pending(),
            outbox_sent: self.outbox.iter().filter(|r| r.status == "sent").count(),
        };
        let (queue, receiver) = match stack {
            Stack::Sqlite => {
                let mut messages: Vec<&str> =
                    self.deliveries.iter().map(|d| d.message.as_str()).collect();
                messages.sort_unstable();
                messages.dedup();
                (
                    json!({
                        "deliveries": self.deliveries.len(),
                        "messages": messages.len(),
                        "pending": self.status_count("pending"),
                        "acked": self.status_count("acked"),
                        "rejected": self.status_count("rejected"),
                    }),
                    json!({"inbox": self.inbox.len(), "ledger": self.ledger_total()}),
                )
            }
            Stack::Servers => {
                let r = &self.receipts;
                (
                    json!({"messages": self.ready}),
                    json!({
                        "deliveries": r.len(),
                        "handled": r.iter().map(|r| r.handled).sum::<i64>(),
                        "redelivered": r.iter().filter(|r| r.redelivered).count(),
                        "rejected": r.iter().filter(|r| r.outcome == "rejected").count(),
                        "inbox": self.inbox.len(),
                        "ledger": self.ledger_total(),
                    }),
                )
            }
        };
        json!({"sender": sender, "queue": queue, "receiver": receiver, "absent": self.absent})
    }
}

/// The readback's one human line, its counts in the order of the stack's stages.
pub fn line(readback: &Value, stack: Stack) -> String {
    let part = |store: &str, keys: &[&str]| {
        let values: Vec<String> = keys
            .iter()
            .map(|k| format!("{k} {}", readback[store][k]))
            .collect();
        format!("{store}: {}", values.join(" "))
    };
    let (queue, receiver): (&[&str], &[&str]) = match stack {
        Stack::Sqlite => (
            &["deliveries", "messages", "pending", "acked", "rejected"],
            &["inbox", "ledger"],
        ),
        Stack::Servers => (
            &["messages"],
            &[
                "deliveries",
                "handled",
                "redelivered",
                "rejected",
                "inbox",
                "ledger",
            ],
        ),
    };
    [
        part("sender", &["contracts", "outbox_pending", "outbox_sent"]),
        part("queue", queue),
        part("receiver", receiver),
    ]
    .join(" | ")
}
