//! Power loss from the command line: driver, explore and chaos under `--crash-mode
//! power-loss` as a user runs them, their evidence and its audit, the bad inputs, and the
//! cut kept inside each run's work directory.

mod common;
mod power_support;

use std::fs;
use std::process::Command;

use common::{code, crashlab, json, stderr, stdout, BIN};
use power_support::{no_undo_files, sentinels};

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

/// Power loss where a lab cannot take it (its state in servers, or no power-loss predictions
/// to judge it by) is refused by driver, explore and chaos alike before anything starts: one
/// line naming the modes the lab takes, exit 2, no output directory, no server started (its
/// temporary directory would show in TMPDIR), no panic.
#[test]
fn power_loss_where_a_lab_cannot_take_it_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tmp = tempfile::tempdir().unwrap();
    let stack = &["--stack", "postgres-rabbitmq"];
    let cases: &[(&[&str], &[&str], &str)] = &[
        (
            &["explore", "f2"],
            &["--cut", "drop"],
            "lab f2 on stack sqlite refuses it",
        ),
        (
            &["explore", "f2"],
            &["--variants", "default"],
            "lab f2 on stack sqlite refuses it",
        ),
        (&["explore", "f3"], &[], "lab f3 on stack sqlite refuses it"),
        (&["driver", "f2"], &[], "lab f2 on stack sqlite refuses it"),
        (&["driver", "f3"], &[], "lab f3 on stack sqlite refuses it"),
        (
            &["driver", "14"],
            stack,
            "lab 14 on stack postgres-rabbitmq refuses it",
        ),
        (
            &["explore", "14"],
            stack,
            "lab 14 on stack postgres-rabbitmq refuses it",
        ),
        (
            &["explore", "f3"],
            stack,
            "lab f3 on stack postgres-rabbitmq refuses it",
        ),
        (
            &["explore", "f1"],
            &[],
            "lab f1 on stack postgres refuses it",
        ),
        (
            &["driver", "f1"],
            &[],
            "lab f1 on stack postgres refuses it",
        ),
        (
            &["chaos", "14"],
            stack,
            "lab 14 on stack postgres-rabbitmq refuses it",
        ),
    ];
    for (command, more, what) in cases {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(["--crash-mode", "power-loss", "--out", "x"]);
        args.extend_from_slice(more);
        let out = Command::new(BIN)
            .args(&args)
            .current_dir(d)
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        refused(&out, what);
        let err = stderr(&out);
        assert!(
            err.contains("; its crash modes: exit, abort, kill, hang"),
            "{err}"
        );
        assert!(
            !err.contains("instead"),
            "{args:?}: no suggestion of a command that fails: {err}"
        );
        assert!(common::files(d).is_empty(), "{args:?} left files behind");
        let made: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert!(made.is_empty(), "{args:?} made {made:?}");
    }
    // Where the driver cannot cut a lab that takes power loss, it names the explore that can,
    // and that command runs (a slice of it here: one cut, the profiles that hold; the whole
    // of it passes in every_store_profile_of_both_labs_breaks_exactly_where_predicted_…).
    let out = crashlab(
        d,
        &["driver", "13", "--crash-mode", "power-loss", "--out", "x"],
    );
    refused(
        &out,
        "`crashlab explore 13 --crash-mode power-loss` explores this lab",
    );
    let out = crashlab(
        d,
        &[
            "explore",
            "13",
            "--crash-mode",
            "power-loss",
            "--cut",
            "drop",
            "--variants",
            "default,journal-delete-extra",
            "--out",
            "x13",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}
