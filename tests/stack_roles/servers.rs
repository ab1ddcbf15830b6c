//! `crashlab servers …` in the background for the lab's tests: started, waited for, told to
//! kill and restart a server, stopped when dropped.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::common::{self, code, readback, stderr, BIN};
use crashlab::labs::outbox_inbox::roles::Verify;
use crashlab::labs::outbox_inbox::stack::Stack;
use crashlab::role::{Argv, Role};

/// How long the servers may take to be ready, or to answer a kill or a restart.
const SERVERS_WAIT: Duration = Duration::from_secs(120);

/// `crashlab servers …` running in the background: its stdin open (closing it stops the
/// servers), its stdout lines read on a thread.
pub struct Servers {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    dir: tempfile::TempDir,
}

impl Servers {
    pub fn start(args: &[&str]) -> Servers {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .arg("servers")
            .args(args)
            .arg("--work")
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("crashlab servers starts");
        let out = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut servers = Servers {
            child,
            stdin,
            lines,
            dir,
        };
        servers.wait_for("ready ");
        assert!(servers.dir.path().join("stack.json").is_file());
        servers
    }

    pub fn work(&self) -> &Path {
        self.dir.path()
    }

    /// Wait (bounded) for a line starting with `prefix`.
    pub fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + SERVERS_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => continue,
                Err(e) => panic!("crashlab servers: no '{prefix}' line: {e}"),
            }
        }
    }

    /// SIGKILL a server and start it again (the `servers` command's stdin commands).
    pub fn kill_and_restart(&mut self, server: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "kill {server}").unwrap();
        stdin.flush().unwrap();
        self.wait_for(&format!("killed {server}"));
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "restart {server}").unwrap();
        stdin.flush().unwrap();
        self.wait_for(&format!("restarted {server}"));
    }

    /// The URL of logical database `name`.
    pub fn url(&self, name: &str) -> String {
        let file = common::json(&self.work().join("stack.json"));
        file["postgres"][name].as_str().unwrap().to_string()
    }

    pub fn run(&self, argv: Argv) -> Output {
        let words = argv.into_vec();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        common::crashlab(self.work(), &words)
    }

    pub fn verify(&self) -> serde_json::Value {
        let output = self.run(Verify::of(Stack::Servers, None).argv());
        assert_eq!(code(&output), 0, "verify: {}", stderr(&output));
        readback(&output)
    }
}

impl Drop for Servers {
    /// End of stdin: the servers are released and stopped; wait (bounded) for that.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + SERVERS_WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
