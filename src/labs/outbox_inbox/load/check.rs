//! The end-to-end verdict on a lab 14 load run, in Jepsen's words, from the lab's one
//! reader of its state: the three files on SQLite; on the servers the SQLite copies `settle`
//! made of the final rows (or the audit's copies of those).
//!
//! Each of the N messages is one operation: `ok` once its contract and Outbox row are
//! durable in the sender (the sender's commit returned), `info` if it never got there. Its
//! deliveries are what the transport delivered of it (its rows in the SQL queue; the
//! deliveries its receipts count); its effects are its contract's credits in the ledger. An
//! unapplied `ok` message is `lost-write` or `unseen`; two effects are a `duplicate`; a
//! redelivery absorbed by the Inbox is a `duplicate-delivery`, the one anomaly the design
//! allows.
//!
//! The consumers' `applied` events are written only after the commit that made the effect
//! durable. On SQLite they count as effects where they say more than the ledger; on the
//! servers an `applied` event beyond the ledger is an acknowledged commit the server lost
//! (async-commit under a server kill): a problem, and, with no credit left, a lost effect.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::super::open::{read_files, read_settled};
use super::super::stack::Stack;
use super::super::state::State;
use crate::engine::jepsen::{self, Anomaly, Op, Outcome};
use crate::engine::load::profile::{Shape, Verdict};
use crate::events::Event;

/// The anomalies lab 14's design allows: the Inbox absorbs a redelivery.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// Problems listed per kind before the rest are counted only.
const PROBLEMS_MAX: usize = 5;

/// The lab's counts (chaos.json `check`); the broker's alone where its stack has them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub contracts: i64,
    pub inbox: i64,
    pub ledger: i64,
    pub ledger_expected: i64,
    pub outbox_pending: i64,
    /// Deliveries left pending in the SQL queue, or messages left ready in the broker's.
    pub queue_pending: i64,
    /// Publishes a consumer handled (one receipt each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publishes: Option<i64>,
    /// Deliveries handled in all: the queue's rows, or the receipts' counts.
    pub physical_deliveries: i64,
    /// Deliveries beyond the first of their message (re-sends and redeliveries).
    pub duplicate_deliveries: i64,
    /// Receipts whose last delivery came flagged `redelivered` by the broker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redelivered: Option<i64>,
    /// Deliveries that applied nothing: their message was already in the Inbox.
    pub duplicates_suppressed: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<i64>,
    pub lost_effects: i64,
    pub duplicated_effects: i64,
    /// Contracts whose balance is not their amount times their credits.
    pub wrong_balances: i64,
    /// What the consumers' events say: effects applied, redeliveries absorbed, refusals.
    pub applied_events: i64,
    pub duplicate_events: i64,
    pub rejected_events: i64,
    pub problems: Vec<String>,
}

/// The consumers' events, per message: (applied, absorbed as duplicates, rejected).
fn by_message(events: &[Event]) -> BTreeMap<&str, (u32, u32, u32)> {
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

/// The state of the run in `work`, as its stack keeps it at the end.
fn state(stack: Stack, work: &Path) -> Result<State> {
    let s = stack.stores();
    match stack {
        Stack::Sqlite => {
            let [a, b, c] = [s.sender, s.queue, s.receiver].map(|n| work.join(n));
            read_files([&a, &b, &c], false, true)
        }
        Stack::Servers => read_settled(work, [s.sender, s.queue, s.receiver]),
    }
}

/// The transport's counts: what reached the consumers, and what is left.
fn transport(stack: Stack, o: &State, c: &mut Check) {
    let count = |n: usize| n as i64;
    let distinct = |messages: Vec<&str>| count(messages.into_iter().collect::<BTreeSet<_>>().len());
    match stack {
        Stack::Sqlite => {
            let acked = o.deliveries.iter().filter(|d| d.status == "acked").count();
            c.physical_deliveries = count(o.deliveries.len());
            c.duplicate_deliveries = c.physical_deliveries
                - distinct(o.deliveries.iter().map(|d| d.message.as_str()).collect());
            c.duplicates_suppressed = count(acked) - c.inbox;
        }
        Stack::Servers => {
            let rejected = count(
                o.receipts
                    .iter()
                    .filter(|r| r.outcome == "rejected")
                    .count(),
            );
            c.publishes = Some(count(o.receipts.len()));
            c.physical_deliveries = o.receipts.iter().map(|r| r.handled).sum();
            c.duplicate_deliveries = c.physical_deliveries
                - distinct(o.receipts.iter().map(|r| r.message.as_str()).collect());
            c.redelivered = Some(count(o.receipts.iter().filter(|r| r.redelivered).count()));
            c.duplicates_suppressed = c.physical_deliveries - c.inbox - rejected;
            c.rejected = Some(rejected);
        }
    }
}

/// Check the state in `work` after a run of `shape`, given its processes' events.
pub fn check(stack: Stack, work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
    let o = state(stack, work)?;
    let seen = by_message(events);
    let amounts = crate::rng::amounts(shape.seed, shape.messages);
    let mut c = Check {
        contracts: o.contracts.len() as i64,
        inbox: o.inbox.len() as i64,
        ledger: o.ledger_total(),
        ledger_expected: amounts.iter().sum(),
        outbox_pending: o.outbox_pending() as i64,
        queue_pending: o.queue_pending(stack),
        ..Check::default()
    };
    transport(stack, &o, &mut c);
    for (applied, duplicate, rejected) in seen.values() {
        c.applied_events += i64::from(*applied);
        c.duplicate_events += i64::from(*duplicate);
        c.rejected_events += i64::from(*rejected);
    }
    let written: BTreeSet<&str> = o.contracts.iter().map(|(id, _)| id.as_str()).collect();
    let ledger: BTreeMap<&str, (i64, i64)> = o
        .ledger
        .iter()
        .map(|(id, balance, credits)| (id.as_str(), (*balance, *credits)))
        .collect();
    let lost_commit = match stack {
        Stack::Sqlite => "",
        Stack::Servers => " (an acknowledged commit lost)",
    };
    let delivered = o.deliveries();
    let mut event_problems = Vec::new();
    let mut history = Vec::with_capacity(amounts.len());
    for (i, amount) in amounts.iter().enumerate() {
        let (contract, message) = (format!("C{:06}", i + 1), format!("M{:06}", i + 1));
        let (balance, credits) = ledger.get(contract.as_str()).copied().unwrap_or((0, 0));
        let (applied, _, rejected) = seen.get(message.as_str()).copied().unwrap_or_default();
        if i64::from(applied) > credits {
            event_problems.push(format!(
                "{message}: {applied} applied events, yet {credits} credits in the ledger{lost_commit}"
            ));
        }
        if rejected > 0 {
            event_problems.push(format!("{message}: rejected {rejected} times"));
        }
        let effects = match stack {
            Stack::Sqlite => credits.max(i64::from(applied)),
            Stack::Servers => credits,
        };
        match effects {
            0 => c.lost_effects += 1,
            n => {
                c.duplicated_effects += n - 1;
                if balance != amount * credits {
                    c.wrong_balances += 1;
                }
            }
        }
        let deliveries = delivered.get(message.as_str()).copied().unwrap_or(0);
        history.push(Op {
            item: message,
            outcome: if written.contains(contract.as_str()) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: u32::try_from(deliveries).unwrap_or(u32::MAX),
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
    c.problems.extend(findings.bad_lines(3 * PROBLEMS_MAX));
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
