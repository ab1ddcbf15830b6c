//! Power loss from the command line: driver, explore and chaos under `--crash-mode
//! power-loss` as a user runs them, their evidence and its audit, the bad inputs, and the
//! cut kept inside each run's work directory.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{code, crashlab, json, stderr, stdout, BIN};

/// No file of the shim's undo log or its stash in an evidence directory.
fn no_undo_files(dir: &Path) {
    for file in common::files(dir) {
        let name = file.to_string_lossy();
        assert!(!name.contains("power-undo"), "{name} kept in the evidence");
    }
}

/// A one-line refusal, exit 2, `crashlab: …` naming `what`.
fn refused(output: &std::process::Output, what: &str) {
    assert_eq!(code(output), 2, "{}", stderr(output));
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("crashlab: "), "{err}");
    assert!(err.contains(what), "{err}");
}

#[test]
fn a_power_loss_driver_run_records_its_cuts_and_its_audit_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = crashlab(
        d,
        &[
            "driver",
            "14",
            "--crash-mode",
            "power-loss",
            "--cut",
            "torn",
            "--seed",
            "3",
            "--keep-db",
            "--out",
            "run",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let run = d.join("run");
    let processes = json(&run.join("processes.json"));
    assert_eq!(processes["crash_mode"], "power-loss");
    assert_eq!(processes["pragmas"]["synchronous"], "full");
    // One cut per crashed step, in the style and seed asked for, each naming where it was.
    let cuts = fs::read_to_string(run.join("power-cuts.jsonl")).unwrap();
    let cuts: Vec<serde_json::Value> = cuts
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let crashed = processes["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["crash_point"].is_string())
        .count();
    assert!(crashed >= 1);
    assert_eq!(cuts.len(), crashed);
    for cut in &cuts {
        assert_eq!(cut["cut"], "torn");
        assert_eq!(cut["seed"], 3);
        assert!(cut["step"].is_string() && cut["point"].is_string(), "{cut}");
    }
    no_undo_files(&run);
    let audit = crashlab(d, &["audit", "run"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(stdout(&audit).contains("PASS"), "{}", stdout(&audit));
    let rerun = crashlab(d, &["audit", "--rerun", "run"]);
    assert_eq!(code(&rerun), 0, "{}", stdout(&rerun));

    // A cut recorded with another seed than the command's is found.
    let path = run.join("power-cuts.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("\"seed\":3", "\"seed\":4", 1)).unwrap();
    let tampered = crashlab(d, &["audit", "run"]);
    assert_eq!(code(&tampered), 1, "{}", stdout(&tampered));
    assert!(
        stdout(&tampered).contains("power-cuts.jsonl: line 1: seed 4, expected 3"),
        "{}",
        stdout(&tampered)
    );
}

#[test]
fn bad_power_loss_input_is_one_line_exit_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: &[(&[&str], &str)] = &[
        (
            &["driver", "14", "--cut", "torn", "--out", "x"],
            "--cut is for --crash-mode power-loss only",
        ),
        (
            &["driver", "14", "--seed", "3", "--out", "x"],
            "--seed is for --crash-mode power-loss only",
        ),
        (
            &[
                "driver",
                "14",
                "--crash-mode",
                "power-loss",
                "--cut",
                "sideways",
                "--out",
                "x",
            ],
            "invalid value 'sideways' for '--cut",
        ),
        (
            &[
                "driver",
                "14",
                "--crash-mode",
                "power-loss",
                "--store-profile",
                "fast",
                "--out",
                "x",
            ],
            "unknown store profile 'fast'",
        ),
        (
            &["driver", "13", "--crash-mode", "power-loss", "--out", "x"],
            "keeps step receiver running in the background",
        ),
        (
            &["explore", "14", "--cut", "drop", "--out", "x"],
            "--cut is for --crash-mode power-loss only",
        ),
        (
            &[
                "explore",
                "14",
                "--crash-mode",
                "power-loss",
                "--variants",
                "correct",
                "--out",
                "x",
            ],
            "unknown store profile 'correct'",
        ),
        (
            &["chaos", "14", "--cut", "prefix", "--out", "x"],
            "--cut is for --crash-mode power-loss only",
        ),
        (
            &["chaos", "14", "--crash-mode", "abort", "--out", "x"],
            "chaos --crash-mode abort",
        ),
        (
            &[
                "chaos",
                "14",
                "--crash-mode",
                "power-loss",
                "--store-profile",
                "journal-delete",
                "--out",
                "x",
            ],
            "a rollback journal cannot be pinned",
        ),
    ];
    for (args, what) in cases {
        refused(&crashlab(d, args), what);
        assert!(common::files(d).is_empty(), "{args:?} left files behind");
    }
}

#[test]
fn an_undo_log_a_role_cannot_open_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["sender", "--db", "sender.db", "--generate", "1"])
        .env(
            "CRASHLAB_POWER_LOG",
            dir.path().join("gone").join("power-undo.log"),
        )
        .current_dir(dir.path())
        .output()
        .unwrap();
    refused(&out, "CRASHLAB_POWER_LOG");
    assert!(!dir.path().join("sender.db").exists());
}

#[test]
fn a_corrupt_undo_log_is_refused_whole_and_nothing_is_cut() {
    use crashlab::engine::nemesis::{power_loss, Aftermath};
    use crashlab::power::cut::Style;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A real run under the shim: a sender killed right after its third commit.
    let out = Command::new(BIN)
        .args([
            "sender",
            "--db",
            "sender.db",
            "--generate",
            "5",
            "--batch",
            "1",
        ])
        .args([
            "--crash-at",
            "sender.after-commit@3",
            "--crash-mode",
            "kill",
        ])
        .env("CRASHLAB_POWER_LOG", d.join("power-undo.log"))
        .env("CRASHLAB_STORE_PROFILE", "sync-off")
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed: {}", stderr(&out));
    let log = d.join("power-undo.log");
    let mut bytes = fs::read(&log).unwrap();
    assert!(bytes.len() > 64);
    // A record's header overwritten in the middle of the log: no torn tail, a corrupt log.
    for b in &mut bytes[8..24] {
        *b = 0xff;
    }
    fs::write(&log, &bytes).unwrap();
    let before = fs::read(d.join("sender.db")).unwrap();
    let e = power_loss(Style::Drop, 1)
        .after_crash(&Aftermath {
            work_dir: d,
            point: "sender.after-commit",
        })
        .unwrap_err();
    assert_eq!(crashlab::fail::exit_code(&e), 2);
    assert!(!crashlab::fail::one_line(&e).contains('\n'));
    assert_eq!(
        fs::read(d.join("sender.db")).unwrap(),
        before,
        "nothing was cut"
    );
}

/// A sentinel database and a sentinel file beside the runs' work directories: no cut of any
/// run may touch them.
fn sentinels(root: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let db = root.join("sender.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    fs::write(root.join("power-undo.log"), b"not a run's log").unwrap();
    [db, root.join("power-undo.log")]
        .into_iter()
        .map(|p| {
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

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

#[test]
fn chaos_under_power_loss_loses_nothing_with_the_correct_design_and_its_audit_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tmp = d.join("tmp");
    fs::create_dir(&tmp).unwrap();
    let kept = sentinels(&tmp);
    let out = Command::new(BIN)
        .args([
            "chaos",
            "14",
            "--crash-mode",
            "power-loss",
            "--cut",
            "prefix",
        ])
        .args([
            "--messages",
            "200",
            "--kills",
            "6",
            "--seed",
            "2",
            "--out",
            "ch",
        ])
        .env("TMPDIR", &tmp)
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("lost effects 0, duplicated effects 0"),
        "{}",
        stdout(&out)
    );
    let run = d.join("ch");
    let cuts = fs::read_to_string(run.join("power-cuts.jsonl")).unwrap();
    assert!(cuts.lines().count() >= 1);
    let kills = json(&run.join("kills.json"));
    let scheduled = kills
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k.get("cut").is_none())
        .count();
    assert!(cuts.lines().count() <= scheduled);
    assert_eq!(
        json(&run.join("processes.json"))["crash_mode"],
        "power-loss"
    );
    no_undo_files(&run);
    let audit = crashlab(d, &["audit", "ch"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    for (path, bytes) in kept {
        assert_eq!(
            fs::read(&path).unwrap(),
            bytes,
            "{} was touched",
            path.display()
        );
    }
}

#[test]
fn a_store_profile_is_recorded_with_its_pragmas_and_the_audit_holds_the_run_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A process crash keeps every write: with synchronous=OFF the run still holds.
    let out = crashlab(
        d,
        &[
            "driver",
            "14",
            "--crash-mode",
            "kill",
            "--store-profile",
            "sync-off",
            "--out",
            "run",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let processes = d.join("run").join("processes.json");
    assert_eq!(json(&processes)["pragmas"]["synchronous"], "off");
    let audit = crashlab(d, &["audit", "run"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    // The pinned pragmas recorded as the default's: not what the command's profile pins.
    let text = fs::read_to_string(&processes).unwrap();
    fs::write(
        &processes,
        text.replace("\"synchronous\": \"off\"", "\"synchronous\": \"full\""),
    )
    .unwrap();
    let audit = crashlab(d, &["audit", "run"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("every connection pins under store profile sync-off"),
        "{}",
        stdout(&audit)
    );
    // The same profile under a power cut loses the commit the crashed step acknowledged.
    let out = crashlab(
        d,
        &[
            "driver",
            "14",
            "--crash-mode",
            "power-loss",
            "--store-profile",
            "sync-off",
            "--out",
            "cut",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
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
