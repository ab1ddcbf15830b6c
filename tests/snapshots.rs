//! Snapshots that cannot race, and kept databases that an ordinary `sqlite3` read leaves
//! alone: runs under CPU load audit PASS, and so do `--keep-db` runs after `sqlite3` reads.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{code, crashlab, stdout};

/// Two threads that spin until dropped: the load under which snapshots used to race.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start(n: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x: u64 = 0;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn audit_pass(dir: &Path) {
    let out = crashlab(dir.parent().unwrap(), &["audit", dir.to_str().unwrap()]);
    assert_eq!(
        code(&out),
        0,
        "audit of {} failed:\n{}",
        dir.display(),
        stdout(&out)
    );
}

#[test]
fn lab13_runs_under_cpu_load_audit_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let _busy = Busy::start(2);
    for i in 0..5 {
        let name = format!("r{i}");
        let out = crashlab(tmp.path(), &["driver", "13", "--out", &name]);
        assert_eq!(code(&out), 0, "driver 13 run {i}:\n{}", stdout(&out));
        audit_pass(&tmp.path().join(&name));
    }
}

/// Rows taken while a background step was alive name it, and only then.
#[test]
fn rows_name_the_background_steps_frozen_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "13", "--out", "r"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let rows = common::json(&tmp.path().join("r/database-files.json"));
    let rows = rows.as_array().unwrap();
    let frozen = |scenario: &str, step: &str| -> Vec<String> {
        let row = rows
            .iter()
            .find(|r| r["scenario"] == scenario && r["after_step"] == step)
            .unwrap_or_else(|| panic!("a row for {scenario}/{step}"));
        row["frozen"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    // The receiver is a background step: alive (frozen) for the dispatcher's snapshot.
    assert_eq!(
        frozen("keyed-dispatcher-crash", "dispatch-crash"),
        ["receiver"]
    );
    // After every process has ended, nothing is frozen.
    assert!(frozen("keyed-dispatcher-crash", "<end>").is_empty());
    // The housekeeping wal-index is not recorded: any reader rewrites it.
    assert!(rows
        .iter()
        .all(|r| !r["file"].as_str().unwrap().ends_with("-shm")));
}

fn sqlite3_reads(db_dir: &Path) -> usize {
    let mut read = 0;
    for entry in walk(db_dir) {
        if entry.extension().is_some_and(|e| e == "db") {
            let status = Command::new("sqlite3")
                .arg(&entry)
                .arg("select count(*) from sqlite_schema")
                .stdout(std::process::Stdio::null())
                .status()
                .expect("sqlite3 runs (the README's test command installs it)");
            assert!(status.success(), "sqlite3 read {}", entry.display());
            read += 1;
        }
    }
    read
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    common::files(dir)
        .into_iter()
        .map(|p| dir.join(p))
        .collect()
}

fn keep_db_survives_sqlite3(lab: &str, databases_min: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let _busy = Busy::start(2);
    let out = crashlab(tmp.path(), &["driver", lab, "--keep-db", "--out", "k"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let dir = tmp.path().join("k");
    audit_pass(&dir);
    // One file per kept database: no side file an ordinary reader would create or remove.
    let kept = walk(&dir.join("db"));
    assert!(
        kept.iter()
            .all(|p| p.extension().is_some_and(|e| e == "db")),
        "{kept:?}"
    );
    assert!(sqlite3_reads(&dir.join("db")) >= databases_min);
    audit_pass(&dir);
    // The audit can still fail: a real change to a kept database is caught.
    let victim = kept.iter().find(|p| p.ends_with("receiver.db")).unwrap();
    let status = Command::new("sqlite3")
        .arg(victim)
        .arg("create table extra(x)")
        .status()
        .unwrap();
    assert!(status.success());
    let out = crashlab(tmp.path(), &["audit", "k"]);
    assert_eq!(
        code(&out),
        1,
        "a written kept database fails: {}",
        stdout(&out)
    );
}

#[test]
fn lab14_keep_db_audits_pass_after_sqlite3_reads() {
    keep_db_survives_sqlite3("14", 3);
}

#[test]
fn lab13_keep_db_audits_pass_after_sqlite3_reads() {
    keep_db_survives_sqlite3("13", 20);
}
