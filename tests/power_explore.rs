//! Explore under power loss as a user runs it: the cut kept inside each case's work
//! directory, and every store profile of both labs breaking exactly where predicted.

mod common;
mod power_support;

use std::fs;

use common::{code, crashlab, json, stderr, stdout};
use power_support::{no_undo_files, sentinels};

#[test]
fn explore_under_power_loss_cuts_only_inside_each_case_and_holds_for_the_correct_design() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = d.join("work");
    fs::create_dir(&work).unwrap();
    let kept = sentinels(&work);
    let work_arg = work.to_string_lossy().into_owned();
    let out = crashlab(
        d,
        &[
            "explore",
            "14",
            "--crash-mode",
            "power-loss",
            "--variants",
            "default,sync-off",
            "--cut",
            "drop",
            "--points",
            "sender,enqueue",
            "--work-dir",
            &work_arg,
            "--out",
            "ex",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("crash mode power-loss, files on "),
        "{}",
        stdout(&out)
    );
    let report = json(&d.join("ex").join("explore.json"));
    assert_eq!(report["crash_mode"], "power-loss");
    assert_eq!(
        report["variants"],
        serde_json::json!(["default/drop", "sync-off/drop"])
    );
    for case in report["cases"].as_array().unwrap() {
        if case["variant"] == "default/drop" {
            assert_eq!(case["status"], "holds", "{case}");
        }
        if case["crash_exit"] == 137 {
            let cuts = d
                .join("ex")
                .join(case["evidence"].as_str().unwrap())
                .join("power-cuts.jsonl");
            assert!(cuts.is_file(), "{}", cuts.display());
        }
    }
    // sync-off loses what the correct design keeps.
    assert!(report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["variant"] == "sync-off/drop" && c["status"] == "breaks"));
    no_undo_files(&d.join("ex"));
    for (path, bytes) in kept {
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "{} was touched",
            path.display()
        );
    }
    // Every case's work directory is gone; only the sentinels remain.
    assert_eq!(fs::read_dir(&work).unwrap().count(), 2);
}

/// The cases of `variant` in an explore.json, as (point@hit, status, bad anomaly kinds).
fn cases_of(report: &serde_json::Value, variant: &str) -> Vec<(String, String, Vec<String>)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["variant"] == variant)
        .map(|c| {
            let anomalies = c["bad_anomalies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["anomaly"].as_str().unwrap().to_string())
                .collect();
            (
                format!("{}@{}", c["point"].as_str().unwrap(), c["hit"]),
                c["status"].as_str().unwrap().to_string(),
                anomalies,
            )
        })
        .collect()
}

#[test]
fn every_store_profile_of_both_labs_breaks_exactly_where_predicted_under_a_drop_cut() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = crashlab(
        d,
        &[
            "explore",
            "14",
            "--crash-mode",
            "power-loss",
            "--variants",
            "all",
            "--cut",
            "drop",
            "--out",
            "x14",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report = json(&d.join("x14").join("explore.json"));
    for holds in ["default/drop", "journal-delete-extra/drop"] {
        let cases = cases_of(&report, holds);
        assert!(!cases.is_empty());
        assert!(
            cases.iter().all(|(_, s, _)| s != "breaks"),
            "{holds}: {cases:?}"
        );
    }
    for lossy in ["sync-normal/drop", "journal-delete/drop"] {
        let broke: Vec<String> = cases_of(&report, lossy)
            .into_iter()
            .filter(|(_, s, _)| s == "breaks")
            .map(|(at, _, _)| at)
            .collect();
        assert_eq!(broke, ["enqueue.after-commit@1"], "{lossy}");
    }
    assert!(
        cases_of(&report, "sync-off/drop")
            .iter()
            .filter(|(_, s, _)| s == "breaks")
            .count()
            > 10
    );

    // Lab 13's long-lived receiver under NORMAL loses an effect the dispatcher was told of.
    let out = crashlab(
        d,
        &[
            "explore",
            "13",
            "--crash-mode",
            "power-loss",
            "--variants",
            "default,sync-normal",
            "--cut",
            "drop",
            "--out",
            "x13",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report = json(&d.join("x13").join("explore.json"));
    assert!(cases_of(&report, "default/drop")
        .iter()
        .all(|(_, s, a)| s != "breaks" && a.is_empty()));
    let lost: Vec<(String, String, Vec<String>)> = cases_of(&report, "sync-normal/drop")
        .into_iter()
        .filter(|(_, _, a)| a.iter().any(|k| k == "lost-write" || k == "unseen"))
        .collect();
    assert!(
        !lost.is_empty(),
        "{:?}",
        cases_of(&report, "sync-normal/drop")
    );
}
