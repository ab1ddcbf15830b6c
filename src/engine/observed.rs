//! A scenario in Jepsen's words. The lab turns what one scenario observed (each step's events
//! and readback) into a history of operations and says which anomalies its design allows and
//! which the scenario expects (a scenario that shows a broken design on purpose expects its
//! anomaly); `engine::jepsen::check` finds the anomalies. The driver writes the findings into
//! results.json and the audit derives them again from the raw files.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::jepsen::{self, Anomaly, Found, Op, Outcome};
use crate::engine::LabStack;
use crate::events::Event;

/// One step of a scenario as it ran: its phase, its events, its readback (a readback step).
pub struct Seen<'a> {
    pub step: &'a str,
    pub phase: &'a str,
    pub events: &'a [Event],
    pub readback: Option<&'a Value>,
}

impl<'a> Seen<'a> {
    /// A step named as its phase, without a readback (what a lab's history tests feed it).
    pub fn of(phase: &'a str, events: &'a [Event]) -> Seen<'a> {
        Seen {
            step: phase,
            phase,
            events,
            readback: None,
        }
    }
}

/// What a lab makes of one scenario's steps.
pub struct History {
    pub ops: Vec<Op>,
    /// Anomalies the design tolerates (an Inbox absorbs a duplicate delivery).
    pub allowed: Vec<Anomaly>,
    /// Bad anomalies this scenario shows on purpose (a design without keys runs twice).
    pub expected: Vec<Anomaly>,
}

impl History {
    /// A history whose design tolerates a redelivery (`duplicate-delivery`: a key or an
    /// insert by id absorbs it), the scenario showing `expected` on purpose.
    pub fn redelivery_allowed(ops: Vec<Op>, expected: &[Anomaly]) -> History {
        History {
            ops,
            allowed: vec![Anomaly::DuplicateDelivery],
            expected: expected.to_vec(),
        }
    }
}

/// One scenario's findings, as results.json records them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFindings {
    pub scenario: String,
    /// The bad anomalies are exactly the expected ones (none, for a correct design).
    pub ok: bool,
    /// `ok`, `fail` or `info` per item.
    pub operations: Vec<(String, Outcome)>,
    pub anomalies: Vec<Found>,
    pub bad_anomalies: Vec<Found>,
    pub expected_anomalies: Vec<Anomaly>,
    /// `duplicate-delivery x1 (allowed)`: for the table.
    pub summary: String,
}

/// The findings of one scenario, when the lab gives it a history.
pub fn judge(lab: &LabStack, scenario: &str, steps: &[Seen<'_>]) -> Option<ScenarioFindings> {
    let history = (lab.history)(scenario, steps)?;
    let findings = jepsen::check(&history.ops, &history.allowed);
    let mut bad: Vec<Anomaly> = findings.bad_anomalies.iter().map(|f| f.anomaly).collect();
    bad.sort();
    bad.dedup();
    let mut expected = history.expected.clone();
    expected.sort();
    expected.dedup();
    Some(ScenarioFindings {
        scenario: scenario.to_string(),
        ok: bad == expected,
        summary: findings.summary(),
        operations: findings.operations,
        anomalies: findings.anomalies,
        bad_anomalies: findings.bad_anomalies,
        expected_anomalies: expected,
    })
}

/// The `message X` / `key X` item a commit or claim names (the word after `word`).
pub fn named(what: &str, word: &str) -> Option<String> {
    let mut words = what.split_whitespace();
    while let Some(w) = words.next() {
        if w == word {
            return words
                .next()
                .map(|id| id.trim_matches(|c: char| !c.is_alphanumeric() && c != '-'))
                .map(str::to_string);
        }
    }
    None
}

/// Every event of the steps of `phase`.
pub fn events_of<'a>(steps: &'a [Seen<'a>], phase: &'a str) -> impl Iterator<Item = &'a Event> {
    steps
        .iter()
        .filter(move |s| s.phase == phase)
        .flat_map(|s| s.events.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_the_words_after_their_name() {
        assert_eq!(
            named("claim of delivery 2 message M1 by c1", "message").as_deref(),
            Some("M1")
        );
        assert_eq!(named("effect 1 key K1", "key").as_deref(), Some("K1"));
        assert_eq!(named("effect 1 key -", "key").as_deref(), Some("-"));
        assert_eq!(named("effect 1", "key"), None);
    }
}
