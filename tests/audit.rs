//! The audit: the committed archive passes, every kind of tampering fails and names the file,
//! a fresh run passes with --strict-sources, and the logical digest ignores page layout.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

/// SHA-256 of a file's raw bytes, computed here, not by the code under test.
fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("present")
}

fn archive() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("evidence")
        .join("14-outbox-inbox")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for rel in files(from) {
        let target = to.join(&rel);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(from.join(&rel), target).unwrap();
    }
}

fn audit(dir: &Path, more: &[&str]) -> (i32, String) {
    let mut args = vec!["audit", dir.to_str().unwrap()];
    args.extend_from_slice(more);
    let out = crashlab(Path::new("."), &args);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    (code(&out), stdout(&out))
}

/// Rewrite one manifest entry so that only the semantic checks can catch an edit.
fn fix_manifest(dir: &Path, rel: &str) {
    let path = dir.join("manifest.json");
    let mut manifest = json(&path);
    manifest["files"][rel] = serde_json::Value::String(sha256_hex(&dir.join(rel)));
    fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
}

#[test]
fn the_committed_archive_audits_pass() {
    let dir = archive();
    assert!(
        dir.join("manifest.json").is_file(),
        "the archive is committed"
    );
    let (code, out) = audit(&dir, &[]);
    // Sources may differ from the checkout when a later commit changed code without changing
    // what a run writes; that is reported, and a failure only with --strict-sources.
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "PASS: lab 14 (outbox-inbox), 12 processes, 3 crashes, 1 conflict, claims, hashes"
        ),
        "{out}"
    );
    assert!(out.contains("sources: "), "{out}");
}

#[test]
fn a_fresh_run_audits_pass_with_strict_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(dir.path(), "fresh", &[]);
    assert_eq!(code(&output), 0);
    let (code, text) = audit(&out, &["--strict-sources"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("sources: match"), "{text}");
    let json_out = crashlab(Path::new("."), &["audit", out.to_str().unwrap(), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["processes"], 12);
    assert_eq!(report["crashes"], 3);
}

#[test]
fn every_flipped_byte_missing_file_and_added_file_fails_and_is_named() {
    let original = archive();
    let scratch = tempfile::tempdir().unwrap();
    for rel in files(&original) {
        let dir = scratch
            .path()
            .join(format!("flip-{}", rel.to_string_lossy().replace('/', "_")));
        copy_dir(&original, &dir);
        let path = dir.join(&rel);
        let mut bytes = fs::read(&path).unwrap();
        if bytes.is_empty() {
            bytes.push(b'x');
        } else if rel == Path::new("manifest.json") {
            // The middle of its `files` digests: a changed `sources` digest is a note
            // (`sources: differ`), a failure only with --strict-sources (below).
            let files_at = find(&bytes, b"\"files\"");
            let middle = files_at + (bytes.len() - files_at) / 2;
            bytes[middle] ^= 0x01;
        } else {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
        }
        fs::write(&path, bytes).unwrap();
        let (code, out) = audit(&dir, &[]);
        assert_eq!(code, 1, "{}: {out}", rel.display());
        assert!(out.contains("FAIL: "), "{out}");
        if rel != Path::new("manifest.json") {
            assert!(
                out.contains(&*rel.to_string_lossy()),
                "{} not named in: {out}",
                rel.display()
            );
        }
    }

    // A source digest changed: the checkout no longer matches what the manifest says built it.
    let dir = scratch.path().join("sources");
    copy_dir(&original, &dir);
    let path = dir.join("manifest.json");
    let mut manifest = json(&path);
    manifest["sources"]["src/labs/outbox_inbox/lab.rs"] = serde_json::json!("0".repeat(64));
    fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let (code, out) = audit(&dir, &[]);
    let line = out
        .lines()
        .find(|l| l.starts_with("sources: differ: "))
        .unwrap_or("");
    assert!(line.contains("src/labs/outbox_inbox/lab.rs"), "{out}");
    // A note without --strict-sources: nothing else is wrong.
    assert_eq!(code, 0, "{out}");
    let (code, out) = audit(&dir, &["--strict-sources"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("source src/labs/outbox_inbox/lab.rs differs"),
        "{out}"
    );

    let dir = scratch.path().join("deleted");
    copy_dir(&original, &dir);
    fs::remove_file(dir.join("after-consume.stdout.txt")).unwrap();
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("after-consume.stdout.txt: listed in manifest.json but missing"),
        "{out}"
    );

    let dir = scratch.path().join("added");
    copy_dir(&original, &dir);
    fs::write(dir.join("extra.txt"), "slipped in").unwrap();
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("extra.txt: not listed in manifest.json"),
        "{out}"
    );
}

#[test]
fn an_edited_exit_is_caught_by_the_process_check() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("exit");
    copy_dir(&archive(), &dir);
    let path = dir.join("processes.json");
    let mut processes = json(&path);
    let conflict = processes["processes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["step"] == "conflict-consume")
        .unwrap();
    conflict["exit"] = serde_json::json!(0);
    fs::write(&path, serde_json::to_string_pretty(&processes).unwrap()).unwrap();
    fix_manifest(&dir, "processes.json");
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("processes.json: conflict-consume: exit 0, expected 65"),
        "{out}"
    );
    assert!(
        !out.contains("differs from manifest.json"),
        "the manifest was fixed up: only the exit check catches it: {out}"
    );
}

#[test]
fn an_edited_readback_is_caught_by_the_claims_check() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("ledger");
    copy_dir(&archive(), &dir);
    let path = dir.join("final-verify.stdout.txt");
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""ledger":25"#));
    fs::write(&path, text.replace(r#""ledger":25"#, r#""ledger":50"#)).unwrap();
    fix_manifest(&dir, "final-verify.stdout.txt");
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "final-verify.stdout.txt: final-verify: receiver.ledger: expected 25, observed 50"
        ),
        "{out}"
    );
    // The recorded results claim success; the raw output no longer does.
    assert!(out.contains("results.json"), "{out}");
}

#[test]
fn a_crash_line_removed_is_caught() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("crash");
    copy_dir(&archive(), &dir);
    let path = dir.join("publish-crash.stdout.txt");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace("CRASH publisher.after-queue-commit exit=73\n", ""),
    )
    .unwrap();
    fix_manifest(&dir, "publish-crash.stdout.txt");
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(out.contains("publish-crash.stdout.txt: publish-crash: stdout lacks the line 'CRASH publisher.after-queue-commit exit=73'"), "{out}");
}

#[test]
fn a_changed_logical_digest_across_a_readback_is_caught() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("digest");
    copy_dir(&archive(), &dir);
    let path = dir.join("database-files.json");
    let mut rows = json(&path);
    let row = rows
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["after_step"] == "after-consume" && r["file"] == "receiver.db")
        .unwrap();
    row["logical_sha256"] = serde_json::json!("0".repeat(64));
    fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    fix_manifest(&dir, "database-files.json");
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("receiver.db: logical_sha256 changed across readback step after-consume"),
        "{out}"
    );
}

#[test]
fn malformed_truncated_and_foreign_directories_fail_cleanly() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("truncated");
    copy_dir(&archive(), &dir);
    let path = dir.join("processes.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, &text[..text.len() / 3]).unwrap();
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("processes.json: malformed or truncated JSON"),
        "{out}"
    );

    // A directory holding none of the files a run writes is not evidence: one line, exit 2.
    let empty = scratch.path().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("notes.txt"), "not evidence").unwrap();
    let out = crashlab(Path::new("."), &["audit", empty.to_str().unwrap()]);
    assert_eq!(common::code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "crashlab: {} is not a crashlab evidence directory (no manifest.json)\n",
            empty.display()
        )
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    // Evidence that lost its manifest is still evidence: its problems are listed.
    let dir = scratch.path().join("no-manifest");
    copy_dir(&archive(), &dir);
    fs::remove_file(dir.join("manifest.json")).unwrap();
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(out.contains("manifest.json: missing"), "{out}");

    // A path that does not exist is a usage error; a file is no evidence directory.
    let nowhere = scratch.path().join("nowhere");
    let out = crashlab(Path::new("."), &["audit", nowhere.to_str().unwrap()]);
    assert_eq!(common::code(&out), 2);
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    let file = scratch.path().join("file.txt");
    fs::write(&file, "not evidence").unwrap();
    let out = crashlab(Path::new("."), &["audit", file.to_str().unwrap()]);
    assert_eq!(common::code(&out), 2);
    assert!(
        stderr(&out).contains("is not a crashlab evidence directory (not a directory)")
            && stderr(&out).lines().count() == 1,
        "{}",
        stderr(&out)
    );

    let dir = scratch.path().join("lab");
    copy_dir(&archive(), &dir);
    let path = dir.join("processes.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("14-outbox-inbox", "99-nothing", 1)).unwrap();
    fix_manifest(&dir, "processes.json");
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1);
    assert!(out.contains("unknown lab '99-nothing'"), "{out}");
}

#[test]
fn a_moved_crash_study_audits_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = driver(
        dir.path(),
        "study",
        &[
            "--move-crash",
            "consume-crash=consumer.before-receiver-commit",
        ],
    );
    assert_eq!(code(&output), 1);
    let (code, text) = audit(&out, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("study with moved crash consume-crash=consumer.before-receiver-commit"),
        "{text}"
    );
    // Claiming that the study held everywhere is caught.
    let path = out.join("results.json");
    let mut results = json(&path);
    for step in results["steps"].as_array_mut().unwrap() {
        step["ok"] = serde_json::json!(true);
        step["problems"] = serde_json::json!([]);
    }
    results["ok"] = serde_json::json!(true);
    fs::write(&path, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    fix_manifest(&out, "results.json");
    let (code, text) = audit(&out, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("results.json: after-consume: problems recorded []"),
        "{text}"
    );
}

#[test]
fn the_logical_digest_ignores_vacuum_and_page_size() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = crashlab(
        d,
        &[
            "sender",
            "--db",
            "a.db",
            "--generate",
            "200",
            "--seed",
            "7",
            "--batch",
            "50",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    {
        // Copy the rows into a file with another page size, then VACUUM it.
        let conn = rusqlite::Connection::open(d.join("a.db")).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
    }
    fs::copy(d.join("a.db"), d.join("b.db")).unwrap();
    {
        let conn = rusqlite::Connection::open(d.join("b.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA page_size=1024; VACUUM;")
            .unwrap();
        let size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(size, 1024);
    }
    let digest = |name: &str| {
        let out = crashlab(d, &["digest", name]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        let field = |key: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{key}=")).map(str::to_string))
                .unwrap()
        };
        (field("sha256"), field("logical_sha256"))
    };
    let (raw_a, logical_a) = digest("a.db");
    let (raw_b, logical_b) = digest("b.db");
    assert_ne!(raw_a, raw_b, "the pages differ");
    assert_eq!(logical_a, logical_b, "the rows do not");
    {
        let conn = rusqlite::Connection::open(d.join("b.db")).unwrap();
        conn.execute_batch(
            "UPDATE contracts SET amount = amount + 1 WHERE contract_id = 'C000100'",
        )
        .unwrap();
    }
    let (_, logical_changed) = digest("b.db");
    assert_ne!(
        logical_a, logical_changed,
        "one changed value changes the digest"
    );
    let junk = crashlab(d, &["digest", "nothing.db"]);
    assert_eq!(code(&junk), 2);
}

#[test]
fn the_lab13_archive_audits_pass_and_a_nested_edit_is_named() {
    let original = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("evidence")
        .join("13-http-dispatch");
    let (code, out) = audit(&original, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PASS: lab 13 (http-dispatch)"), "{out}");

    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("13");
    copy_dir(&original, &dir);
    let stdout_files: Vec<PathBuf> = files(&dir)
        .into_iter()
        .filter(|p| p.components().count() == 2 && p.to_string_lossy().ends_with(".stdout.txt"))
        .collect();
    assert!(
        !stdout_files.is_empty(),
        "lab 13 keeps its outputs under scenario directories"
    );
    // A readback of the unkeyed counterexample rewritten to claim one effect, manifest fixed up.
    let rel = stdout_files
        .iter()
        .find(|p| {
            let text = fs::read_to_string(dir.join(p)).unwrap();
            p.starts_with("unkeyed-dispatcher-crash")
                && text
                    .lines()
                    .last()
                    .is_some_and(|l| l.starts_with('{') && l.contains("\"effects\":2"))
        })
        .expect("a readback with 2 effects in the unkeyed scenario")
        .clone();
    let path = dir.join(&rel);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replace("\"effects\":2", "\"effects\":1")).unwrap();
    fix_manifest(&dir, &rel.to_string_lossy());
    let (code, out) = audit(&dir, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&*rel.to_string_lossy()),
        "{} not named: {out}",
        rel.display()
    );
}

#[test]
fn a_chaos_run_audits_pass_and_its_claims_are_re_derived_from_its_databases() {
    let dir = tempfile::tempdir().unwrap();
    let out = crashlab(
        dir.path(),
        &[
            "chaos",
            "14",
            "--messages",
            "120",
            "--consumers",
            "2",
            "--kills",
            "6",
            "--seed",
            "5",
            "--out",
            "chaos",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let run = dir.path().join("chaos");
    let (code_ok, text) = audit(&run, &[]);
    assert_eq!(code_ok, 0, "{text}");
    assert!(text.contains("PASS: chaos 14, 120 messages"), "{text}");

    // Claim a lost effect that the databases do not show: caught from db/, not from a copy.
    let edited = dir.path().join("edited");
    copy_dir(&run, &edited);
    let path = edited.join("chaos.json");
    let mut report = json(&path);
    report["check"]["ledger"] = serde_json::json!(report["check"]["ledger"].as_i64().unwrap() + 1);
    fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    fix_manifest(&edited, "chaos.json");
    let (code_bad, text) = audit(&edited, &[]);
    assert_eq!(code_bad, 1, "{text}");
    assert!(text.contains("chaos.json: check.ledger is"), "{text}");

    // A killed process recorded as a clean exit disagrees with kills.json.
    let edited = dir.path().join("exit");
    copy_dir(&run, &edited);
    let path = edited.join("processes.json");
    let mut processes = json(&path);
    let killed = processes["processes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["signal"] == 9)
        .expect("a killed process");
    killed["exit"] = serde_json::json!(0);
    killed["signal"] = serde_json::Value::Null;
    fs::write(&path, serde_json::to_string_pretty(&processes).unwrap()).unwrap();
    fix_manifest(&edited, "processes.json");
    let (code_bad, text) = audit(&edited, &[]);
    assert_eq!(code_bad, 1, "{text}");
    assert!(
        text.contains("processes.json:") && text.contains("exit 0, expected 137"),
        "{text}"
    );
}

#[test]
fn a_symlink_is_a_problem_and_its_target_is_never_opened() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("linked");
    copy_dir(&archive(), &dir);
    // The target is a FIFO with no writer: opening it would block, so an audit that ends at
    // all never opened it.
    let fifo = scratch.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let rel = "after-consume.stdout.txt";
    fs::remove_file(dir.join(rel)).unwrap();
    std::os::unix::fs::symlink(&fifo, dir.join(rel)).unwrap();
    std::os::unix::fs::symlink(scratch.path(), dir.join("outside")).unwrap();
    let mut child = std::process::Command::new(BIN)
        .args(["audit", dir.to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the audit opened a symlink's target (a FIFO) and blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = report["problems"].as_array().unwrap();
    for file in [rel, "outside"] {
        assert!(
            problems.iter().any(|p| p["file"] == file
                && p["problem"] == "is a symlink; evidence holds plain files only"),
            "{file}: {problems:?}"
        );
    }
    assert!(
        report["attested"][0]
            .as_str()
            .unwrap()
            .contains("wall_ms, max_rss_kb"),
        "{report}"
    );
}
