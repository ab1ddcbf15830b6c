//! The one verdict rule, for every lab: a design breaks exactly where it predicts and
//! nowhere else. At every judged case, the invariants that break and the kinds of bad
//! anomalies (Jepsen's words) must be exactly those its predictions name for that point and
//! hit; a design without a prediction (the correct one) breaks nowhere. Every predicted
//! point and hit must be explored and reached, except points `--points` leaves out (said in
//! the findings; a design none of whose predicted points is explored is a difference).

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::explore::case::CaseResult;
use crate::engine::explore::invariant::{Invariant, Status};
use crate::engine::explore::plan::Prediction;
use crate::engine::jepsen::Anomaly;

/// What one design's explored cases are compared with.
pub struct Design<'a> {
    pub name: &'static str,
    pub predictions: Vec<&'a Prediction>,
    /// The hits its probe saw, per point.
    pub probe_hits: &'a BTreeMap<String, u32>,
    /// A shard's (`--shard`) cases of the design, (point, hit): a predicted hit in another
    /// shard is that shard's to judge. None: the whole matrix.
    pub shard: Option<&'a BTreeSet<(&'static str, u32)>>,
}

/// The broken invariants and the bad anomaly kinds of one judged case.
fn shown(c: &CaseResult) -> (BTreeSet<Invariant>, BTreeSet<Anomaly>) {
    let inv = Invariant::ALL
        .iter()
        .skip(1)
        .copied()
        .filter(|i| c.invariants.get(*i) == Some(false))
        .collect();
    let anomalies = c.bad_anomalies.iter().map(|f| f.anomaly).collect();
    (inv, anomalies)
}

fn words(inv: &BTreeSet<Invariant>, anomalies: &BTreeSet<Anomaly>) -> String {
    if inv.is_empty() && anomalies.is_empty() {
        return "nothing".to_string();
    }
    let inv: Vec<&str> = inv.iter().map(|i| i.key()).collect();
    let an: Vec<&str> = anomalies.iter().map(|a| a.name()).collect();
    format!(
        "{} (bad anomalies: {})",
        inv.join(", "),
        if an.is_empty() {
            "none".to_string()
        } else {
            an.join(", ")
        }
    )
}

/// Compare the cases with the designs' predictions: the differences (each makes the run
/// exit 1) and the findings (what every design showed, and where).
pub fn verdict(
    designs: &[Design<'_>],
    points: &[&'static str],
    cases: &[CaseResult],
) -> (Vec<String>, Vec<String>) {
    let mut differences = unproven(cases);
    let mut findings = Vec::new();
    for d in designs {
        let judged: Vec<&CaseResult> = cases
            .iter()
            .filter(|c| c.variant == d.name && matches!(c.status, Status::Holds | Status::Breaks))
            .collect();
        let mut broke_at = Vec::new();
        for c in &judged {
            let (point, hit) = (c.point.unwrap_or("?"), c.hit);
            let predicted: Vec<&&Prediction> = d
                .predictions
                .iter()
                .filter(|p| p.covers(point, hit))
                .collect();
            let want_inv: BTreeSet<Invariant> = predicted
                .iter()
                .flat_map(|p| p.invariants.iter().copied())
                .collect();
            let want_an: BTreeSet<Anomaly> = predicted
                .iter()
                .flat_map(|p| p.anomalies.iter().copied())
                .collect();
            let (inv, an) = shown(c);
            if !inv.is_empty() || !an.is_empty() {
                broke_at.push(format!("{point}@{hit}"));
            }
            if (inv.clone(), an.clone()) != (want_inv.clone(), want_an.clone()) {
                differences.push(format!(
                    "{} at {point}@{hit}: breaks {}, predicted {}",
                    d.name,
                    words(&inv, &an),
                    words(&want_inv, &want_an)
                ));
            }
        }
        // Every predicted point and hit is a case that was judged.
        let mut left_out = Vec::new();
        let mut explored_any = d.predictions.is_empty();
        for p in &d.predictions {
            for at in p.at {
                if !points.contains(&at.point) {
                    left_out.push(at.point);
                    continue;
                }
                explored_any = true;
                let seen = d.probe_hits.get(at.point).copied().unwrap_or(0);
                let hits: Vec<u32> = if at.hits.is_empty() {
                    (1..=seen.max(1)).collect()
                } else {
                    at.hits.to_vec()
                };
                for hit in hits {
                    if d.shard.is_some_and(|mine| !mine.contains(&(at.point, hit))) {
                        continue;
                    }
                    let there = judged
                        .iter()
                        .any(|c| c.point == Some(at.point) && c.hit == hit);
                    if !there {
                        differences.push(format!(
                            "{}: the predicted {} at {}@{hit} was not observed (the probe reached the point {seen} times)",
                            d.name, p.says, at.point
                        ));
                    }
                }
            }
        }
        left_out.sort_unstable();
        left_out.dedup();
        if !explored_any {
            // A narrowed run that passed here would read as "this design holds".
            differences.push(format!(
                "{}: the predicted break ({}) was not explored (--points leaves out {}): a run of those points judges it",
                d.name,
                says_once(&d.predictions).join("; "),
                left_out.join(", ")
            ));
        }
        findings.push(finding(d, &broke_at, &left_out, &judged));
    }
    (differences, findings)
}

/// What the predictions say, each text once: several predictions of one design may say the
/// same (one per kind of break).
fn says_once<'p>(predictions: &[&'p Prediction]) -> Vec<&'p str> {
    let mut says: Vec<&str> = Vec::new();
    for p in predictions {
        if !says.contains(&p.says) {
            says.push(p.says);
        }
    }
    says
}

fn finding(
    d: &Design<'_>,
    broke_at: &[String],
    left_out: &[&str],
    judged: &[&CaseResult],
) -> String {
    let mut counts: BTreeMap<Anomaly, usize> = BTreeMap::new();
    for f in judged.iter().flat_map(|c| &c.bad_anomalies) {
        *counts.entry(f.anomaly).or_default() += 1;
    }
    let anomalies: Vec<String> = counts
        .iter()
        .map(|(a, n)| format!("{} x{n}", a.name()))
        .collect();
    let shown = if anomalies.is_empty() {
        "no bad anomaly".to_string()
    } else {
        anomalies.join(", ")
    };
    let mut text = if d.predictions.is_empty() && broke_at.is_empty() {
        format!(
            "{}: every invariant holds at every reached point, no bad anomaly",
            d.name
        )
    } else if d.predictions.is_empty() {
        // Predicted to hold, yet broke: the summary must not say it held.
        format!(
            "{}: predicted to hold, yet breaks at {} ({shown})",
            d.name,
            broke_at.join(", ")
        )
    } else {
        let says = says_once(&d.predictions);
        // Grouped by point: `p@1 @2, q@2`.
        let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
        for case in broke_at {
            let (point, hit) = case.rsplit_once('@').unwrap_or((case, "?"));
            match grouped.iter_mut().find(|(p, _)| *p == point) {
                Some((_, hits)) => hits.push(hit),
                None => grouped.push((point, vec![hit])),
            }
        }
        let at: Vec<String> = grouped
            .iter()
            .map(|(p, hits)| format!("{p} @{}", hits.join(" @")))
            .collect();
        match at.is_empty() {
            true => format!("{}: predicted {}, shown nowhere", d.name, says.join("; ")),
            false => format!(
                "{}: predicted {} shown at {} ({shown})",
                d.name,
                says.join("; "),
                at.join(", ")
            ),
        }
    };
    let points: BTreeSet<&str> = left_out.iter().copied().collect();
    if !points.is_empty() {
        text.push_str(&format!(
            "; not explored: {}",
            points.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    text
}

/// A design that breaks without a crash (`ExplorePlan::breaks_without_crash`): its run
/// without a crash must break with exactly the invariants and anomaly kinds its predictions
/// name; the difference when it does not.
pub fn probe_breaks_as_predicted(probe: &CaseResult, predictions: &[Prediction]) -> Option<String> {
    let mine: Vec<&Prediction> = predictions
        .iter()
        .filter(|p| p.variant == probe.variant)
        .collect();
    let want_inv: BTreeSet<Invariant> = mine
        .iter()
        .flat_map(|p| p.invariants.iter().copied())
        .collect();
    let want_an: BTreeSet<Anomaly> = mine
        .iter()
        .flat_map(|p| p.anomalies.iter().copied())
        .collect();
    let (inv, an) = shown(probe);
    let broke = probe.status == Status::Breaks;
    (!broke || (inv.clone(), an.clone()) != (want_inv.clone(), want_an.clone())).then(|| {
        format!(
            "{}: the run without a crash breaks {}, predicted {}{}",
            probe.variant,
            words(&inv, &an),
            words(&want_inv, &want_an),
            if probe.problems.is_empty() {
                String::new()
            } else {
                format!(" ({})", probe.problems.join("; "))
            }
        )
    })
}

/// The cases that say nothing (an error) or whose crash was not proven: each is a difference.
pub fn unproven(cases: &[CaseResult]) -> Vec<String> {
    let mut differences = Vec::new();
    for c in cases {
        let at = format!("{} at {}@{}", c.variant, c.point.unwrap_or("?"), c.hit);
        match c.status {
            Status::Error => differences.push(format!("{at}: error: {}", c.problems.join("; "))),
            Status::NotReached if !c.problems.is_empty() => {
                differences.push(format!("{at}: {}", c.problems.join("; ")))
            }
            Status::Breaks if c.invariants.reached == Some(false) => differences.push(format!(
                "{at}: the crash was not proven: {}",
                c.problems.join("; ")
            )),
            _ => {}
        }
    }
    differences
}
