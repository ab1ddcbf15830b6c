//! Faults a user meets: a corrupt or read-only file, a full disk, a closed or failing stdout,
//! SIGINT and SIGTERM, a bad `--out`, an armed point never reached, `--move-crash STEP=none`,
//! `--no-trace`. Each ends with its documented exit code and one line, and writes nothing it
//! should not. The faults are real: a flipped page, an immutable file, RLIMIT_FSIZE, a closed
//! pipe, /dev/full, a signal sent to the running binary.

mod common;
#[path = "faults/config.rs"]
mod config;
#[path = "faults/io.rs"]
mod io;
#[path = "faults/signals.rs"]
mod signals;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `"sender --db x"` as arguments.
pub fn w(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Run the binary in `dir` with the words of `line`.
pub fn run(dir: &Path, line: &str) -> Output {
    crashlab(dir, &w(line))
}

/// The one line a failing command prints: exactly one, `crashlab: …`, no panic.
pub fn one_line(output: &Output) -> String {
    let text = stderr(output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {text:?}");
    assert!(lines[0].starts_with("crashlab: "), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    lines[0].to_string()
}

pub fn sha(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(fs::read(path).unwrap()).to_vec()
}

pub const SENDER: &str = "sender --db sender.db --contract R1 --amount 25 --message M1";
pub const VERIFY: &str = "verify --sender sender.db --queue queue.db --receiver receiver.db --json";
pub const PUBLISH: &str = "publisher --sender sender.db --queue queue.db";

/// One contract in `dir/sender.db`.
pub fn sender(dir: &Path) {
    let out = run(dir, SENDER);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_corrupt_table_root_is_refused_before_any_count_or_write() {
    let dir = tempfile::tempdir().unwrap();
    sender(dir.path());
    let db = dir.path().join("sender.db");
    // Page 2 is the contracts table's root: its index still answers count(*).
    let mut bytes = fs::read(&db).unwrap();
    for b in &mut bytes[4096..4112] {
        *b ^= 0xff;
    }
    fs::write(&db, &bytes).unwrap();
    let before = sha(&db);
    let verify = run(dir.path(), VERIFY);
    assert_eq!(code(&verify), 2, "{}", stdout(&verify));
    assert!(one_line(&verify).contains("sender database sender.db is corrupt"));
    assert!(
        !stdout(&verify).contains("\"contracts\""),
        "{}",
        stdout(&verify)
    );
    for line in [
        PUBLISH,
        "sender --db sender.db --contract R2 --amount 5 --message M2",
    ] {
        let out = run(dir.path(), line);
        assert_eq!(code(&out), 2, "{line}: {}", stdout(&out));
        assert!(one_line(&out).contains("sender database sender.db is corrupt"));
        assert_eq!(
            sha(&db),
            before,
            "{line} left the corrupt file byte for byte"
        );
    }
    assert!(
        !dir.path().join("queue.db").exists(),
        "the publisher touched no queue"
    );
}

/// Make `path` unwritable for this process: immutable as root (chmod does not stop root),
/// read-only by its mode otherwise.
fn write_protect(path: &Path, on: bool) {
    // SAFETY: geteuid has no memory effects.
    let (tool, flag) = match (unsafe { libc::geteuid() } == 0, on) {
        (true, true) => ("chattr", "+i"),
        (true, false) => ("chattr", "-i"),
        (false, true) => ("chmod", "444"),
        (false, false) => ("chmod", "644"),
    };
    let status = Command::new(tool).arg(flag).arg(path).status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "{tool} {flag} {} failed",
        path.display()
    );
}

#[test]
fn a_read_only_sender_is_refused_before_the_queue_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    sender(dir.path());
    let db = dir.path().join("sender.db");
    let before = sha(&db);
    write_protect(&db, true);
    let out = run(dir.path(), PUBLISH);
    write_protect(&db, false);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(one_line(&out).contains("sender database sender.db is read-only"));
    assert!(!stdout(&out).contains("COMMITTED"), "{}", stdout(&out));
    assert!(
        !dir.path().join("queue.db").exists(),
        "no delivery, not even a queue file"
    );
    assert_eq!(sha(&db), before);
}

/// A value SQLite stores but the lab cannot read (text that is not UTF-8, an integer column
/// holding text) is a corrupt or foreign file: exit 2 and one line naming it, never exit 1.
#[test]
fn a_value_the_lab_cannot_read_is_bad_input_exit_2() {
    for (edit, line) in [
        (
            "UPDATE outbox SET message_id = CAST(X'FF' AS TEXT)",
            PUBLISH,
        ),
        ("UPDATE outbox SET amount = 'x'", PUBLISH),
    ] {
        let dir = tempfile::tempdir().unwrap();
        sender(dir.path());
        let db = rusqlite::Connection::open(dir.path().join("sender.db")).unwrap();
        db.execute_batch(edit).unwrap();
        drop(db);
        let out = run(dir.path(), line);
        assert_eq!(code(&out), 2, "{edit}: {}", stderr(&out));
        let said = one_line(&out);
        assert!(said.contains("sender database sender.db"), "{edit}: {said}");
    }
}
