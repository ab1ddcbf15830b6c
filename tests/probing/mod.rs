//! What the probe's tests share: the services a probe is pointed at (lab 13's receiver, the
//! Python example), started as real processes on 127.0.0.1 and killed when dropped, and the
//! probe's evidence read back.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a service may take to announce its port.
const READY_WAIT: Duration = Duration::from_secs(30);

pub struct Service {
    child: Child,
    pub port: u16,
}

impl Service {
    /// `crashlab receiver --mode MODE` with its database `receiver.db` in `dir`.
    pub fn receiver(dir: &Path, mode: &str) -> Service {
        Service::receiver_with(dir, mode, &[])
    }

    /// The receiver with more of its options (`--key-ttl-ms N`).
    pub fn receiver_with(dir: &Path, mode: &str, more: &[&str]) -> Service {
        let mut command = Command::new(crate::common::BIN);
        command.args([
            "receiver",
            "--db",
            "receiver.db",
            "--mode",
            mode,
            "--port-file",
            "receiver.port",
        ]);
        command.args(more);
        Service::start(dir, command, "receiver")
    }

    /// The Python example, `shop.db` in `dir`, with its bug switched on or not.
    pub fn python(dir: &Path, bug: bool) -> Service {
        let mut command = Command::new("python3");
        command.arg(example()).args([
            "--db",
            "shop.db",
            "--port-file",
            "shop.port",
            // A provider slow enough that every racer of the concurrent check is in flight
            // at once even on a busy machine: the bug then shows every time.
            "--provider-ms",
            "200",
        ]);
        if bug {
            command.args(["--bug", "key-after-effect"]);
        }
        Service::start(dir, command, "shop")
    }

    fn start(dir: &Path, mut command: Command, name: &str) -> Service {
        let port_file = dir.join(format!("{name}.port"));
        let _ = fs::remove_file(&port_file);
        let log = fs::File::create(dir.join(format!("{name}.stdout.txt"))).unwrap();
        let err = fs::File::create(dir.join(format!("{name}.stderr.txt"))).unwrap();
        let child = command
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let mut service = Service { child, port: 0 };
        let deadline = Instant::now() + READY_WAIT;
        while Instant::now() < deadline {
            if let Some(port) = fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.trim().parse::<u16>().ok())
            {
                service.port = port;
                return service;
            }
            assert!(
                service.child.try_wait().unwrap().is_none(),
                "{name} ended before it listened: {}",
                fs::read_to_string(dir.join(format!("{name}.stderr.txt"))).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{name} wrote no port within {READY_WAIT:?}");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example's script in the checkout.
pub fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/python-idempotency/server.py")
}

/// Is `tool` on PATH? The tests need python3 and sqlite3 and fail, never skip, without them.
pub fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(found, "{tool} is not installed (.ci/run installs it)");
}

/// Every record of a JSON lines file.
pub fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The exchanges of one check, by step.
pub fn exchange<'a>(all: &'a [Value], check: &str, step: &str) -> &'a Value {
    all.iter()
        .find(|e| e["check"] == check && e["step"] == step)
        .unwrap_or_else(|| panic!("no exchange {check}/{step}"))
}

/// The count an effects reading of a check recorded.
pub fn count(readings: &[Value], check: &str, at: &str) -> i64 {
    readings
        .iter()
        .find(|r| r["check"] == check && r["at"] == at)
        .and_then(|r| r["count"].as_i64())
        .unwrap_or_else(|| panic!("no count {check}/{at}"))
}

/// The verdict row of a check in the probe's table: (verdict, the rest of the row).
pub fn row(stdout: &str, check: &str) -> (String, String) {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(check))
        .unwrap_or_else(|| panic!("no row for {check}:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[2].to_string(), line.to_string())
}

/// Replace a file of an evidence directory and give manifest.json its new digest, as a
/// careful forger would: only the audit's own derivation can catch the change then.
pub fn forge(dir: &Path, rel: &str, text: &str) {
    fs::write(dir.join(rel), text).unwrap();
    super::common::forge_manifest_entry(dir, rel);
}
