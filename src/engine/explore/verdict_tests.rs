//! The verdict rule's tests: a design breaks exactly where and how it predicts.

use std::collections::BTreeMap;

use crate::engine::explore::case::CaseResult;
use crate::engine::explore::invariant::Invariants;
use crate::engine::explore::invariant::{Invariant, Status};
use crate::engine::explore::plan::Prediction;
use crate::engine::explore::plan::{At, Counts};
use crate::engine::explore::verdict::{verdict, Design};
use crate::engine::jepsen::Anomaly;
use crate::engine::jepsen::Found;

fn case(point: &'static str, hit: u32, lost: bool, bad: &[Anomaly]) -> CaseResult {
    CaseResult {
        variant: "v",
        point: Some(point),
        hit,
        expect_reached: true,
        status: if lost { Status::Breaks } else { Status::Holds },
        invariants: Invariants {
            reached: Some(true),
            no_lost_effect: Some(!lost),
            no_duplicate_effect: Some(true),
            nothing_stuck: Some(true),
            acknowledged_durable: Some(true),
        },
        anomalies: Vec::new(),
        bad_anomalies: bad
            .iter()
            .map(|a| Found {
                anomaly: *a,
                item: "M1".into(),
                detail: String::new(),
            })
            .collect(),
        counts: Counts::default(),
        crash_exit: Some(73),
        hits: BTreeMap::new(),
        recovery_hits: BTreeMap::new(),
        recovery_rounds: 0,
        processes: 4,
        problems: Vec::new(),
        wall_ms: 0.0,
        evidence: String::new(),
        states: None,
    }
}

static PREDICTION: Prediction = Prediction {
    variant: "v",
    at: &[At {
        point: "p.after",
        hits: &[2],
    }],
    invariants: &[Invariant::NoLostEffect],
    anomalies: &[Anomaly::Unseen],
    says: "lost",
    hidden: "@1 is redelivered",
};

fn judge(cases: &[CaseResult], points: &[&'static str]) -> Vec<String> {
    let hits = BTreeMap::from([("p.after".to_string(), 2), ("q.before".to_string(), 1)]);
    let design = Design {
        name: "v",
        predictions: vec![&PREDICTION],
        probe_hits: &hits,
        shard: None,
    };
    verdict(&[design], points, cases).0
}

#[test]
fn a_design_must_break_exactly_where_and_how_it_predicts() {
    let points = ["p.after", "q.before"];
    let exact = [
        case("p.after", 1, false, &[]),
        case("p.after", 2, true, &[Anomaly::Unseen]),
        case("q.before", 1, false, &[]),
    ];
    assert_eq!(judge(&exact, &points), Vec::<String>::new());
    // Breaking also where nothing is predicted is a difference.
    let more = [
        case("p.after", 1, true, &[Anomaly::LostWrite]),
        case("p.after", 2, true, &[Anomaly::Unseen]),
        case("q.before", 1, false, &[]),
    ];
    assert_eq!(
        judge(&more, &points).len(),
        1,
        "{:?}",
        judge(&more, &points)
    );
    // The predicted invariant broken with another anomaly is a difference too.
    let other = [
        case("p.after", 1, false, &[]),
        case("p.after", 2, true, &[Anomaly::LostWrite]),
        case("q.before", 1, false, &[]),
    ];
    assert!(judge(&other, &points)[0].contains("predicted no_lost_effect"));
    // The predicted hit holding, or never judged, is a difference.
    let held = [
        case("p.after", 1, false, &[]),
        case("p.after", 2, false, &[]),
    ];
    assert_eq!(judge(&held, &points).len(), 1);
    let missing = [case("p.after", 1, false, &[])];
    assert!(judge(&missing, &points)[0].contains("not observed"));
    // Every predicted point left out by --points: the break was not explored.
    let left_out = [case("q.before", 1, false, &[])];
    assert!(judge(&left_out, &["q.before"])[0].contains("not explored"));
}

#[test]
fn a_design_predicted_to_hold_that_breaks_is_not_summed_up_as_holding() {
    let hits = BTreeMap::from([("p.after".to_string(), 1)]);
    let design = |predictions| Design {
        name: "v",
        predictions,
        probe_hits: &hits,
        shard: None,
    };
    let held = [case("p.after", 1, false, &[])];
    let (differences, findings) = verdict(&[design(vec![])], &["p.after"], &held);
    assert!(differences.is_empty());
    assert!(
        findings[0].contains("every invariant holds"),
        "{findings:?}"
    );
    let broke = [case("p.after", 1, true, &[Anomaly::Unseen])];
    let (differences, findings) = verdict(&[design(vec![])], &["p.after"], &broke);
    assert_eq!(differences.len(), 1, "{differences:?}");
    assert!(
        !findings[0].contains("every invariant holds"),
        "{findings:?}"
    );
    assert!(
        findings[0].contains("predicted to hold, yet breaks at p.after@1 (unseen x1)"),
        "{findings:?}"
    );
}
