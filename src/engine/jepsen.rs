//! One checker vocabulary for every lab, in Jepsen's words.
//!
//! A lab reduces what it observed to a history: for each business item (lab 14: a message;
//! lab 13: an idempotency key) the outcome of the operation that sent it and how often it was
//! delivered and applied. This module turns that history into anomalies, and the lab says
//! which anomalies its design allows; every other one is bad.
//!
//! - an operation is `ok` (the sender was told it is durable), `fail` (it was refused or
//!   rolled back) or `info` (the outcome is unknown: the sender crashed or timed out);
//! - `lost-write`: an `ok` item never applied while an item acknowledged after it was; or an
//!   acknowledged commit the files no longer hold (a cut or a server kill rolled it back:
//!   the process was told it committed, and the data is gone);
//! - `unseen`: an `ok` item never applied by the end (and nothing later was either);
//! - `duplicate`: one item applied more than once (an effect duplicate), or delivered more
//!   than once (a delivery duplicate, which an Inbox or a key may absorb);
//! - `G1a`: an effect of an item whose operation failed (an aborted write was read);
//! - `recovered`: an `info` item that turned out applied (reported, never bad).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The outcome of one operation, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Ok,
    Fail,
    Info,
}

/// The anomalies a checker may find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Anomaly {
    #[serde(rename = "lost-write")]
    LostWrite,
    #[serde(rename = "unseen")]
    Unseen,
    /// One item applied more than once.
    #[serde(rename = "duplicate")]
    Duplicate,
    /// One item delivered more than once (absorbed or not is the `duplicate` question).
    #[serde(rename = "duplicate-delivery")]
    DuplicateDelivery,
    #[serde(rename = "G1a")]
    G1a,
    #[serde(rename = "recovered")]
    Recovered,
}

impl Anomaly {
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::LostWrite => "lost-write",
            Anomaly::Unseen => "unseen",
            Anomaly::Duplicate => "duplicate",
            Anomaly::DuplicateDelivery => "duplicate-delivery",
            Anomaly::G1a => "G1a",
            Anomaly::Recovered => "recovered",
        }
    }

    /// `recovered` is information about an unknown outcome, never a violation.
    pub fn always_allowed(self) -> bool {
        matches!(self, Anomaly::Recovered)
    }
}

/// One item of the history: its operation's outcome, in acknowledgement order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub item: String,
    pub outcome: Outcome,
    /// Deliveries of the item to the receiving side (0 where a lab has no transport).
    pub deliveries: u32,
    /// Effects of the item that the receiving side made durable.
    pub effects: u32,
}

/// One anomaly found, with the item it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    pub anomaly: Anomaly,
    pub item: String,
    pub detail: String,
}

/// The checker's answer: every anomaly, and those the design does not allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Findings {
    /// `ok`, `fail` or `info` per item, in history order.
    pub operations: Vec<(String, Outcome)>,
    pub anomalies: Vec<Found>,
    pub bad_anomalies: Vec<Found>,
}

impl Findings {
    /// The bad anomalies as problem lines (`unseen M7: …`), at most `max` of them, then one
    /// `and N more bad anomalies` line for the rest.
    pub fn bad_lines(&self, max: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .bad_anomalies
            .iter()
            .take(max)
            .map(|f| format!("{} {}: {}", f.anomaly.name(), f.item, f.detail))
            .collect();
        let more = self.bad_anomalies.len().saturating_sub(max);
        if more > 0 {
            lines.push(format!("and {more} more bad anomalies"));
        }
        lines
    }

    pub fn valid(&self) -> bool {
        self.bad_anomalies.is_empty()
    }

    /// `duplicate-delivery ×1 (allowed)`: for tables; `none` when the history is clean.
    pub fn summary(&self) -> String {
        let mut counts: BTreeMap<Anomaly, (usize, usize)> = BTreeMap::new();
        for f in &self.anomalies {
            counts.entry(f.anomaly).or_default().0 += 1;
        }
        for f in &self.bad_anomalies {
            counts.entry(f.anomaly).or_default().1 += 1;
        }
        if counts.is_empty() {
            return "none".to_string();
        }
        counts
            .iter()
            .map(|(a, (all, bad))| match bad {
                0 => format!("{} x{all} (allowed)", a.name()),
                _ => format!("{} x{all}", a.name()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Check a history. `allowed` lists the anomalies the design tolerates (lab 14's Inbox
/// absorbs a duplicate delivery); `recovered` is always allowed.
pub fn check(history: &[Op], allowed: &[Anomaly]) -> Findings {
    let mut anomalies = Vec::new();
    // The last acknowledged item that was applied: an unapplied `ok` item before it is lost.
    let last_applied_ok = history
        .iter()
        .rposition(|op| op.outcome == Outcome::Ok && op.effects > 0);
    for (index, op) in history.iter().enumerate() {
        let mut found = |anomaly: Anomaly, detail: String| {
            anomalies.push(Found {
                anomaly,
                item: op.item.clone(),
                detail,
            })
        };
        match (op.outcome, op.effects) {
            (Outcome::Ok, 0) => match last_applied_ok {
                Some(later) if later > index => found(
                    Anomaly::LostWrite,
                    format!(
                        "acknowledged, never applied, while {} (acknowledged after it) was",
                        history[later].item
                    ),
                ),
                _ => found(
                    Anomaly::Unseen,
                    "acknowledged, never applied by the end".into(),
                ),
            },
            (Outcome::Fail, n) if n > 0 => {
                found(Anomaly::G1a, format!("its send failed, yet {n} effect(s)"))
            }
            (Outcome::Info, n) if n > 0 => found(
                Anomaly::Recovered,
                "outcome unknown to the sender, later applied".into(),
            ),
            _ => {}
        }
        if op.effects > 1 {
            found(
                Anomaly::Duplicate,
                format!("{} effects of one item", op.effects),
            );
        }
        if op.deliveries > 1 {
            found(
                Anomaly::DuplicateDelivery,
                format!("delivered {} times", op.deliveries),
            );
        }
    }
    let bad_anomalies = anomalies
        .iter()
        .filter(|f| !f.anomaly.always_allowed() && !allowed.contains(&f.anomaly))
        .cloned()
        .collect();
    Findings {
        operations: history
            .iter()
            .map(|op| (op.item.clone(), op.outcome))
            .collect(),
        anomalies,
        bad_anomalies,
    }
}

/// Every acknowledged commit the files no longer hold is a `lost-write` of that commit: its
/// process was told it was durable, and the data is gone. `lost`: (the commit, why it is
/// counted lost); bad unless the design allows it.
pub fn lost_commits(findings: &mut Findings, lost: Vec<(String, String)>, allowed: &[Anomaly]) {
    for (item, detail) in lost {
        let found = Found {
            anomaly: Anomaly::LostWrite,
            item,
            detail,
        };
        if !allowed.contains(&Anomaly::LostWrite) {
            findings.bad_anomalies.push(found.clone());
        }
        findings.anomalies.push(found);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bad_anomalies_past_the_bound_are_counted_not_dropped() {
        let ops: Vec<super::Op> = (1..=20)
            .map(|i| super::Op {
                item: format!("M{i}"),
                outcome: super::Outcome::Ok,
                deliveries: 1,
                effects: 2,
            })
            .collect();
        let findings = super::check(&ops, &[]);
        let lines = findings.bad_lines(15);
        assert_eq!(lines.len(), 16);
        assert!(lines[0].starts_with("duplicate M1: "), "{lines:?}");
        assert_eq!(lines[15], "and 5 more bad anomalies");
        assert_eq!(findings.bad_lines(20).len(), 20);
    }

    use super::*;

    fn op(item: &str, outcome: Outcome, deliveries: u32, effects: u32) -> Op {
        Op {
            item: item.into(),
            outcome,
            deliveries,
            effects,
        }
    }

    fn kinds(found: &[Found]) -> Vec<(Anomaly, &str)> {
        found.iter().map(|f| (f.anomaly, f.item.as_str())).collect()
    }

    #[test]
    fn an_acknowledged_commit_the_files_lost_is_a_lost_write() {
        let mut f = check(&[op("M1", Outcome::Ok, 1, 1)], &[]);
        assert!(f.valid());
        let lost = vec![("queue raw delivery 3".to_string(), "gone".to_string())];
        lost_commits(&mut f, lost, &[]);
        assert_eq!(
            kinds(&f.bad_anomalies),
            [(Anomaly::LostWrite, "queue raw delivery 3")]
        );
        assert_eq!(f.summary(), "lost-write x1");
        assert!(!f.valid());
    }

    #[test]
    fn a_clean_history_has_no_anomaly() {
        let f = check(&[op("M1", Outcome::Ok, 1, 1)], &[]);
        assert!(f.anomalies.is_empty() && f.valid());
        assert_eq!(f.summary(), "none");
    }

    #[test]
    fn an_absorbed_redelivery_is_reported_and_allowed() {
        let f = check(
            &[op("M1", Outcome::Ok, 2, 1)],
            &[Anomaly::DuplicateDelivery],
        );
        assert_eq!(kinds(&f.anomalies), [(Anomaly::DuplicateDelivery, "M1")]);
        assert!(f.valid(), "{f:?}");
        assert_eq!(f.summary(), "duplicate-delivery x1 (allowed)");
        // The same history against a design that allows nothing is invalid.
        assert!(!check(&[op("M1", Outcome::Ok, 2, 1)], &[]).valid());
    }

    #[test]
    fn lost_write_needs_a_later_applied_item_and_unseen_does_not() {
        let h = [
            op("M1", Outcome::Ok, 0, 0),
            op("M2", Outcome::Ok, 1, 1),
            op("M3", Outcome::Ok, 0, 0),
        ];
        let f = check(&h, &[]);
        assert_eq!(
            kinds(&f.bad_anomalies),
            [(Anomaly::LostWrite, "M1"), (Anomaly::Unseen, "M3")]
        );
    }

    #[test]
    fn a_double_effect_is_a_duplicate_a_failed_send_with_effect_is_g1a_info_is_recovered() {
        let h = [
            op("K1", Outcome::Ok, 2, 2),
            op("K2", Outcome::Fail, 1, 1),
            op("K3", Outcome::Info, 1, 1),
            op("K4", Outcome::Info, 0, 0),
            op("K5", Outcome::Fail, 0, 0),
        ];
        let f = check(&h, &[Anomaly::DuplicateDelivery]);
        assert_eq!(
            kinds(&f.anomalies),
            [
                (Anomaly::Duplicate, "K1"),
                (Anomaly::DuplicateDelivery, "K1"),
                (Anomaly::G1a, "K2"),
                (Anomaly::Recovered, "K3"),
            ]
        );
        assert_eq!(
            kinds(&f.bad_anomalies),
            [(Anomaly::Duplicate, "K1"), (Anomaly::G1a, "K2")]
        );
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["bad_anomalies"][1]["anomaly"], "G1a");
        assert_eq!(json["anomalies"][3]["anomaly"], "recovered");
        assert_eq!(json["operations"][2][1], "info");
    }
}
