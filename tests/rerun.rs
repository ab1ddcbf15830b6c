//! `crashlab audit --rerun DIR`: fresh runs of every kind rerun PASS, leaving DIR as it was
//! and nothing in the temporary directory; a meaning-changing edit (with the manifest
//! re-hashed, so only a comparison can see it) FAILs and is named; a directory that records
//! no runnable command is one line and exit 2.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use common::*;

fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every file of `dir` with its bytes and modification time: what "untouched" means.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    files(dir)
        .into_iter()
        .map(|rel| {
            let path = dir.join(&rel);
            let modified = fs::metadata(&path).unwrap().modified().unwrap();
            (rel, (fs::read(&path).unwrap(), modified))
        })
        .collect()
}

/// Re-hash every evidence file into manifest.json, as a careful forger would.
fn rehash(dir: &Path) {
    let path = dir.join("manifest.json");
    let mut manifest = json(&path);
    let mut digests = serde_json::Map::new();
    for rel in files(dir) {
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel != "manifest.json" {
            digests.insert(rel.clone(), sha256_hex(&dir.join(&rel)).into());
        }
    }
    manifest["files"] = serde_json::Value::Object(digests);
    fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
}

struct Audited {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `crashlab audit --rerun DIR …` with a temporary directory of its own, which must be
/// empty again afterwards: the rerun removes what it made.
fn audit_rerun(dir: &Path, more: &[&str]) -> Audited {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["audit", "--rerun", dir.to_str().unwrap()];
    args.extend_from_slice(more);
    let out = Command::new(BIN)
        .args(&args)
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the crashlab binary runs");
    let left: Vec<PathBuf> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "the rerun left {left:?} behind");
    let audited = Audited {
        code: code(&out),
        stdout: stdout(&out),
        stderr: stderr(&out),
    };
    assert!(!audited.stderr.contains("panicked"), "{}", audited.stderr);
    audited
}

/// The rerun PASSes, says first what it reran, and leaves the evidence as it was.
fn assert_rerun_passes(dir: &Path, command: &str) -> Audited {
    let before = snapshot(dir);
    let audited = audit_rerun(dir, &[]);
    let text = &audited.stdout;
    assert_eq!(
        text.lines().next().unwrap_or(""),
        format!(
            "rerun: {command} ({} evidence of {}), again with this binary in a temporary directory",
            command.split(' ').nth(1).unwrap(),
            if command.split(' ').nth(2) == Some("13") {
                "13-http-dispatch"
            } else {
                "14-outbox-inbox"
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("\nrerun PASS: nothing deterministic differs\n"),
        "{text}"
    );
    let differences = text
        .lines()
        .filter(|l| l.starts_with("rerun: ") && l.contains(": recorded "));
    assert_eq!(differences.count(), 0, "no difference is listed: {text}");
    // Both verdicts are reported; the exit code is 0 exactly when both are PASS.
    let offline_pass = text.lines().any(|l| l.starts_with("PASS: "));
    assert!(
        offline_pass || text.lines().any(|l| l.starts_with("FAIL: ")),
        "{text}"
    );
    assert_eq!(audited.code == 0, offline_pass, "{text}");
    assert!(
        snapshot(dir) == before,
        "the rerun changed the evidence directory"
    );
    audited
}

#[test]
fn a_fresh_driver_14_run_with_kept_databases_reruns_pass() {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = driver(dir.path(), "run", &["--keep-db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let audited = assert_rerun_passes(&run, "crashlab driver 14 --out run --keep-db");
    assert_eq!(audited.code, 0, "{}", audited.stdout);
}

#[test]
fn a_fresh_driver_13_run_reruns_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = crashlab(dir.path(), &["driver", "13", "--out", "run13"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let audited = assert_rerun_passes(&dir.path().join("run13"), "crashlab driver 13 --out run13");
    // The receiver's ports differ between the runs: normalised, not a difference.
    assert!(audited.stdout.contains("ports"), "{}", audited.stdout);
}

#[test]
fn small_explore_runs_of_both_labs_rerun_pass() {
    let dir = tempfile::tempdir().unwrap();
    for (lab, args) in [
        ("14", ["--variants", "correct", "--points", "sender"]),
        ("13", ["--variants", "keyed", "--points", "receiver"]),
    ] {
        let name = format!("explore{lab}");
        let mut all = vec!["explore", lab];
        all.extend_from_slice(&args);
        all.extend_from_slice(&["--out", &name]);
        let out = crashlab(dir.path(), &all);
        assert_eq!(code(&out), 0, "{}", stdout(&out));
        let audited = assert_rerun_passes(
            &dir.path().join(&name),
            &format!("crashlab {}", all.join(" ")),
        );
        assert_eq!(audited.code, 0, "{}", audited.stdout);
    }
}

#[test]
fn a_seeded_chaos_run_reruns_pass_on_what_the_seed_determines() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "chaos",
        "14",
        "--messages",
        "150",
        "--kills",
        "4",
        "--seed",
        "7",
        "--out",
        "chaos",
    ];
    let out = crashlab(dir.path(), &args);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let audited = assert_rerun_passes(
        &dir.path().join("chaos"),
        &format!("crashlab {}", args.join(" ")),
    );
    assert_eq!(audited.code, 0, "{}", audited.stdout);
    // What timing decides is said, not silently skipped.
    assert!(
        audited
            .stdout
            .contains("rerun: not compared: logs/, kills.json"),
        "{}",
        audited.stdout
    );
    assert!(
        audited.stdout.contains("kills_by_role"),
        "{}",
        audited.stdout
    );
}

#[test]
fn a_changed_readback_fails_the_rerun_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = driver(dir.path(), "run", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = run.join("after-consume.stdout.txt");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""ledger":25}"#), "{text}");
    fs::write(&path, text.replace(r#""ledger":25}"#, r#""ledger":26}"#)).unwrap();
    rehash(&run);
    let line = text
        .lines()
        .position(|l| l.contains(r#""ledger":25}"#))
        .unwrap()
        + 1;

    let audited = audit_rerun(&run, &[]);
    assert_eq!(audited.code, 1, "{}", audited.stdout);
    let want = format!(
        "rerun: after-consume.stdout.txt: line {line} receiver.ledger: recorded 26, rerun 25"
    );
    assert!(audited.stdout.contains(&want), "{}", audited.stdout);
    assert!(
        audited.stdout.ends_with("rerun FAIL: 1 difference\n"),
        "{}",
        audited.stdout
    );

    // The same in --json: the audit's report with the rerun's inside it.
    let audited = audit_rerun(&run, &["--json"]);
    assert_eq!(audited.code, 1, "{}", audited.stdout);
    let value: serde_json::Value = serde_json::from_str(&audited.stdout).unwrap();
    assert!(
        value["problems"].is_array(),
        "the audit's own report: {value}"
    );
    let rerun = &value["rerun"];
    assert_eq!(rerun["ok"], false);
    assert_eq!(rerun["kind"], "driver");
    assert_eq!(
        rerun["differences"],
        serde_json::json!([{
            "file": "after-consume.stdout.txt",
            "at": format!("line {line} receiver.ledger"),
            "recorded": "26",
            "rerun": "25",
        }])
    );
}

#[test]
fn a_changed_row_of_a_kept_database_fails_the_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let (out, run) = driver(dir.path(), "run", &["--keep-db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let db = run.join("db").join("receiver.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE ledger SET balance = balance + 1", [])
        .unwrap();
    drop(conn);
    rehash(&run);
    let audited = audit_rerun(&run, &[]);
    assert_eq!(audited.code, 1, "{}", audited.stdout);
    let named = audited.stdout.lines().any(|l| {
        l.starts_with("rerun: db/receiver.db (rows): line ")
            && l.contains("recorded ledger: contract_id = 'R1', balance = 26")
            && l.contains("rerun ledger: contract_id = 'R1', balance = 25")
    });
    assert!(named, "{}", audited.stdout);
}

#[test]
fn a_directory_without_a_runnable_command_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, file: &str, text: &str| {
        let d = dir.path().join(name);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join(file), text).unwrap();
        d
    };
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let cases = [
        (empty, "not an evidence directory"),
        (dir.path().join("missing"), "does not exist"),
        (
            write("garbled", "processes.json", "{\"command\": [\"crashlab\", "),
            "malformed JSON",
        ),
        (
            write(
                "nocommand",
                "processes.json",
                "{\"lab\": \"14-outbox-inbox\"}",
            ),
            "records no command",
        ),
        (
            write(
                "unknown",
                "processes.json",
                r#"{"command": ["crashlab", "frobnicate", "14"]}"#,
            ),
            "does not parse",
        ),
        (
            write(
                "otherkind",
                "processes.json",
                r#"{"command": ["crashlab", "bench", "14"]}"#,
            ),
            "is not a driver command",
        ),
        (
            write(
                "nolab",
                "processes.json",
                r#"{"command": ["crashlab", "driver", "99", "--out", "x"]}"#,
            ),
            "unknown lab",
        ),
        (
            write(
                "upward",
                "explore.json",
                r#"{"command": ["crashlab", "explore", "14", "--out", ".."]}"#,
            ),
            "does not name a directory below",
        ),
    ];
    for (path, says) in cases {
        let audited = audit_rerun(&path, &[]);
        assert_eq!(
            audited.code, 2,
            "{path:?}: {}{}",
            audited.stdout, audited.stderr
        );
        assert_eq!(audited.stdout, "", "{path:?}");
        assert_eq!(
            audited.stderr.lines().count(),
            1,
            "{path:?}: {}",
            audited.stderr
        );
        assert!(
            audited.stderr.starts_with("crashlab: "),
            "{}",
            audited.stderr
        );
        assert!(
            audited.stderr.contains(says),
            "{path:?}: {}",
            audited.stderr
        );
    }

    // A temporary directory inside DIR is refused before anything runs or is printed.
    let runnable = write(
        "runnable",
        "processes.json",
        r#"{"command": ["crashlab", "driver", "14", "--out", "x"]}"#,
    );
    let tmp = runnable.join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(BIN)
        .args(["audit", "--rerun", runnable.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("lies inside"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0);
    assert!(!runnable.join("x").exists());
}
