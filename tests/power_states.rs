//! Every power-loss state instead of a sample (`--cut exhaustive`), and the audit that derives
//! each cut again from the undo log's record in the evidence: a bounded crash point says so
//! everywhere, an acknowledged commit a cut rolls back is a `lost-write`, an honest run of a
//! lossy store profile audits PASS with its failures as recorded, and a changed cut record or
//! digest FAILs.

mod common;
#[path = "tamper/support.rs"]
mod support;

use std::fs;
use std::path::Path;

use serde_json::Value;

use common::{code, crashlab, json, stderr, stdout};
use support::{audit, copy_dir, rehash};

/// Edit one JSON file of a copy of `run`, re-hash its manifest, and audit it: it must FAIL
/// naming `file` and `says`.
fn changed_fails(run: &Path, file: &str, says: &str, edit: impl FnOnce(&mut Value)) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy");
    copy_dir(run, &copy);
    let path = copy.join(file);
    let text = fs::read_to_string(&path).unwrap();
    // A JSON Lines file is edited on its first line.
    let (first, rest) = match file.ends_with(".jsonl") {
        true => text.split_once('\n').unwrap(),
        false => (text.as_str(), ""),
    };
    let mut value: Value = serde_json::from_str(first).unwrap();
    edit(&mut value);
    let mut out = serde_json::to_string(&value).unwrap() + "\n";
    out.push_str(rest);
    fs::write(&path, out).unwrap();
    rehash(&copy);
    let (code, said) = audit(&copy);
    assert_eq!(code, 1, "{file}: {said}");
    assert!(
        said.lines()
            .any(|l| l.starts_with(file) && l.contains(says)),
        "{file} / {says}: {said}"
    );
}

#[test]
fn a_point_past_its_bound_says_bounded_and_a_rolled_back_commit_is_a_lost_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = crashlab(
        d,
        &[
            "explore",
            "14",
            "--crash-mode",
            "power-loss",
            "--cut",
            "exhaustive",
            "--variants",
            "journal-delete",
            "--points",
            "enqueue",
            "--max-states",
            "5",
            "--out",
            "ex",
        ],
    );
    let table = stdout(&out);
    assert_eq!(code(&out), 0, "{table}{}", stderr(&out));
    // enqueue.before-commit has 12 unsynced acts: more states than 5, said bounded.
    let bounded = table
        .lines()
        .find(|l| l.starts_with("enqueue.before-commit@1"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(bounded.contains("5 of 4144"), "{bounded}");
    assert!(bounded.contains("(bounded)"), "{bounded}");
    assert!(table.contains("(1 crash point bounded)"), "{table}");
    // enqueue.after-commit: the journal's unlink is the one unsynced act; losing it rolls
    // the acknowledged redelivery back, a lost write.
    let lost = table
        .lines()
        .find(|l| l.starts_with("enqueue.after-commit "))
        .unwrap();
    assert!(
        lost.contains("*BREAKS 1/1") && lost.ends_with("lost-write x1"),
        "{lost}"
    );
    let ex = d.join("ex");
    let report = json(&ex.join("explore.json"));
    let case = |point: &str| -> Value {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["point"] == point)
            .unwrap()
            .clone()
    };
    let before = case("enqueue.before-commit");
    assert_eq!(before["states"]["bounded"], true, "{before}");
    assert_eq!(before["states"]["enumerated"], 5);
    assert_eq!(before["states"]["unsynced"], 12);
    let after = case("enqueue.after-commit");
    assert_eq!(after["states"]["bounded"], false, "{after}");
    assert_eq!(after["states"]["states"], "2");
    assert_eq!(after["states"]["broken"], serde_json::json!([0]));
    assert_eq!(
        after["bad_anomalies"][0]["anomaly"], "lost-write",
        "{after}"
    );
    assert!(
        after["bad_anomalies"][0]["item"]
            .as_str()
            .unwrap()
            .starts_with("queue raw delivery 3 message M000001"),
        "{after}"
    );
    assert_eq!(report["states"]["bounded"], 1);
    // The broken state keeps what it dropped: the journal's unlink, undone.
    let case_dir = ex.join(after["evidence"].as_str().unwrap());
    let record = json(&case_dir.join("states.json"));
    assert_eq!(record["summary"]["bounded"], false);
    let cut: Value = serde_json::from_str(
        fs::read_to_string(case_dir.join("states/0/power-cuts.jsonl"))
            .unwrap()
            .trim_end(),
    )
    .unwrap();
    assert_eq!(cut["kept"], serde_json::json!([]), "{cut}");
    assert_eq!(cut["dropped"].as_array().unwrap().len(), 1, "{cut}");
    assert_eq!(cut["files"][0]["undone"], serde_json::json!(["unlink"]));

    // The audit enumerates every case's states again from the record: PASS, and a changed
    // state or count FAILs.
    let (code_ok, said) = audit(&ex);
    assert_eq!(code_ok, 0, "{said}");
    assert!(said.contains("every kept state derived again"), "{said}");
    let bounded_rel = format!("{}/states.json", before["evidence"].as_str().unwrap());
    changed_fails(&ex, &bounded_rel, "summary enumerated 6", |v| {
        v["summary"]["enumerated"] = 6.into()
    });
    changed_fails(&ex, &bounded_rel, "summary bounded false", |v| {
        v["summary"]["bounded"] = false.into()
    });
    let state_rel = format!(
        "{}/states/0/power-cuts.jsonl",
        after["evidence"].as_str().unwrap()
    );
    changed_fails(&ex, &state_rel, "kept", |v| {
        let dropped = v["dropped"].clone();
        v["kept"] = dropped;
        v["dropped"] = serde_json::json!([]);
    });
    changed_fails(&ex, &state_rel, "undone", |v| {
        v["files"][0]["undone"] = serde_json::json!([])
    });
}

/// `driver 14` under power loss with store profile `profile`, cut `cut`, seed 3, into `out`.
fn lossy_driver(d: &Path, profile: &str, cut: &str, out: &str) -> std::process::Output {
    crashlab(
        d,
        &[
            "driver",
            "14",
            "--crash-mode",
            "power-loss",
            "--store-profile",
            profile,
            "--cut",
            cut,
            "--seed",
            "3",
            "--out",
            out,
        ],
    )
}

#[test]
fn a_lossy_profiles_honest_run_audits_pass_and_a_changed_cut_or_digest_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for profile in ["journal-delete", "sync-normal"] {
        let out = lossy_driver(d, profile, "torn", profile);
        // The acknowledged commit the cut rolled back is gone: the run fails, as documented.
        assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
        let (code_ok, said) = audit(&d.join(profile));
        assert_eq!(code_ok, 0, "{profile}: {said}");
        let study = format!(
            "study with store profile {profile} under power loss (its failures as recorded)"
        );
        assert!(said.contains(&study), "{said}");
    }
    let run = d.join("journal-delete");
    let cuts = "power-cuts.jsonl";
    changed_fails(&run, cuts, "unsynced 3, its log gives", |v| {
        v["unsynced"] = 3.into()
    });
    changed_fails(&run, cuts, "records 5, its log gives", |v| {
        v["records"] = 5.into()
    });
    changed_fails(&run, cuts, "action \"rolled-back\"", |v| {
        v["files"][0]["action"] = "rolled-back".into()
    });
    changed_fails(&run, cuts, "shm_removed names", |v| {
        v["shm_removed"] = serde_json::json!(["other.db-shm"])
    });
    changed_fails(&run, cuts, "no log and first_record", |v| {
        v.as_object_mut().unwrap().remove("log");
    });
    changed_fails(&run, cuts, "unknown key 'verified'", |v| {
        v["verified"] = true.into()
    });
    // A prefix cut's prefix_at, taken out: a missing one is a changed one.
    let out = lossy_driver(d, "journal-delete", "prefix", "prefix");
    assert!(
        d.join("prefix/power-cuts.jsonl").is_file(),
        "{}",
        stderr(&out)
    );
    let (code_ok, said) = audit(&d.join("prefix"));
    assert_eq!(code_ok, 0, "{said}");
    changed_fails(
        &d.join("prefix"),
        cuts,
        "prefix_at null, its log and seed give Some(",
        |v| {
            v.as_object_mut().unwrap().remove("prefix_at");
        },
    );
    // The sender's database after the cut, recorded as another content.
    let files = "database-files.json";
    let other = "0".repeat(64);
    changed_fails(&run, files, "recorded logical_sha256", |v| {
        for row in v.as_array_mut().unwrap() {
            if row["file"] == "sender.db" && row["after_step"] == "business-crash" {
                row["logical_sha256"] = other.clone().into();
            }
        }
    });
}

#[test]
fn a_chaos_runs_cut_records_are_derived_again_from_their_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "chaos",
        "14",
        "--crash-mode",
        "power-loss",
        "--cut",
        "torn",
        "--messages",
        "100",
        "--kills",
        "3",
        "--seed",
        "2",
        "--out",
        "ch",
    ];
    let out = crashlab(d, &args);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let run = d.join("ch");
    let (code_ok, said) = audit(&run);
    assert_eq!(code_ok, 0, "{said}");
    assert!(said.contains("first_record, torn_tail_bytes"), "{said}");
    let cuts = "power-cuts.jsonl";
    changed_fails(&run, cuts, "unsynced", |v| {
        v["unsynced"] = (v["unsynced"].as_u64().unwrap() + 1).into()
    });
    changed_fails(&run, cuts, "records", |v| {
        v["records"] = (v["records"].as_u64().unwrap() + 1).into()
    });
    changed_fails(&run, cuts, "no log and first_record", |v| {
        v.as_object_mut().unwrap().remove("first_record");
    });
}

#[test]
fn exhaustive_is_explores_and_max_states_belongs_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whose = "--cut exhaustive enumerates every state of a crash point: explore runs them";
    let mut cases: Vec<(Vec<&str>, &str)> = ["driver", "chaos"]
        .iter()
        .map(|command| {
            let args = vec![
                command,
                "14",
                "--crash-mode",
                "power-loss",
                "--cut",
                "exhaustive",
            ];
            (args.into_iter().chain(["--out", "x"]).collect(), whose)
        })
        .collect();
    let explore = ["explore", "14", "--crash-mode", "power-loss", "--cut"];
    for (more, says) in [
        (
            ["drop", "--max-states", "9"],
            "--max-states is for --crash-mode power-loss --cut exhaustive only",
        ),
        (
            ["exhaustive", "--max-states", "0"],
            "--max-states 0 is out of range (1 to 1048576)",
        ),
    ] {
        let args = explore.iter().chain(&more).chain(&["--out", "x"]);
        cases.push((args.copied().collect(), says));
    }
    // Lab 13's lossy profiles have predictions for the seeded cuts only: refused, naming the
    // profiles that can run.
    cases.push((
        vec![
            "explore",
            "13",
            "--crash-mode",
            "power-loss",
            "--cut",
            "exhaustive",
            "--out",
            "x",
        ],
        "store profiles sync-normal, journal-delete, sync-off of this lab have no predictions \
         for every state (their seeded cuts drop, torn and prefix do); --variants default, \
         journal-delete-extra can run",
    ));
    for (args, says) in &cases {
        let out = crashlab(d, args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!d.join("x").exists() && !d.join("x.partial").exists());
    }
}
