//! What a case's files hold after recovery, read in this process, read-only, without a trace.
//!
//! The acknowledged ⇒ durable check needs more rows than lab 14's readback gives (Outbox
//! status, each delivery's claim and status, each Inbox row), so they are read here; the
//! readback's own detail is compared with them once per case (`cross_check`).

use std::path::Path;

use anyhow::Result;

use super::super::readback;
use super::super::schema::{QUEUE, RECEIVER, SENDER};
use crate::store;

/// One row of `deliveries`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    pub message: String,
    pub status: String,
    pub claimed_by: Option<String>,
}

/// One row of `inbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRow {
    pub message: String,
    pub contract: String,
    pub amount: i64,
}

/// One row of `outbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    pub message: String,
    pub contract: String,
    pub status: String,
}

/// Every row the invariants look at. A file that does not exist reads as empty.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// (contract, amount) committed in the sender.
    pub contracts: Vec<(String, i64)>,
    pub outbox: Vec<OutboxRow>,
    pub deliveries: Vec<Delivery>,
    pub inbox: Vec<InboxRow>,
    /// (contract, balance, credits).
    pub ledger: Vec<(String, i64, i64)>,
}

impl Observed {
    pub fn outbox_pending(&self) -> usize {
        self.outbox.iter().filter(|r| r.status == "pending").count()
    }

    pub fn queue_pending(&self) -> usize {
        self.deliveries
            .iter()
            .filter(|d| d.status == "pending")
            .count()
    }
}

/// Read the three files of a case's work directory, each opened once.
pub fn read(work: &Path) -> Result<Observed> {
    let sender = work.join("sender.db");
    let queue = work.join("queue.db");
    let receiver = work.join("receiver.db");
    let mut observed = Observed::default();
    if let Some(db) = store::open_existing(&sender, &SENDER, false)? {
        observed.contracts = store::rows(
            &db,
            "SELECT contract_id, amount FROM contracts ORDER BY contract_id",
            &sender,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        observed.outbox = store::rows(
            &db,
            "SELECT message_id, contract_id, status FROM outbox ORDER BY seq",
            &sender,
            |r| {
                Ok(OutboxRow {
                    message: r.get(0)?,
                    contract: r.get(1)?,
                    status: r.get(2)?,
                })
            },
        )?;
    }
    if let Some(db) = store::open_existing(&queue, &QUEUE, false)? {
        observed.deliveries = store::rows(
            &db,
            "SELECT delivery_id, message_id, status, claimed_by FROM deliveries ORDER BY delivery_id",
            &queue,
            |r| {
                Ok(Delivery {
                    id: r.get(0)?,
                    message: r.get(1)?,
                    status: r.get(2)?,
                    claimed_by: r.get(3)?,
                })
            },
        )?;
    }
    if let Some(db) = store::open_existing(&receiver, &RECEIVER, false)? {
        observed.inbox = store::rows(
            &db,
            "SELECT message_id, contract_id, amount FROM inbox ORDER BY message_id",
            &receiver,
            |r| {
                Ok(InboxRow {
                    message: r.get(0)?,
                    contract: r.get(1)?,
                    amount: r.get(2)?,
                })
            },
        )?;
        observed.ledger = store::rows(
            &db,
            "SELECT contract_id, balance, credits FROM ledger ORDER BY contract_id",
            &receiver,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
    }
    Ok(observed)
}

/// Lab 14's own readback must see what `read` saw: the contracts, the ledger and the
/// deliveries. A difference is a bug in one of the two readers, so it stops the run.
pub fn cross_check(work: &Path, observed: &Observed) -> Result<()> {
    let sender = work.join("sender.db");
    if !sender.is_file() {
        return Ok(());
    }
    let detail = readback::detail(&readback::Paths {
        sender: &sender,
        queue: &work.join("queue.db"),
        receiver: &work.join("receiver.db"),
    })?;
    anyhow::ensure!(
        detail.contracts == observed.contracts
            && detail.ledger == observed.ledger
            && detail.deliveries == observed.deliveries.len() as i64,
        "explore's reader and lab 14's readback disagree on the files"
    );
    Ok(())
}
