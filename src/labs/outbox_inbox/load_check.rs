//! The end-to-end verdict on a lab 14 load run, in Jepsen's words.
//!
//! Each of the N messages is one operation: `ok` once its contract and Outbox row are
//! durable in the sender (the sender's commit returned), `info` if it never got there. Its
//! deliveries are its rows in the queue; its effects are its contract's credits in the
//! ledger, or the consumers' `applied` events for it where those say more (an event is
//! written only after the commit that made the effect durable). An unapplied `ok` message is
//! `lost-write` or `unseen`; two effects are a `duplicate`; a redelivery absorbed by the
//! Inbox is a `duplicate-delivery`, the one anomaly the design allows.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::readback::{self, Paths, State};
use super::roles::FILES;
use super::schema::QUEUE;
use crate::engine::jepsen::{self, Anomaly, Op, Outcome};
use crate::engine::load::profile::{Shape, Verdict};
use crate::events::Event;
use crate::store;

/// The anomalies lab 14's design allows: the Inbox absorbs a redelivery.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// Problems listed per kind of event before the rest are counted only.
const EVENT_PROBLEMS_MAX: usize = 5;

/// The lab's counts (chaos.json `check`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub contracts: i64,
    pub inbox: i64,
    pub ledger: i64,
    pub ledger_expected: i64,
    pub outbox_pending: i64,
    pub queue_pending: i64,
    pub physical_deliveries: i64,
    /// Deliveries beyond the first of their message (publisher re-sends).
    pub duplicate_deliveries: i64,
    /// Acked deliveries that applied nothing: their message was already in the Inbox.
    pub duplicates_suppressed: i64,
    pub lost_effects: i64,
    pub duplicated_effects: i64,
    /// Contracts whose balance differs from their amount (a wrong effect, neither lost nor doubled).
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

/// Rows per message in the queue.
fn deliveries(queue: &Path) -> Result<BTreeMap<String, u32>> {
    let Some(q) = store::open_existing(queue, &QUEUE, false)? else {
        return Ok(BTreeMap::new());
    };
    let shown = queue.display().to_string();
    let explain = |e| store::explain(e, "queue", &shown);
    let mut stmt = q
        .conn
        .prepare("SELECT message_id, count(*) FROM deliveries GROUP BY message_id")
        .map_err(explain)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(explain);
    rows
}

/// Check the files in `work` after a run of `shape`, given its processes' events.
pub fn check(work: &Path, shape: &Shape, events: &[Event]) -> Result<Verdict> {
    let (sender, queue, receiver) = (
        work.join(FILES.sender),
        work.join(FILES.queue),
        work.join(FILES.receiver),
    );
    let paths = Paths {
        sender: &sender,
        queue: &queue,
        receiver: &receiver,
    };
    let state: State = readback::read(&paths, false)?;
    let detail = readback::detail(&paths)?;
    let delivered = deliveries(&queue)?;
    let seen = by_message(events);
    let amounts = crate::rng::amounts(shape.seed, shape.messages);
    let mut c = Check {
        contracts: state.sender.contracts,
        inbox: state.receiver.inbox,
        ledger: state.receiver.ledger,
        ledger_expected: amounts.iter().sum(),
        outbox_pending: state.sender.outbox_pending,
        queue_pending: state.queue.pending,
        physical_deliveries: state.queue.deliveries,
        duplicate_deliveries: detail.duplicates_in_queue,
        duplicates_suppressed: state.queue.acked - state.receiver.inbox,
        ..Check::default()
    };
    for (applied, duplicate, rejected) in seen.values() {
        c.applied_events += i64::from(*applied);
        c.duplicate_events += i64::from(*duplicate);
        c.rejected_events += i64::from(*rejected);
    }
    let written: std::collections::BTreeSet<&str> =
        detail.contracts.iter().map(|(id, _)| id.as_str()).collect();
    let ledger: BTreeMap<&str, (i64, i64)> = detail
        .ledger
        .iter()
        .map(|(id, balance, credits)| (id.as_str(), (*balance, *credits)))
        .collect();
    let mut event_problems = Vec::new();
    let mut history = Vec::with_capacity(amounts.len());
    for (i, amount) in amounts.iter().enumerate() {
        let (contract, message) = (format!("C{:06}", i + 1), format!("M{:06}", i + 1));
        let (balance, credits) = ledger.get(contract.as_str()).copied().unwrap_or((0, 0));
        let (applied, _, rejected) = seen.get(message.as_str()).copied().unwrap_or_default();
        if i64::from(applied) > credits {
            event_problems.push(format!(
                "{message}: {applied} applied events, yet {credits} credits in the ledger"
            ));
        }
        if rejected > 0 {
            event_problems.push(format!("{message}: rejected {rejected} times"));
        }
        let effects = credits.max(i64::from(applied));
        match effects {
            0 => c.lost_effects += 1,
            n => {
                c.duplicated_effects += n - 1;
                if balance != amount * credits {
                    c.wrong_balances += 1;
                }
            }
        }
        history.push(Op {
            item: message.clone(),
            outcome: if written.contains(contract.as_str()) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: delivered.get(&message).copied().unwrap_or(0),
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
    let more = event_problems.len().saturating_sub(EVENT_PROBLEMS_MAX);
    c.problems
        .extend(event_problems.into_iter().take(EVENT_PROBLEMS_MAX));
    if more > 0 {
        c.problems.push(format!("and {more} more event problems"));
    }
    let findings = jepsen::check(&history, ALLOWED);
    for found in &findings.bad_anomalies {
        c.problems.push(format!(
            "{} {}: {}",
            found.anomaly.name(),
            found.item,
            found.detail
        ));
        if c.problems.len() > 3 * EVENT_PROBLEMS_MAX {
            break;
        }
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
mod tests {
    use super::*;

    #[test]
    fn events_are_counted_per_message() {
        let events = [
            Event::Applied {
                item: "M000001".into(),
            },
            Event::Duplicate {
                item: "M000001".into(),
            },
            Event::Applied {
                item: "M000002".into(),
            },
            Event::Rejected {
                item: "M000002".into(),
                reason: "payload conflict".into(),
            },
            Event::End { code: 0 },
        ];
        let seen = by_message(&events);
        assert_eq!(seen["M000001"], (1, 1, 0));
        assert_eq!(seen["M000002"], (1, 0, 1));
        assert_eq!(seen.len(), 2);
    }
}
