//! What a run was asked to do that cannot be done as asked: an `--out` under a file, an armed
//! point never reached, a crash moved to `none`, `--no-trace`.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;
use super::{one_line, run, w, PUBLISH, SENDER, VERIFY};

#[test]
fn an_out_whose_parent_is_a_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("afile"), "x").unwrap();
    for line in [
        "driver 14 --out afile/sub",
        "explore 14 --out afile/sub --work-dir .",
        "chaos 14 --messages 10 --out afile/sub",
    ] {
        let out = run(dir.path(), line);
        assert_eq!(code(&out), 2, "{line}: {}", stderr(&out));
        assert!(one_line(&out).contains("afile is not a directory"));
        assert_eq!(
            files(dir.path()),
            [PathBuf::from("afile")],
            "{line} made nothing"
        );
    }
}

/// An --out no directory can be made at is the user's to change: exit 2 and one line for
/// each, never 74 (an I/O fault of the machine), and nothing made.
#[test]
fn an_out_no_directory_can_be_made_at_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a".repeat(250);
    for (out, said) in [
        ("/proc/x", "creating /proc/x.partial"),
        ("/sys/x", "creating /sys/x.partial"),
        ("/dev/null/x", "/dev/null is not a directory"),
        (
            long.as_str(),
            "output directory name is 250 bytes; at most 247 (its .partial sibling must fit in 255)",
        ),
    ] {
        let out = run(dir.path(), &format!("driver 14 --out {out}"));
        assert_eq!(code(&out), 2, "{out:?}: {}", stderr(&out));
        assert!(one_line(&out).contains(said), "{}", stderr(&out));
        assert!(files(dir.path()).is_empty(), "{out:?} made nothing");
    }
}

#[test]
fn an_armed_point_never_reached_says_not_reached_and_exits_78() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each phase reaches its point fewer times than `@N` asks (one contract, one message).
    for (line, at) in [
        (format!("{SENDER} --crash-at sender.after-commit@5"), "sender.after-commit@5"),
        (
            format!("{PUBLISH} --crash-at publisher.after-mark-sent@2"),
            "publisher.after-mark-sent@2",
        ),
        (
            "consumer --queue queue.db --receiver receiver.db --crash-at consumer.after-inbox-commit"
                .to_string(),
            "consumer.after-inbox-commit@1",
        ),
        (
            "enqueue --queue queue.db --message M2 --amount 5 --crash-at enqueue.after-commit@3"
                .to_string(),
            "enqueue.after-commit@3",
        ),
        (
            "intent --intents intents.db --key K1 --body {} --crash-at intent.after-commit@2"
                .to_string(),
            "intent.after-commit@2",
        ),
    ] {
        let out = run(d, &line);
        assert_eq!(code(&out), 78, "{line}: {}", stderr(&out));
        let text = stdout(&out);
        let last = format!("NOT-REACHED {at}");
        assert_eq!(text.lines().last(), Some(last.as_str()), "{text}");
        assert!(!text.contains("CRASH "), "{text}");
        let said = one_line(&out);
        assert!(said.contains(&format!("the armed crash point {at} was not reached")));
    }
    // The driver reads it as the step's own word.
    let moved = [
        "--move-crash",
        "publish-crash=publisher.after-queue-commit@5",
    ];
    let (out, evidence) = driver(d, "moved", &moved);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let table = stdout(&out);
    assert!(
        table.contains("NOT-REACHED publisher.after-queue-commit@5  <-- FAILED"),
        "{table}"
    );
    let results = json(&evidence.join("results.json"));
    let steps = results["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["step"] == "publish-crash").unwrap();
    assert_eq!(step["observed"]["exit"], 78);
    assert_eq!(step["observed"]["not_reached"], true);
    assert!(
        step["problems"].to_string().contains("never reached"),
        "{step}"
    );
}

#[test]
fn move_crash_none_makes_the_step_expect_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let (out, evidence) = driver(dir.path(), "none", &["--move-crash", "business-crash=none"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("the moved crash (business-crash=none) broke no expectation"));
    let results = json(&evidence.join("results.json"));
    let step = &results["steps"][0];
    assert_eq!(step["step"], "business-crash");
    assert_eq!(step["expected"]["exit"], 0);
    assert_eq!(step["observed"]["exit"], 0);
    assert_eq!(step["ok"], true, "{step}");
    let processes = json(&evidence.join("processes.json"));
    assert_eq!(processes["processes"][0]["expected_exit"], 0);
    let audit = run(dir.path(), "audit none");
    assert_eq!(code(&audit), 0, "{}{}", stdout(&audit), stderr(&audit));
}

fn traced(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("SQL "))
}

#[test]
fn no_trace_silences_the_sql_trace_of_every_role() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let receipts = "--receipts receipts.db --history history.db";
    for line in [
        SENDER.to_string(),
        PUBLISH.to_string(),
        "enqueue --queue queue.db --message M1 --amount 25".to_string(),
        "consumer --queue queue.db --receiver receiver.db".to_string(),
        VERIFY.to_string(),
        "intent --intents intents.db --key K1 --body {}".to_string(),
        format!("dispatch-verify --intents intents.db {receipts} --receiver r13.db --json"),
        "receiver --db r13.db --mode keyed --lifetime-ms 1".to_string(),
    ] {
        let out = run(d, &format!("--no-trace {line}"));
        assert_eq!(code(&out), 0, "{line}: {}", stderr(&out));
        assert!(!traced(&stdout(&out)), "{line} traced:\n{}", stdout(&out));
        // The readbacks trace by default: the flag, not an empty stdout, silenced them.
        if line.contains("verify") {
            assert!(traced(&stdout(&run(d, &line))), "{line}");
        }
    }
    // The dispatcher, against a live receiver (its stdout to a file: it keeps writing).
    let log = fs::File::create(d.join("receiver.stdout")).unwrap();
    let receiver_line = "--no-trace receiver --db r13.db --mode keyed --port-file port";
    let mut receiver = Command::new(BIN)
        .args(w(receiver_line))
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !fs::read_to_string(d.join("receiver.stdout")).is_ok_and(|t| t.contains("READY ")) {
        assert!(Instant::now() < deadline, "no READY line within 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let dispatcher =
        format!("--no-trace dispatcher --intents intents.db {receipts} --port-file port");
    let out = run(d, &dispatcher);
    // SAFETY: kill has no memory effects; the child is ours and not reaped.
    unsafe { libc::kill(receiver.id() as libc::pid_t, libc::SIGTERM) };
    receiver.wait().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("COMMITTED"), "{}", stdout(&out));
    assert!(!traced(&stdout(&out)), "{}", stdout(&out));
    let served = fs::read_to_string(d.join("receiver.stdout")).unwrap();
    assert!(served.contains("COMMITTED") && !traced(&served), "{served}");
}
