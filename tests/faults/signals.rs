//! SIGINT and SIGTERM halfway through a run: every child killed, the work directories and the
//! `.partial` removed, one line, exit 130.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;
use super::{one_line, w};

/// Start `line` with a private TMPDIR (and `wd` for --work-dir) and a marker in its
/// environment; send `signal` once `halfway` says so; then check that it cleaned up.
fn interrupt(line: &str, signal: i32, halfway: impl Fn(&Path) -> bool) {
    let dir = tempfile::tempdir().unwrap();
    let (tmp, wd) = (dir.path().join("tmp"), dir.path().join("wd"));
    fs::create_dir(&tmp).unwrap();
    fs::create_dir(&wd).unwrap();
    let mark = format!("faults-{}-{signal}-{line}", std::process::id());
    let mut child = Command::new(BIN)
        .args(w(line))
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .env("CRASHLAB_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !halfway(dir.path()) {
        assert!(child.try_wait().unwrap().is_none(), "{line} ended first");
        assert!(Instant::now() < deadline, "{line} never got halfway");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill has no memory effects; the child is ours and not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.signal(),
        None,
        "{line}: handled, not killed by it"
    );
    assert_eq!(code(&out), 130, "{line}: {}", stderr(&out));
    let name = match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "SIGTERM",
    };
    let said = one_line(&out);
    assert!(
        said.starts_with(&format!(
            "crashlab: interrupted by {name}; removed out.partial"
        )),
        "{said}"
    );
    // Nothing left: no `.partial`, no work directory in TMPDIR or in --work-dir.
    for (what, at) in [
        ("the run", dir.path()),
        ("TMPDIR", &tmp),
        ("--work-dir", &wd),
    ] {
        let mut left: Vec<String> = fs::read_dir(at)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.retain(|name| !(at == dir.path() && (name == "tmp" || name == "wd")));
        assert!(left.is_empty(), "{line} left {left:?} in {what}");
    }
    assert!(
        marked_processes(&mark).is_empty(),
        "{line}: a child outlived the run"
    );
}

fn files_under(dir: &Path) -> usize {
    if dir.is_dir() {
        files(dir).len()
    } else {
        0
    }
}

#[test]
fn sigint_to_the_driver_kills_its_children_and_removes_what_it_wrote() {
    // Lab 13 writes some 80 step outputs; 20 is well before its end.
    interrupt("driver 13 --out out", libc::SIGINT, |d| {
        files_under(&d.join("out.partial")) >= 20
    });
}

#[test]
fn sigint_to_explore_kills_its_children_and_removes_what_it_wrote() {
    // 162 cases of about 5 processes each; 40 files is a few cases in.
    interrupt(
        "explore 14 --out out --work-dir wd --jobs 2",
        libc::SIGINT,
        |d| files_under(&d.join("out.partial/cases")) >= 40,
    );
}

#[test]
fn sighup_to_explore_kills_its_children_and_removes_what_it_wrote() {
    // A closed terminal or a dropped ssh session: the work directories in /dev/shm hold RAM.
    interrupt(
        "explore 14 --out out --work-dir wd --jobs 2",
        libc::SIGHUP,
        |d| files_under(&d.join("out.partial/cases")) >= 40,
    );
}

#[test]
fn under_nohup_sighup_leaves_the_run_going() {
    // nohup sets SIGHUP to ignored: the run must keep that, not catch it.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("nohup")
        .arg(BIN)
        .args(w("driver 13 --out out"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while files_under(&dir.path().join("out.partial")) < 20 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the driver ended first"
        );
        assert!(Instant::now() < deadline, "the driver never got halfway");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill has no memory effects; the child is ours and not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(dir.path().join("out/manifest.json").is_file());
}

#[test]
fn sigterm_to_chaos_kills_its_children_and_removes_what_it_wrote() {
    interrupt(
        "chaos 14 --messages 20000 --kills 20 --out out",
        libc::SIGTERM,
        |d| files_under(&d.join("out.partial/logs")) >= 6,
    );
}

/// The one entry of `dir` whose name starts with `prefix`, if any.
fn entry_starting(dir: &Path, prefix: &str) -> Option<std::path::PathBuf> {
    fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
}

#[test]
fn sigterm_to_audit_rerun_stops_the_rerun_and_removes_its_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let made = crashlab(dir.path(), &w("driver 13 --out run"));
    assert_eq!(code(&made), 0, "{}", stdout(&made));
    let mark = format!("faults-rerun-{}", std::process::id());
    let mut child = Command::new(BIN)
        .args(w("audit --rerun run"))
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .env("CRASHLAB_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Halfway: the rerun's driver has written 20 files of its evidence.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let partial = entry_starting(&tmp, "crashlab-rerun-").map(|t| t.join("run/run.partial"));
        if partial.is_some_and(|p| files_under(&p) >= 20) {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the rerun ended first");
        assert!(Instant::now() < deadline, "the rerun never got halfway");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill has no memory effects; the child is ours and not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), None, "handled, not killed by it");
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    let said = one_line(&out);
    assert!(
        said.starts_with("crashlab: interrupted by SIGTERM"),
        "{said}"
    );
    let left: Vec<String> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "the rerun left {left:?} in TMPDIR");
    assert!(
        marked_processes(&mark).is_empty(),
        "a child outlived the rerun"
    );
}
