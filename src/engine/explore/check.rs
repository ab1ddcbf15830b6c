//! The end-to-end invariants of one case, judged on the files after recovery and on what the
//! processes reported (`COMMITTED` lines) before they died.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::explore::state::Observed;

/// The invariants, in the order of the table's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// The process exited as the crash mode says and printed its `CRASH` line.
    Reached,
    /// Every committed contract has its amount in the ledger.
    NoLostEffect,
    /// The ledger holds every committed contract once, and nothing else.
    NoDuplicateEffect,
    /// No pending Outbox row, no pending delivery after recovery.
    NothingStuck,
    /// Every `COMMITTED` line a process printed is visible in the files.
    AcknowledgedDurable,
}

impl Invariant {
    pub const ALL: [Invariant; 5] = [
        Invariant::Reached,
        Invariant::NoLostEffect,
        Invariant::NoDuplicateEffect,
        Invariant::NothingStuck,
        Invariant::AcknowledgedDurable,
    ];

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no_lost_effect",
            Invariant::NoDuplicateEffect => "no_duplicate_effect",
            Invariant::NothingStuck => "nothing_stuck",
            Invariant::AcknowledgedDurable => "acknowledged_durable",
        }
    }

    /// The column title in tables and in the picture.
    pub fn title(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no lost effect",
            Invariant::NoDuplicateEffect => "no duplicate effect",
            Invariant::NothingStuck => "nothing stuck",
            Invariant::AcknowledgedDurable => "ack => durable",
        }
    }

    /// A title narrow enough for the stdout table.
    pub fn short(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no-lost",
            Invariant::NoDuplicateEffect => "no-dup",
            Invariant::NothingStuck => "no-stuck",
            Invariant::AcknowledgedDurable => "ack=>dur",
        }
    }

    /// One letter for the picture's narrow columns.
    pub fn letter(self) -> &'static str {
        match self {
            Invariant::Reached => "R",
            Invariant::NoLostEffect => "L",
            Invariant::NoDuplicateEffect => "D",
            Invariant::NothingStuck => "S",
            Invariant::AcknowledgedDurable => "A",
        }
    }
}

/// What a case counted, end to end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Rows in the queue (the readback's `deliveries`), duplicates included.
    pub deliveries: i64,
    /// Deliveries handed to a consumer (claims committed), redeliveries of a row included.
    pub claims: i64,
    /// Credits in the ledger: business effects applied.
    pub effects_applied: i64,
    /// Deliveries the Inbox (or the memory set) turned away as already applied.
    pub duplicates_suppressed: i64,
    /// Committed contracts with no credit.
    pub lost_effects: i64,
    /// Credits beyond the first, plus credits of contracts never committed.
    pub duplicated_effects: i64,
    /// Committed contracts whose message never reached the queue.
    pub lost_messages: i64,
    /// `COMMITTED` lines checked against the files.
    pub acknowledged_commits: i64,
}

/// A case's counts, as its lab counts them (`explore.json` shows the fields alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CaseCounts {
    Outbox(Counts),
    Dispatch(crate::engine::explore::dispatch::Counts),
}

impl CaseCounts {
    /// The values in the order of the lab's `Words::count_titles`.
    pub fn values(&self) -> Vec<i64> {
        match self {
            CaseCounts::Outbox(c) => vec![
                c.deliveries,
                c.claims,
                c.effects_applied,
                c.duplicates_suppressed,
                c.lost_effects,
                c.duplicated_effects,
                c.lost_messages,
            ],
            CaseCounts::Dispatch(c) => c.values().to_vec(),
        }
    }
}

/// The judgement of the four file invariants (reached is judged by the case runner), with
/// the lab's own counts: lab 14's by default, lab 13's in `explore::dispatch`.
#[derive(Debug, Clone, Default)]
pub struct Judgement<C = Counts> {
    pub no_lost_effect: bool,
    pub no_duplicate_effect: bool,
    pub nothing_stuck: bool,
    pub acknowledged_durable: bool,
    pub counts: C,
    /// Why each broken invariant broke, one line each.
    pub problems: Vec<String>,
}

/// Judge the files after recovery against every process's stdout (step name, text).
pub fn judge(observed: &Observed, stdouts: &[(String, String)]) -> Judgement {
    let mut j = Judgement::<Counts>::default();
    let committed: BTreeMap<&str, i64> = observed
        .contracts
        .iter()
        .map(|(c, a)| (c.as_str(), *a))
        .collect();
    let ledger: BTreeMap<&str, (i64, i64)> = observed
        .ledger
        .iter()
        .map(|(c, b, k)| (c.as_str(), (*b, *k)))
        .collect();

    for (contract, amount) in &committed {
        match ledger.get(contract) {
            Some((_, credits)) if *credits >= 1 => {}
            _ => {
                j.counts.lost_effects += 1;
                j.problems.push(format!(
                    "lost effect: contract {contract} committed with amount {amount}, no credit in the ledger"
                ));
            }
        }
        let message = observed
            .outbox
            .iter()
            .find(|r| r.contract == *contract)
            .map(|r| r.message.as_str());
        let delivered = message.is_some_and(|m| observed.deliveries.iter().any(|d| d.message == m));
        if !delivered {
            j.counts.lost_messages += 1;
            j.problems.push(format!(
                "lost message: message {} of contract {contract} never reached the queue",
                message.unwrap_or("?")
            ));
        }
    }
    for (contract, (balance, credits)) in &ledger {
        j.counts.effects_applied += credits;
        match committed.get(contract) {
            None => {
                j.counts.duplicated_effects += credits;
                j.problems.push(format!(
                    "effect without cause: contract {contract} credited {} ({balance}) but never committed",
                    crate::out::plural(*credits, "time", "times")
                ));
            }
            Some(amount) => {
                if *credits > 1 {
                    j.counts.duplicated_effects += credits - 1;
                    j.problems.push(format!(
                        "duplicate effect: contract {contract} credited {credits} times, balance {balance} for an amount of {amount}"
                    ));
                } else if *credits == 1 && balance != amount {
                    j.counts.duplicated_effects += 1;
                    j.problems.push(format!(
                        "wrong effect: contract {contract} balance {balance}, amount {amount}"
                    ));
                }
            }
        }
    }
    j.no_lost_effect = j.counts.lost_effects == 0;
    j.no_duplicate_effect = j.counts.duplicated_effects == 0;
    if j.no_lost_effect && j.no_duplicate_effect {
        // Once each, nothing else: the ledger is the sum over committed contracts.
        let ledger_total: i64 = ledger.values().map(|(b, _)| b).sum();
        let committed_total: i64 = committed.values().sum();
        assert_eq!(
            ledger_total, committed_total,
            "ledger once per committed contract"
        );
    }

    let (outbox_pending, queue_pending) = (observed.outbox_pending(), observed.queue_pending());
    j.nothing_stuck = outbox_pending == 0 && queue_pending == 0;
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck after recovery: {} and {} still pending",
            crate::out::plural(outbox_pending, "Outbox row", "Outbox rows"),
            crate::out::plural(queue_pending, "delivery", "deliveries")
        ));
    }

    j.counts.deliveries = observed.deliveries.len() as i64;
    j.acknowledged_durable = true;
    for (step, stdout) in stdouts {
        for line in stdout.lines() {
            if line.starts_with("DUPLICATE ") {
                j.counts.duplicates_suppressed += 1;
            }
            let Some(rest) = line.strip_prefix("COMMITTED ") else {
                continue;
            };
            j.counts.acknowledged_commits += 1;
            if rest.starts_with("queue claim of ") {
                let w: Vec<&str> = rest.split_whitespace().collect();
                if let Ok(ids) = ids(&w) {
                    j.counts.claims += ids.count() as i64;
                }
            }
            if let Err(why) = visible(observed, rest) {
                j.acknowledged_durable = false;
                j.problems.push(format!(
                    "acknowledged, not durable: {step} printed '{line}': {why}"
                ));
            }
        }
    }
    j
}

fn word<'a>(words: &[&'a str], at: usize) -> Result<&'a str, String> {
    words
        .get(at)
        .copied()
        .ok_or_else(|| "a line explore cannot parse (an unchecked claim is no pass)".to_string())
}

fn number(text: &str) -> Result<i64, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a number where explore expects one"))
}

/// Whether what a `COMMITTED <db> <what>` line claims is in the files. Every shape the phases
/// print is known here; an unknown shape is an error, never a pass.
pub fn visible(o: &Observed, rest: &str) -> Result<(), String> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let delivery = |id: i64| o.deliveries.iter().find(|d| d.id == id);
    let outbox = |m: &str| o.outbox.iter().find(|r| r.message == m);
    let ok = |holds: bool, missing: String| if holds { Ok(()) } else { Err(missing) };
    match (word(&w, 0)?, word(&w, 1)?) {
        // sender contract C message M amount A
        ("sender", "contract") => {
            let (c, m, a) = (word(&w, 2)?, word(&w, 4)?, number(word(&w, 6)?)?);
            ok(
                o.contracts.iter().any(|(k, v)| k == c && *v == a) && outbox(m).is_some(),
                format!("contract {c} amount {a} with Outbox row {m} not in the sender file"),
            )
        }
        // sender outbox sent for message M | for N messages through M
        ("sender", "outbox") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                outbox(m).is_some_and(|r| r.status == "sent"),
                format!("Outbox row {m} is not marked sent"),
            )
        }
        // sender N contracts through message M
        ("sender", _) => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                outbox(m).is_some(),
                format!("Outbox row {m} not in the sender file"),
            )
        }
        // queue delivery of message M | of N messages through M
        ("queue", "delivery") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                o.deliveries.iter().any(|d| d.message == m),
                format!("no delivery of {m} in the queue"),
            )
        }
        // queue raw delivery ID message M amount A
        ("queue", "raw") => {
            let (id, m) = (number(word(&w, 3)?)?, word(&w, 5)?);
            ok(
                delivery(id).is_some_and(|d| d.message == m),
                format!("no delivery {id} of {m} in the queue"),
            )
        }
        // queue claim of delivery ID message M by C | of N deliveries A..B by C
        ("queue", "claim") => {
            let by = word(&w, w.len().saturating_sub(1))?;
            let ids = ids(&w)?;
            ok(
                ids.clone()
                    .all(|id| delivery(id).is_some_and(|d| d.claimed_by.as_deref() == Some(by))),
                format!("deliveries {ids:?} are not all claimed by {by}"),
            )
        }
        // queue ack of delivery ID message M | of N deliveries A..B
        ("queue", "ack") => {
            let ids = ids(&w)?;
            ok(
                ids.clone()
                    .all(|id| delivery(id).is_some_and(|d| d.status != "pending")),
                format!("deliveries {ids:?} are not all acked or rejected"),
            )
        }
        // receiver inbox and ledger for message M (+A to C)[, M2 (+A2 to C2)…] | N messages
        // receiver ledger for … (memory-inbox, split-inbox-tx: the credit alone)
        ("receiver", "inbox") | ("receiver", "ledger")
            if w[1] == "ledger" || word(&w, 2)? == "and" =>
        {
            let with_inbox = w[1] == "inbox";
            let mut checked = 0;
            for (i, token) in w.iter().enumerate() {
                let Some(amount) = token.strip_prefix("(+") else {
                    continue;
                };
                let m = word(&w, i.wrapping_sub(1))?.trim_end_matches(',');
                let a = number(amount)?;
                let c = word(&w, i + 2)?.trim_end_matches([')', ',']);
                let credited = o.ledger.iter().any(|(k, _, n)| k == c && *n >= 1);
                let inboxed = o
                    .inbox
                    .iter()
                    .any(|r| r.message == m && r.contract == c && r.amount == a);
                if !credited || (with_inbox && !inboxed) {
                    return Err(format!(
                        "the credit of {m} (+{a} to {c}){} is not in the receiver file",
                        if with_inbox { " or its Inbox row" } else { "" }
                    ));
                }
                checked += 1;
            }
            if checked == 0 {
                // `N messages`: at least N credits (and N Inbox rows).
                let n = number(word(&w, w.len().saturating_sub(2))?)?;
                let credits: i64 = o.ledger.iter().map(|(_, _, k)| k).sum();
                return ok(
                    credits >= n && (!with_inbox || o.inbox.len() as i64 >= n),
                    format!("fewer than {n} credits or Inbox rows"),
                );
            }
            Ok(())
        }
        // receiver inbox retention deleted N rows: a deletion, nothing to find.
        ("receiver", "inbox") if word(&w, 2)? == "retention" => Ok(()),
        // receiver inbox of delivery ID message M | of N deliveries A..B (split-inbox-tx)
        ("receiver", "inbox") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            if word(&w, 3)? == "delivery" {
                return ok(
                    o.inbox.iter().any(|r| r.message == m),
                    format!("no Inbox row {m}"),
                );
            }
            let ids = ids(&w)?;
            ok(
                ids.clone().all(|id| {
                    o.deliveries
                        .iter()
                        .find(|d| d.id == id)
                        .is_some_and(|d| o.inbox.iter().any(|r| r.message == d.message))
                }),
                format!("deliveries {ids:?} lack their Inbox rows"),
            )
        }
        _ => Err("a line explore cannot parse (an unchecked claim is no pass)".to_string()),
    }
}

/// The delivery ids of `… delivery ID message M …` or `… N deliveries A..B …`.
fn ids(w: &[&str]) -> Result<std::ops::RangeInclusive<i64>, String> {
    let at = w
        .iter()
        .position(|t| *t == "delivery" || *t == "deliveries")
        .ok_or_else(|| "no delivery id in the line".to_string())?;
    let token = word(w, at + 1)?;
    match token.split_once("..") {
        Some((a, b)) => Ok(number(a)?..=number(b)?),
        None => {
            let id = number(token)?;
            Ok(id..=id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::explore::state::{Delivery, InboxRow, OutboxRow};

    fn observed() -> Observed {
        Observed {
            contracts: vec![("C1".into(), 25)],
            outbox: vec![OutboxRow {
                message: "M1".into(),
                contract: "C1".into(),
                status: "sent".into(),
            }],
            deliveries: vec![Delivery {
                id: 1,
                message: "M1".into(),
                status: "acked".into(),
                claimed_by: Some("c1".into()),
            }],
            inbox: vec![InboxRow {
                message: "M1".into(),
                contract: "C1".into(),
                amount: 25,
            }],
            ledger: vec![("C1".into(), 25, 1)],
        }
    }

    #[test]
    fn every_committed_shape_is_checked() {
        let o = observed();
        for line in [
            "sender contract C1 message M1 amount 25",
            "sender outbox sent for message M1",
            "queue delivery of message M1",
            "queue raw delivery 1 message M1 amount 25",
            "queue claim of delivery 1 message M1 by c1",
            "queue ack of delivery 1 message M1",
            "receiver inbox and ledger for message M1 (+25 to C1)",
            "receiver inbox of delivery 1 message M1",
            "receiver ledger for message M1 (+25 to C1)",
            "receiver inbox and ledger for 1 messages",
        ] {
            assert_eq!(visible(&o, line), Ok(()), "{line}");
        }
        for line in [
            "sender contract C2 message M2 amount 25",
            "queue claim of delivery 1 message M1 by c2",
            "queue ack of delivery 2 message M2",
            "receiver inbox and ledger for message M1 (+26 to C1)",
            "receiver ledger for message M2 (+25 to C2)",
            "receiver inbox and ledger for 4 messages",
            "queue something new",
        ] {
            assert!(visible(&o, line).is_err(), "{line}");
        }
    }

    #[test]
    fn lost_and_duplicate_effects_are_told_apart() {
        let mut o = observed();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        o.ledger = vec![("C1".into(), 50, 2)];
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && !j.no_duplicate_effect);
        assert_eq!(j.counts.duplicated_effects, 1);
        o.ledger.clear();
        let j = judge(&o, &[]);
        assert!(!j.no_lost_effect && j.no_duplicate_effect);
        assert_eq!(j.counts.lost_effects, 1);
    }
}
