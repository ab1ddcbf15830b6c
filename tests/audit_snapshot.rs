//! The audit judges the evidence it read once: a kept database must be sound as SQLite
//! judges it (indexes included), and a file swapped after the audit's walk read it (a FIFO)
//! neither hangs the audit nor changes its verdict.

mod common;
#[path = "tamper/support.rs"]
mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use support::{audit, copy_dir, rehash};

/// A lab 14 run with its databases kept, audited PASS as it is.
fn kept_run(d: &Path) -> std::path::PathBuf {
    let (out, run) = driver(d, "run", &["--keep-db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (code, text) = audit(&run);
    assert_eq!(code, 0, "{text}");
    run
}

/// Change one byte of page `page` (from 1) of a SQLite file: `at` from the page's start.
fn flip(file: &Path, page: u32, at: usize) {
    let mut bytes = fs::read(file).unwrap();
    let size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    bytes[(page as usize - 1) * size + at] ^= 1;
    fs::write(file, bytes).unwrap();
}

/// The root page of an index, and where in it the key of `inbox`'s one row lies.
fn index_key(file: &Path) -> (u32, usize) {
    let conn = rusqlite::Connection::open(file).unwrap();
    let root: u32 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'inbox_applied'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let applied_ms: i64 = conn
        .query_row("SELECT applied_ms FROM inbox", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    let bytes = fs::read(file).unwrap();
    let page = &bytes[(root as usize - 1) * 4096..root as usize * 4096];
    // A millisecond time is stored in six bytes, big-endian.
    let key = &applied_ms.to_be_bytes()[2..];
    let at = page
        .windows(key.len())
        .position(|w| w == key)
        .expect("the index holds the row's key");
    (root, at + key.len() - 1)
}

/// The rows stay as recorded (the logical digest reads tables only), the index lies: the
/// audit names the file and SQLite's own words. So does a page whose header is broken.
#[test]
fn a_kept_database_with_a_corrupt_index_fails_naming_the_file_and_sqlites_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = kept_run(d);
    let (root, key) = index_key(&run.join("db/receiver.db"));

    let bad_key = d.join("bad-key");
    copy_dir(&run, &bad_key);
    flip(&bad_key.join("db/receiver.db"), root, key);
    rehash(&bad_key);
    let (code, text) = audit(&bad_key);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("db/receiver.db")
            && text.contains(
                "SQLite's integrity_check reports: row 1 missing from index inbox_applied"
            ),
        "{text}"
    );

    let bad_page = d.join("bad-page");
    copy_dir(&run, &bad_page);
    // The first byte of a b-tree page is its type: 0x0a, an index leaf, becomes 0x0b.
    flip(&bad_page.join("db/receiver.db"), root, 0);
    rehash(&bad_page);
    let (code, text) = audit(&bad_page);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("db/receiver.db") && text.contains("integrity_check"),
        "{text}"
    );
}

/// An explore run keeps the databases of each broken case: they are held to the same
/// soundness, and a corrupt index in one fails the audit naming that case's file.
#[test]
fn an_explore_cases_kept_database_with_a_corrupt_index_fails_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = crashlab(
        d,
        &[
            "explore",
            "14",
            "--variants",
            "ack-before-apply",
            "--points",
            "consumer",
            "--out",
            "ex",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (code, text) = audit(&d.join("ex"));
    assert_eq!(code, 0, "{text}");
    let kept: Vec<String> = files(&d.join("ex"))
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.ends_with("/db/receiver.db"))
        .collect();
    let rel = kept.first().expect("a broken case kept its receiver.db");
    let file = d.join("ex").join(rel);
    let (root, key) = index_key(&file);
    flip(&file, root, key);
    rehash(&d.join("ex"));
    let (code, text) = audit(&d.join("ex"));
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(rel.as_str()) && text.contains("row 1 missing from index inbox_applied"),
        "{text}"
    );
}

/// Wait (bounded) for `child`; killed and a failure past the bound: an audit reads a run
/// of kilobytes in about a second, so the bound only stops a hang.
fn ended(mut child: std::process::Child, what: &str) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{what}: the audit still ran after 180 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn audit_child(dir: &Path, more: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .arg("audit")
        .args(more)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo touches no memory of ours.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Wait (bounded) until a process closes `file` after reading it: the audit's walk.
fn watch_read(file: &Path) -> impl FnOnce() {
    // SAFETY: plain system calls on a descriptor this function owns.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
    assert!(fd >= 0);
    let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    assert!(unsafe { libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_CLOSE_NOWRITE) } >= 0);
    move || {
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ready = unsafe { libc::poll(&mut poll, 1, 120_000) };
        assert_eq!(ready, 1, "the audit never read the file");
        unsafe { libc::close(fd) };
    }
}

/// database-files.json is replaced by a FIFO right after the walk read it: every later check
/// reads the walk's bytes, so the audit ends, PASS, as the untouched run does. A FIFO named
/// Cargo.toml in DIR is not a checkout to open: it is a problem, and the audit ends.
#[test]
fn a_fifo_swapped_in_after_the_walk_neither_hangs_the_audit_nor_changes_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, run) = driver(d, "run", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let target = run.join("database-files.json");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let read = watch_read(&target);
    let child = audit_child(&run, &[]);
    read();
    fs::rename(&fifo, &target).unwrap();
    let out = ended(child, "a FIFO swapped in");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("PASS"), "{}", stdout(&out));

    let (out, run) = driver(d, "run2", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    mkfifo(&run.join("Cargo.toml"));
    let out = ended(audit_child(&run, &[]), "a FIFO named Cargo.toml");
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("Cargo.toml: is not a plain file"),
        "{}",
        stdout(&out)
    );
}

/// `audit --rerun` compares the recorded files with the rerun's: one the rerun also writes,
/// a FIFO in the recorded directory, is a problem of both audits, never a wait for a writer
/// that will not come.
#[test]
fn a_fifo_in_the_directory_neither_hangs_audit_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, run) = driver(d, "run", &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stdout_file = run.join("after-business.stdout.txt");
    fs::remove_file(&stdout_file).unwrap();
    mkfifo(&stdout_file);
    let out = ended(audit_child(&run, &["--rerun"]), "audit --rerun with a FIFO");
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("after-business.stdout.txt: is not a plain file"),
        "{}",
        stdout(&out)
    );
}
