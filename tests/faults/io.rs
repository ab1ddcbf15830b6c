//! A full disk (RLIMIT_FSIZE: EFBIG, as ENOSPC, with no mount), a failing stdout (/dev/full)
//! and a closed one (a pipe whose reader is gone).

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::common::*;
use super::{one_line, sender, w, PUBLISH, VERIFY};

/// A command whose files may grow to `bytes` at most: EFBIG instead of SIGXFSZ past it.
fn size_limited(dir: &Path, line: &str, bytes: u64) -> Command {
    let mut command = Command::new(BIN);
    command.args(w(line)).current_dir(dir).stdin(Stdio::null());
    // SAFETY: signal and setrlimit are async-signal-safe; nothing else runs in the child.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

#[test]
fn a_role_on_a_full_disk_exits_74_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let line = "--no-trace sender --db sender.db --generate 3000";
    let out = size_limited(dir.path(), line, 64 * 1024).output().unwrap();
    assert_eq!(code(&out), 74, "{}", stderr(&out));
    assert!(one_line(&out).contains("sender database sender.db"));
}

#[test]
fn a_failed_stdout_write_ends_the_role_with_74() {
    let dir = tempfile::tempdir().unwrap();
    sender(dir.path());
    for line in [VERIFY, PUBLISH] {
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(BIN)
            .args(w(line))
            .current_dir(dir.path())
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(code(&out), 74, "{line}: {}", stderr(&out));
        assert!(one_line(&out).contains("writing stdout failed"));
    }
}

#[test]
fn a_failed_events_write_ends_the_role_with_74_naming_the_events_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(w(
            "sender --db sender.db --contract C1 --amount 5 --message M1",
        ))
        .current_dir(dir.path())
        .env("CRASHLAB_EVENTS", "/dev/full")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&out), 74, "{}", stderr(&out));
    let line = one_line(&out);
    assert!(line.contains("writing the events file failed"), "{line}");
}

/// Run with stdout a pipe whose reader is gone before anything is written (`| head -0`).
/// Run with a stdout whose reading end is closed before the child starts, so its first write
/// meets EPIPE whatever the timing (closing it after the spawn races a fast command).
fn closed_stdout(dir: &Path, line: &str) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(BIN)
        .args(w(line))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stderr_does_not_stop_a_run_that_prints_progress_there() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(w("chaos 14 --messages 2000 --kills 5 --out run"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("PASS"), "{}", stdout(&out));
    assert!(dir.path().join("run/manifest.json").is_file());
}

#[test]
fn a_closed_stdout_pipe_ends_a_report_quietly_after_the_run_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let out = closed_stdout(dir.path(), "driver 13 --out run");
    assert_eq!(code(&out), 141, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "quiet, no panic");
    // The evidence is complete before the report is printed.
    assert!(dir.path().join("run/manifest.json").is_file());
    assert!(!dir.path().join("run.partial").exists());
    for line in ["points", "audit run", "driver 14 --out run14"] {
        let out = closed_stdout(dir.path(), line);
        assert_eq!(code(&out), 141, "{line}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{line}: quiet, no panic");
    }
}

#[test]
fn chaos_on_a_full_disk_stops_after_repeated_failed_starts_and_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let line = "chaos 14 --messages 5000 --kills 0 --timeout-ms 30000";
    let out = size_limited(dir.path(), line, 128 * 1024)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(code(&out), 74, "{}", stdout(&out));
    let said = one_line(&out);
    assert!(
        said.contains("failed 5 starts in a row, the last: exit 74 (an I/O error)"),
        "{said}"
    );
    assert!(!said.contains("quiescence"), "{said}");
    assert_eq!(
        fs::read_dir(&tmp).unwrap().count(),
        0,
        "work directory removed"
    );
}

#[test]
fn a_full_disk_under_the_driver_stops_the_run_with_74_not_a_failed_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = size_limited(dir.path(), "driver 14 --out run", 16 * 1024)
        .output()
        .unwrap();
    assert_eq!(code(&out), 74, "{}", stdout(&out));
    let said = one_line(&out);
    assert!(said.contains("ended with an I/O error (exit 74"), "{said}");
    assert!(said.contains("disk full"), "{said}");
    // Not a protocol verdict: no table claims that the design failed.
    assert!(!stdout(&out).contains("FAIL:"), "{}", stdout(&out));
    assert!(!dir.path().join("run").exists());
}
