//! `--junit FILE` of explore and merge: one test case per explore case, named by its crash
//! point and hit under its design. A case fails when it differs from what its design
//! predicts; the failure names the broken invariants and the bad anomalies, so a CI page
//! shows which crash point broke without opening the evidence. A break the design predicts
//! passes, and says so. What differs and belongs to no case (a predicted hit not observed)
//! is one more failed test case, `verdict`.

use crate::engine::explore::case::CaseResult;
use crate::engine::explore::invariant::{Invariant, Status};
use crate::engine::explore::report::Report;
use crate::junit::{Case, Outcome, Suite};

/// The broken invariants and bad anomalies of a case, in words: `no_lost_effect broken;
/// unseen M000002 (…)`.
fn broken(c: &CaseResult) -> String {
    let inv: Vec<&str> = Invariant::ALL
        .iter()
        .filter(|i| c.invariants.get(**i) == Some(false))
        .map(|i| i.key())
        .collect();
    let mut parts = Vec::new();
    if !inv.is_empty() {
        parts.push(format!("broken: {}", inv.join(", ")));
    }
    for f in &c.bad_anomalies {
        parts.push(format!("{} {}: {}", f.anomaly.name(), f.item, f.detail));
    }
    parts.extend(c.problems.iter().cloned());
    match parts.is_empty() {
        true => "every invariant holds".to_string(),
        false => parts.join("\n"),
    }
}

pub fn suite(report: &Report) -> Suite {
    let mut claimed = vec![false; report.differences.len()];
    let mut cases = Vec::with_capacity(report.cases.len() + 1);
    for c in &report.cases {
        let point = c.point.unwrap_or("probe");
        let at = format!("{} at {point}@{}:", c.variant, c.hit);
        let differs: Vec<&str> = report
            .differences
            .iter()
            .zip(claimed.iter_mut())
            .filter(|(d, _)| d.starts_with(&at))
            .map(|(d, seen)| {
                *seen = true;
                d.as_str()
            })
            .collect();
        let outcome = match (differs.first(), c.status) {
            (Some(first), _) => Outcome::Failed {
                message: first.to_string(),
                text: format!("{}\nevidence: {}", broken(c), c.evidence),
            },
            (None, Status::NotReached) => Outcome::Skipped {
                message: format!("{point}@{} not reached: nothing to judge", c.hit),
            },
            (None, _) => Outcome::Passed,
        };
        let system_out = match (&outcome, c.status) {
            (Outcome::Passed, Status::Breaks) => format!("breaks as predicted; {}", broken(c)),
            _ => String::new(),
        };
        cases.push(Case {
            name: format!("{point}@{}", c.hit),
            classname: format!("{}.{}", report.lab, c.variant),
            time_s: c.wall_ms / 1000.0,
            outcome,
            system_out,
        });
    }
    let rest: Vec<&String> = report
        .differences
        .iter()
        .zip(&claimed)
        .filter(|(_, seen)| !**seen)
        .map(|(d, _)| d)
        .collect();
    if let Some(first) = rest.first() {
        cases.push(Case {
            name: "verdict".to_string(),
            classname: report.lab.clone(),
            time_s: 0.0,
            outcome: Outcome::Failed {
                message: first.to_string(),
                text: rest
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            },
            system_out: String::new(),
        });
    }
    Suite {
        name: format!("crashlab explore {}", report.lab),
        time_s: report.wall_ms / 1000.0,
        cases,
    }
}
