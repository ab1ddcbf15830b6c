//! What a lab gives `explore`: its designs, what each predicts, the steps of a case, and how
//! its files are judged. The engine owns everything else (the probes, the cases over points ×
//! hits × designs, the processes, recovery to quiescence, the verdict and the exporters), so a
//! lab's plan is data and a few functions, and the engine never asks which lab it runs.

use anyhow::Result;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::steps::Steps;
use crate::engine::jepsen::{Anomaly, Op};

/// Where a prediction says a design breaks: a point, at some of its hits.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct At {
    pub point: &'static str,
    /// The hits `@N` where it breaks; empty: every hit the probe reaches.
    pub hits: &'static [u32],
}

impl At {
    /// The point at these hits only.
    pub const fn of(point: &'static str, hits: &'static [u32]) -> At {
        At { point, hits }
    }

    /// Every hit of the point, whatever the probe counts.
    pub const fn every(point: &'static str) -> At {
        At { point, hits: &[] }
    }

    pub fn covers(&self, point: &str, hit: u32) -> bool {
        self.point == point && (self.hits.is_empty() || self.hits.contains(&hit))
    }
}

/// What a design predicts: it breaks exactly at `at` (and nowhere else), exactly these
/// invariants, with exactly these kinds of bad anomalies.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Prediction {
    pub variant: &'static str,
    pub at: &'static [At],
    pub invariants: &'static [Invariant],
    pub anomalies: &'static [Anomaly],
    /// The design's words for the break.
    pub says: &'static str,
    /// Why hits of a predicted point that are not listed hold (a redelivery hides the
    /// break); empty when every prediction covers every hit.
    pub hidden: &'static str,
}

impl Prediction {
    pub fn covers(&self, point: &str, hit: u32) -> bool {
        self.at.iter().any(|a| a.covers(point, hit))
    }

    /// Whether the prediction names the point at all (the table's `*`).
    pub fn names(&self, point: &str) -> bool {
        self.at.iter().any(|a| a.point == point)
    }
}

/// A case's counts, named and in the lab's order (`explore.json` shows them as an object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub Vec<(&'static str, i64)>);

impl Counts {
    pub fn get(&self, key: &str) -> i64 {
        self.0
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    }

    /// Add to a count, making it at its place in the order of first use.
    pub fn add(&mut self, key: &'static str, n: i64) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v += n,
            None => self.0.push((key, n)),
        }
    }
}

/// Read back in its order (`merge`): the keys borrow from a document that lives for the
/// rest of the process.
impl<'de: 'static> serde::Deserialize<'de> for Counts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de: 'static> serde::de::Visitor<'de> for Ordered {
            type Value = Counts;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of counts")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Counts, M::Error> {
                let mut counts = Counts::default();
                while let Some((k, v)) = map.next_entry::<&'static str, i64>()? {
                    counts.add(k, v);
                }
                Ok(counts)
            }
        }
        deserializer.deserialize_map(Ordered)
    }
}

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A lab's judgement of one case: the four file invariants (the engine judges `reached`),
/// the history in Jepsen's terms, the counts, and why each broken invariant broke.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    pub no_lost_effect: bool,
    pub no_duplicate_effect: bool,
    pub nothing_stuck: bool,
    pub acknowledged_durable: bool,
    pub counts: Counts,
    /// One operation per business item (lab 14: a message; lab 13: a key), in
    /// acknowledgement order.
    pub history: Vec<Op>,
    /// The anomalies the lab's designs tolerate (a redelivery the Inbox or the key absorbs).
    pub allowed: &'static [Anomaly],
    pub problems: Vec<String>,
}

/// The words the exporters use that differ from lab to lab.
#[derive(Debug)]
pub struct Words {
    /// The count columns: (key in `Counts`, title).
    pub columns: &'static [(&'static str, &'static str)],
    /// The table's legend under the blocks.
    pub legend: &'static str,
    /// The verdict line of a passing run (table and markdown; the picture's own below).
    pub pass: &'static str,
    pub svg_pass: &'static str,
}

/// A lab's explore plan. `Sync`: cases run on several threads.
pub trait ExplorePlan: Sync {
    /// Every design, the correct one first.
    fn designs(&self) -> &'static [&'static str];
    fn predictions(&self) -> &'static [Prediction];
    fn words(&self) -> &'static Words;
    /// The database files of a case's work directory, relative.
    fn databases(&self) -> &'static [&'static str];
    /// Run the scenario of one case of `design`. The engine arms the case's crash in the
    /// first step whose role is the point's phase (`consumer` for `consumer.after-ack`).
    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()>;
    /// One round of recovery (`round` from 1): run what the files say is still owed, the
    /// same code, no crash. False when nothing was owed (the case is quiescent).
    fn recover(&self, design: &'static str, round: u32, steps: &mut Steps<'_>) -> Result<bool>;
    /// Read the files after recovery (`steps.work()`, or the lab's `memo` of them) and judge
    /// them against what the processes said (`steps.records()`).
    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement>;
    /// Under power loss, where each store profile under each cut style breaks (variant
    /// `<profile>/<cut>`); none: every profile is predicted to hold.
    fn power_predictions(&self) -> &'static [Prediction] {
        &[]
    }
    /// Under server kills (a lab on servers, `--crash-mode server-kill --server S`): where
    /// each design breaks, variant `<design>/<server>` (`async-commit/postgres`); a design
    /// with none for S is predicted to hold.
    fn server_predictions(&self) -> &'static [Prediction] {
        &[]
    }
    /// Whether its cases must run one at a time (a lab on servers whose cases see each
    /// other on one server: a cluster-wide snapshot horizon).
    fn serial(&self) -> bool {
        false
    }
    /// Whether `design` breaks without any crash (a stall: its break is no crash window),
    /// so its run without a crash must break as its predictions say instead of holding.
    fn breaks_without_crash(&self, _design: &'static str) -> bool {
        false
    }
}
