//! The end-to-end verdict on a load run of lab 14 on the stack, in Jepsen's words, from the
//! SQLite copies `settle` made of the final rows (or the audit's copies of those).
//!
//! Each of the N messages is one operation: `ok` once its contract and Outbox row are in the
//! sender (the sender's commit returned), `info` if never. Its deliveries are its receipts'
//! `handled` counts (every delivery a consumer handled leaves one, in the same transaction as
//! its effect); its effects are its contract's credits in the ledger (the consumers' `applied`
//! events beyond those are acknowledged commits the server lost: each one a problem). An
//! unapplied `ok` message is `lost-write` or
//! `unseen`; two effects are a `duplicate`; a second delivery absorbed by the Inbox is a
//! `duplicate-delivery`, the one anomaly the design allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use super::super::roles::STORES;
use crate::engine::jepsen::{self, Op, Outcome};
use crate::engine::load::profile::{Shape, Verdict};
use crate::events::Event;
use crate::labs::outbox_inbox::load_check::ALLOWED;

/// Problems listed per kind before the rest are counted only.
const PROBLEMS_MAX: usize = 5;

/// The lab's counts (chaos.json `check`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub contracts: i64,
    pub inbox: i64,
    pub ledger: i64,
    pub ledger_expected: i64,
    pub outbox_pending: i64,
    /// Messages left ready in the queue at the end.
    pub queue_pending: i64,
    /// Publishes a consumer handled (one receipt each) and deliveries it handled in all.
    pub publishes: i64,
    pub physical_deliveries: i64,
    /// Deliveries beyond the first of their message (re-publishes and redeliveries).
    pub duplicate_deliveries: i64,
    /// Receipts whose last delivery came flagged `redelivered` by the broker.
    pub redelivered: i64,
    /// Handled deliveries that applied nothing: their message was already in the Inbox.
    pub duplicates_suppressed: i64,
    pub rejected: i64,
    pub lost_effects: i64,
    pub duplicated_effects: i64,
    /// Contracts whose balance is not their amount times their credits.
    pub wrong_balances: i64,
    pub applied_events: i64,
    pub duplicate_events: i64,
    pub rejected_events: i64,
    pub problems: Vec<String>,
}

fn open(work: &Path, name: &str) -> Result<Connection> {
    let path = work.join(name);
    anyhow::ensure!(path.is_file(), "{} is missing", path.display());
    Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", path.display()))
}

fn int(conn: &Connection, sql: &str) -> Result<i64> {
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .map(|v| v.unwrap_or(0))
        .with_context(|| sql.to_string())
}

/// The consumers' events per message: (applied, absorbed as duplicates, rejected).
pub fn by_message(events: &[Event]) -> BTreeMap<&str, (u32, u32, u32)> {
    let mut seen: BTreeMap<&str, (u32, u32, u32)> = BTreeMap::new();
    for event in events {
        match event {
            Event::Applied { item } => seen.entry(item).or_default().0 += 1,
            Event::Duplicate { item } => seen.entry(item).or_default().1 += 1,
            Event::Rejected { item, .. } => seen.entry(item).or_default().2 += 1,
            _ => {}
        }
    }
    seen
}

/// Per message: (publishes handled, deliveries handled), from the receipts.
fn deliveries(receiver: &Connection) -> Result<BTreeMap<String, (i64, i64)>> {
    let mut stmt = receiver
        .prepare("SELECT message_id, count(*), sum(handled) FROM receipts GROUP BY message_id")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                (r.get::<_, i64>(1)?, r.get::<_, i64>(2)?),
            ))
        })?
        .collect::<rusqlite::Result<BTreeMap<_, _>>>()?;
    Ok(rows)
}

/// Check the files in `work` after a run of `shape`, given its processes' events.
pub fn check(work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
    let sender = open(work, STORES.sender)?;
    let receiver = open(work, STORES.receiver)?;
    let queue = open(work, STORES.queue)?;
    let amounts = crate::rng::amounts(shape.seed, shape.messages);
    let delivered = deliveries(&receiver)?;
    let mut c = Check {
        contracts: int(&sender, "SELECT count(*) FROM contracts")?,
        inbox: int(&receiver, "SELECT count(*) FROM inbox")?,
        ledger: int(&receiver, "SELECT sum(balance) FROM ledger")?,
        ledger_expected: amounts.iter().sum(),
        outbox_pending: int(
            &sender,
            "SELECT count(*) FROM outbox WHERE status = 'pending'",
        )?,
        queue_pending: int(&queue, "SELECT count(*) FROM messages")?,
        publishes: delivered.values().map(|d| d.0).sum(),
        physical_deliveries: delivered.values().map(|d| d.1).sum(),
        redelivered: int(
            &receiver,
            "SELECT count(*) FROM receipts WHERE redelivered = 1",
        )?,
        rejected: int(
            &receiver,
            "SELECT count(*) FROM receipts WHERE outcome = 'rejected'",
        )?,
        ..Check::default()
    };
    c.duplicate_deliveries = c.physical_deliveries - delivered.len() as i64;
    c.duplicates_suppressed = c.physical_deliveries - c.inbox - c.rejected;
    let seen = by_message(events);
    for (applied, duplicate, rejected) in seen.values() {
        c.applied_events += i64::from(*applied);
        c.duplicate_events += i64::from(*duplicate);
        c.rejected_events += i64::from(*rejected);
    }
    let written: BTreeSet<String> = {
        let mut stmt = sender.prepare("SELECT contract_id FROM contracts")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<_>>()?;
        ids
    };
    let ledger: BTreeMap<String, (i64, i64)> = {
        let mut stmt = receiver.prepare("SELECT contract_id, balance, credits FROM ledger")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
            .collect::<rusqlite::Result<_>>()?;
        rows
    };
    let mut event_problems = Vec::new();
    let mut history = Vec::with_capacity(amounts.len());
    for (i, amount) in amounts.iter().enumerate() {
        let (contract, message) = (format!("C{:06}", i + 1), format!("M{:06}", i + 1));
        let (balance, credits) = ledger.get(&contract).copied().unwrap_or((0, 0));
        let (applied, _, rejected) = seen.get(message.as_str()).copied().unwrap_or_default();
        if i64::from(applied) > credits {
            event_problems.push(format!(
                "{message}: {applied} applied events, yet {credits} credits in the ledger (an acknowledged commit lost)"
            ));
        }
        if rejected > 0 {
            event_problems.push(format!("{message}: rejected {rejected} times"));
        }
        // The ledger is the truth of the effects (each credit is made in the transaction of
        // its Inbox row). An `applied` event is written after its commit returned, so more
        // events than credits is an acknowledged commit the server lost (async-commit under
        // a server kill): a problem, and, with no credit left, a lost effect.
        let effects = credits;
        match effects {
            0 => c.lost_effects += 1,
            n => {
                c.duplicated_effects += n - 1;
                if balance != amount * credits {
                    c.wrong_balances += 1;
                }
            }
        }
        let handled = delivered.get(&message).map_or(0, |d| d.1);
        history.push(Op {
            item: message,
            outcome: if written.contains(&contract) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: u32::try_from(handled).unwrap_or(u32::MAX),
            effects: u32::try_from(effects).unwrap_or(u32::MAX),
        });
    }
    let n = shape.messages as i64;
    let mut expect = |what: &str, got: i64, want: i64| {
        if got != want {
            c.problems.push(format!("{what} is {got}, expected {want}"));
        }
    };
    expect("contracts", c.contracts, n);
    expect("inbox", c.inbox, n);
    expect("ledger", c.ledger, c.ledger_expected);
    expect("outbox_pending", c.outbox_pending, 0);
    expect("queue_pending", c.queue_pending, 0);
    expect("lost_effects", c.lost_effects, 0);
    expect("duplicated_effects", c.duplicated_effects, 0);
    expect("wrong_balances", c.wrong_balances, 0);
    let more = event_problems.len().saturating_sub(PROBLEMS_MAX);
    c.problems
        .extend(event_problems.into_iter().take(PROBLEMS_MAX));
    if more > 0 {
        c.problems.push(format!("and {more} more event problems"));
    }
    let findings = jepsen::check(&history, ALLOWED);
    for found in findings.bad_anomalies.iter().take(3 * PROBLEMS_MAX) {
        c.problems.push(format!(
            "{} {}: {}",
            found.anomaly.name(),
            found.item,
            found.detail
        ));
    }
    Ok(Verdict {
        check: serde_json::to_value(&c)?,
        problems: c.problems.clone(),
        lost: c.lost_effects,
        duplicated: c.duplicated_effects,
        anomalies: findings.anomalies,
        bad_anomalies: findings.bad_anomalies,
    })
}

#[cfg(test)]
mod tests;
