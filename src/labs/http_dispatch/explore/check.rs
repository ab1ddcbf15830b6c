//! Lab 13's end-to-end judgement of one explore case: the invariants on the four files after
//! recovery, the commits the processes reported (their `commit` events) checked against the
//! files, and the history of keys in Jepsen's terms.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::events::Event;

use super::visible::visible;
use crate::labs::http_dispatch::readback::State;

/// What the modes tolerate: a request may reach the receiver more than once (a resend after
/// a lost reply); the key, where there is one, must absorb it.
pub const ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// The counts of a case, in the order of the table's columns.
pub const COUNTS: &[&str] = &[
    "intents",
    "attempts",
    "effects",
    "receipts",
    "history",
    "replays",
    "resends",
    "lost_effects",
    "duplicated_effects",
    "acknowledged_commits",
];

/// The history: one operation per intent, in the order of the intent log. `info` when the
/// intent is held `unknown` or no `commit` event of the intents file names its key, else
/// `ok`; its deliveries are the requests the receivers answered for the key (their
/// `applied`, `duplicate` and `rejected` events), its effects the receiver's rows with the
/// key. An effect whose key is no intent is a `fail` operation with an effect (G1a).
pub fn history(o: &State, steps: &[StepRecord]) -> Vec<Op> {
    let acked = |key: &str| {
        steps.iter().flat_map(|s| s.commits()).any(|(db, what)| {
            db == "intents"
                && what.starts_with("intent ")
                && what.split_whitespace().any(|w| w == key)
        })
    };
    let delivered = |key: &str| {
        steps
            .iter()
            .flat_map(|s| &s.events)
            .filter(|e| match e {
                Event::Applied { item } | Event::Duplicate { item } => item == key,
                Event::Rejected { item, .. } => item == key,
                _ => false,
            })
            .count() as u32
    };
    let mut ops: Vec<Op> = o
        .intents
        .iter()
        .map(|(_, key, status)| Op {
            item: key.clone(),
            outcome: if status != "unknown" && acked(key) {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            deliveries: delivered(key),
            effects: o.effects_of(key) as u32,
        })
        .collect();
    let keys: BTreeSet<&str> = o.intents.iter().map(|(_, k, _)| k.as_str()).collect();
    for (id, key) in &o.effects {
        if !key.as_deref().is_some_and(|k| keys.contains(k)) {
            ops.push(Op {
                item: key.clone().unwrap_or_else(|| format!("effect {id}")),
                outcome: Outcome::Fail,
                deliveries: 1,
                effects: 1,
            });
        }
    }
    ops
}

/// Judge the files after recovery against every process's events.
pub fn judge(o: &State, steps: &[StepRecord]) -> Judgement {
    let mut j = Judgement {
        allowed: ALLOWED,
        ..Judgement::default()
    };
    let mut counts: BTreeMap<&'static str, i64> = BTreeMap::new();
    let keys: BTreeSet<&str> = o.intents.iter().map(|(_, k, _)| k.as_str()).collect();
    for (_, key, status) in &o.intents {
        let n = o.effects_of(key);
        if n == 0 && status != "unknown" {
            *counts.entry("lost_effects").or_default() += 1;
            j.problems.push(format!(
                "lost effect: intent {key} committed, no effect at the receiver"
            ));
        }
        if n > 1 {
            *counts.entry("duplicated_effects").or_default() += n - 1;
            j.problems.push(format!(
                "duplicate effect: intent {key} ran {n} times at the receiver"
            ));
        }
    }
    for (id, key) in &o.effects {
        if !key.as_deref().is_some_and(|k| keys.contains(k)) {
            *counts.entry("duplicated_effects").or_default() += 1;
            j.problems.push(format!(
                "effect without cause: effect {id} (key {}) matches no intent",
                key.as_deref().unwrap_or("-")
            ));
        }
    }
    let count = |counts: &BTreeMap<&str, i64>, k: &str| counts.get(k).copied().unwrap_or(0);
    j.no_lost_effect = count(&counts, "lost_effects") == 0;
    j.no_duplicate_effect = count(&counts, "duplicated_effects") == 0;
    let (owed, history_owed) = (o.owed(), o.history_owed());
    j.nothing_stuck = owed.is_empty() && history_owed.is_empty();
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck after recovery: intents without a receipt {owed:?}, receipts without history {history_owed:?}"
        ));
    }
    let attempted: BTreeSet<&str> = o.attempts.iter().map(|(_, k)| k.as_str()).collect();
    counts.insert("intents", o.intents.len() as i64);
    counts.insert("attempts", o.attempts.len() as i64);
    counts.insert("effects", o.effects.len() as i64);
    counts.insert("receipts", o.receipts.len() as i64);
    counts.insert("history", o.history.len() as i64);
    counts.insert(
        "replays",
        o.receipts.iter().filter(|(_, r)| *r).count() as i64,
    );
    // An attempt beyond a key's first is a resend of an attempt without a receipt.
    counts.insert("resends", (o.attempts.len() - attempted.len()) as i64);
    j.acknowledged_durable = true;
    for step in steps {
        for (db, what) in step.commits() {
            *counts.entry("acknowledged_commits").or_default() += 1;
            let rest = format!("{db} {what}");
            if let Err(why) = visible(o, &rest) {
                j.acknowledged_durable = false;
                j.problems.push(format!(
                    "acknowledged, not durable: {} committed '{rest}': {why}",
                    step.name
                ));
            }
        }
    }
    j.counts = Counts(COUNTS.iter().map(|k| (*k, count(&counts, k))).collect());
    j.history = history(o, steps);
    j
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn observed() -> State {
        State {
            intents: vec![(1, "K1".into(), "pending".into())],
            attempts: vec![(1, "K1".into())],
            receipts: vec![("K1".into(), false)],
            history: vec!["K1".into()],
            effects: vec![(1, Some("K1".into()))],
            ..State::default()
        }
    }

    #[test]
    fn a_second_effect_is_a_duplicate_and_a_missing_receipt_is_stuck() {
        let mut o = observed();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        o.effects.push((2, Some("K1".into())));
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && !j.no_duplicate_effect);
        assert_eq!(j.counts.get("duplicated_effects"), 1);
        o.receipts.clear();
        o.effects.clear();
        let j = judge(&o, &[]);
        assert!(!j.no_lost_effect && !j.nothing_stuck);
        // Held unknown: neither lost nor stuck, left for reconciliation.
        o.intents[0].2 = "unknown".into();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.nothing_stuck);
    }
}
