//! The point protocol's clients, each run as a real process of its language: Python, a shell
//! script through `crashlab point`, Rust (this test binary run again), and Go where `go` is
//! installed. Each announces `a.step` three times; armed at `a.step@2` it crashes there in
//! the mode asked, after its `crash` event, and the third announcement never happens; in
//! `hang` mode it stays after its `crash` event until it is killed.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::BIN;

/// Run `command` armed at `at` (or not armed) in `mode`, with its events in `dir`: its exit
/// status (128 + signal when killed) and its events, each line a JSON value.
fn run(mut command: Command, dir: &Path, at: Option<&str>, mode: &str) -> (i32, Vec<String>) {
    let events = dir.join(format!("{}-{mode}.events.jsonl", at.is_some()));
    let _ = std::fs::remove_file(&events);
    command
        .env("CRASHLAB_EVENTS", &events)
        .env("CRASHLAB_CRASH_MODE", mode);
    match at {
        Some(at) => command.env("CRASHLAB_CRASH_AT", at),
        None => command.env_remove("CRASHLAB_CRASH_AT"),
    };
    let status = command
        .stdin(Stdio::null())
        .status()
        .expect("the client runs");
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let text = std::fs::read_to_string(&events).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "{text}");
    let lines = text.lines().map(str::to_string).collect();
    (code, lines)
}

fn point(hit: u32) -> String {
    format!(r#"{{"event":"point","point":"a.step","hit":{hit}}}"#)
}

/// What every client must do, in every mode.
fn speaks_the_protocol(make: &dyn Fn() -> Command, dir: &Path) {
    let (code, events) = run(make(), dir, None, "exit");
    assert_eq!(code, 0);
    assert_eq!(events, vec![point(1), point(2), point(3)]);
    for (mode, exit) in [("exit", 73), ("abort", 134), ("kill", 137)] {
        let (code, events) = run(make(), dir, Some("a.step@2"), mode);
        assert_eq!(code, exit, "mode {mode}");
        let crash = format!(r#"{{"event":"crash","point":"a.step","hit":2,"mode":"{mode}"}}"#);
        let values: Vec<serde_json::Value> = events
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let wanted: Vec<serde_json::Value> = [point(1), point(2), crash]
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(values, wanted, "mode {mode}");
    }
    // Hang: the crash event, then the client waits, still running, until it is killed.
    let events = dir.join("hang.events.jsonl");
    let _ = std::fs::remove_file(&events);
    let mut command = make();
    let mut child = command
        .env("CRASHLAB_EVENTS", &events)
        .env("CRASHLAB_CRASH_MODE", "hang")
        .env("CRASHLAB_CRASH_AT", "a.step@2")
        .stdin(Stdio::null())
        // Its own group, killed whole: the shell's `crashlab point` is the one that hangs.
        .process_group(0)
        .spawn()
        .expect("the client runs");
    let crash = r#"{"event":"crash","point":"a.step","hit":2,"mode":"hang"}"#;
    let parsed = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let wanted = parsed(&[point(1), point(2), crash.to_string()].join("\n"));
    // Bounded: the crash event within 30 s (a cold interpreter on a busy machine).
    let began = std::time::Instant::now();
    while parsed(&std::fs::read_to_string(&events).unwrap_or_default()) != wanted {
        assert!(
            began.elapsed().as_secs() < 30,
            "no crash event in hang mode"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited before its crash event"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "a hung client is still running"
    );
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(parsed(&std::fs::read_to_string(&events).unwrap()), wanted);
    // A point never named at its hit: no crash.
    let (code, events) = run(make(), dir, Some("a.step@4"), "exit");
    assert_eq!((code, events.len()), (0, 3));
    // A name without @HIT is its first hit.
    let (code, events) = run(make(), dir, Some("a.step"), "exit");
    assert_eq!((code, events.len()), (73, 2), "{events:?}");
    assert_eq!(events[0], point(1));
}

#[test]
fn the_python_client_speaks_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python");
    let script = "import crashlab_point as c\nfor _ in range(3): c.point('a.step')\n";
    let make = || {
        let mut command = Command::new("python3");
        command.args(["-c", script]).env("PYTHONPATH", &clients);
        command
    };
    speaks_the_protocol(&make, dir.path());
}

#[test]
fn a_shell_script_speaks_it_through_crashlab_point() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!("for i in 1 2 3; do {BIN} point a.step || exit $?; done\n");
    let make = || {
        let mut command = Command::new("sh");
        command.args(["-c", &script]);
        command
    };
    speaks_the_protocol(&make, dir.path());
    let refused = common::crashlab(dir.path(), &["point", "a b"]);
    assert_eq!(common::code(&refused), 2);
    assert!(common::stderr(&refused).contains("a point's name has no spaces"));
}

#[test]
fn the_rust_client_speaks_the_protocol() {
    if std::env::var_os("CLIENT_CHILD").is_some() {
        for _ in 0..3 {
            crashlab_point::point("a.step");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let make = || {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "the_rust_client_speaks_the_protocol",
                "--test-threads=1",
            ])
            .env("CLIENT_CHILD", "1")
            .stdout(Stdio::null());
        command
    };
    speaks_the_protocol(&make, dir.path());
}

#[test]
fn the_go_client_speaks_the_protocol_where_go_is_installed() {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("go is not installed: the Go client is not run here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/go");
    let main = dir.path().join("main");
    std::fs::create_dir(&main).unwrap();
    std::fs::write(
        main.join("go.mod"),
        format!(
            "module demo\n\ngo 1.19\n\nrequire crashlabpoint v0.0.0\n\nreplace crashlabpoint => {}\n",
            client.display()
        ),
    )
    .unwrap();
    std::fs::write(
        main.join("main.go"),
        "package main\n\nimport \"crashlabpoint\"\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tcrashlabpoint.Point(\"a.step\")\n\t}\n}\n",
    )
    .unwrap();
    let built = Command::new("go")
        .args(["build", "-o", "demo", "."])
        .current_dir(&main)
        .env("GOFLAGS", "-mod=mod")
        .status()
        .unwrap();
    assert!(built.success(), "the Go client builds");
    let exe = main.join("demo");
    speaks_the_protocol(&|| Command::new(&exe), dir.path());
}

/// Every client is one file under 60 lines, so a user reads it whole.
#[test]
fn every_client_is_one_short_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "clients/python/crashlab_point.py",
        "clients/go/crashlabpoint.go",
        "clients/rust/src/lib.rs",
    ] {
        let lines = std::fs::read_to_string(root.join(file))
            .unwrap()
            .lines()
            .count();
        assert!(lines < 60, "{file}: {lines} lines");
    }
}
