//! What the servers tests share: their directories, a running `crashlab servers` driven
//! through stdin and stdout, and the scan of `/proc` for processes left behind.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{code, stderr, BIN};

/// Waiting for a server's line: RabbitMQ boots in about 5 s, far more on a loaded machine.
pub const LINE_WAIT: Duration = Duration::from_secs(180);
/// Waiting for processes to be gone after their parent's death.
pub const GONE_WAIT: Duration = Duration::from_secs(30);

/// A test's directories: `tmp` is TMPDIR of crashlab (its servers' private directories land
/// there), `work` is --work. Both are traversable by the postgres user, which PostgreSQL runs
/// as when the tests run as root.
pub struct Place {
    _base: tempfile::TempDir,
    pub tmp: PathBuf,
    pub work: PathBuf,
}

pub fn place() -> Place {
    let base = tempfile::tempdir().unwrap();
    let (tmp, work) = (base.path().join("tmp"), base.path().join("work"));
    for dir in [base.path(), &tmp, &work] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    Place {
        _base: base,
        tmp,
        work,
    }
}

/// A running `crashlab servers`: its stdin to send commands, its stdout lines as they come.
pub struct Servers {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pub errors: mpsc::Receiver<String>,
}

pub fn servers(place: &Place, args: &[&str]) -> Servers {
    let mut child = Command::new(BIN)
        .arg("servers")
        .args(args)
        .arg("--work")
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .current_dir(&place.work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = |read: Box<dyn std::io::Read + Send>| {
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(read).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        receive
    };
    let lines = pipe(Box::new(child.stdout.take().unwrap()));
    let errors = pipe(Box::new(child.stderr.take().unwrap()));
    let stdin = child.stdin.take();
    Servers {
        child,
        stdin,
        lines,
        errors,
    }
}

impl Servers {
    /// The next stdout line, which must start with `prefix`.
    pub fn expect(&mut self, prefix: &str) -> String {
        match self.lines.recv_timeout(LINE_WAIT) {
            Ok(line) if line.starts_with(prefix) => line,
            Ok(line) => panic!(
                "expected '{prefix}…', got '{line}'; stderr: {}",
                self.stderr()
            ),
            Err(e) => panic!("no '{prefix}' line ({e}); stderr: {}", self.stderr()),
        }
    }

    /// Read lines up to `ready`; the stack file it names.
    pub fn ready(&mut self) -> serde_json::Value {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            assert!(Instant::now() < deadline, "no ready line");
            let line = self.expect("");
            if let Some(path) = line.strip_prefix("ready ") {
                return crate::common::json(Path::new(path));
            }
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn stderr(&self) -> String {
        self.errors.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// Close stdin and wait (bounded) for the exit code.
    pub fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(50));
                return (status.code().unwrap_or(-1), self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "servers did not end after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // A failed assertion must not leave the servers running: they die with this child.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Live processes (pid, name) whose command line or current directory is under `root`:
/// every process of a private server is, whoever its parent is now.
pub fn processes_under(root: &Path) -> Vec<(u32, String)> {
    let root = root.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if status.is_empty() || status.contains("State:\tZ") {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
        if cmdline.contains(&root) || cwd.to_string_lossy().starts_with(&root) {
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push((pid, name.trim().to_string()));
        }
    }
    found
}

pub fn names_under(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = processes_under(root).into_iter().map(|(_, n)| n).collect();
    names.sort();
    names.dedup();
    names
}

/// Wait (bounded) until no process runs under `root`; the ones left otherwise.
pub fn gone_under(root: &Path) -> Vec<(u32, String)> {
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        let left = processes_under(root);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// psql (the user's client) on `url`: (exit code, stdout).
pub fn psql(url: &str, sql: &str) -> (i32, String) {
    let output = Command::new("psql")
        .args([url, "-X", "-At", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .expect("psql runs");
    (code(&output), crate::common::stdout(&output))
}

pub const OURS: &str = "SELECT datname FROM pg_database WHERE datname LIKE 'crashlab%' ORDER BY 1";

pub fn amqp_port(stack: &serde_json::Value) -> u16 {
    let url = stack["amqp_url"].as_str().unwrap();
    let after = url.rsplit_once(':').unwrap().1;
    after.split('/').next().unwrap().parse().unwrap()
}

/// Does something accept a TCP connection on 127.0.0.1:`port`?
pub fn accepts(port: u16) -> bool {
    let addr = ([127, 0, 0, 1], port).into();
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
}

/// A port nothing listens on (bound, then let go).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `crashlab servers …` to its end with stdin closed: (exit code, stderr).
pub fn servers_once(place: &Place, args: &[&str], env: &[(&str, &Path)]) -> (i32, String) {
    let mut command = Command::new(BIN);
    command
        .arg("servers")
        .args(args)
        .arg("--work")
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (code(&output), stderr(&output))
}

pub fn nothing_left(place: &Place) {
    assert_eq!(processes_under(&place.tmp), vec![]);
    assert_eq!(
        std::fs::read_dir(&place.tmp).unwrap().count(),
        0,
        "no private dir left"
    );
    assert_eq!(
        std::fs::read_dir(&place.work).unwrap().count(),
        0,
        "no stack.json"
    );
}

/// The shared memory of the private PostgreSQL clusters under `root`: the
/// `/dev/shm/PostgreSQL.*` files their processes map, and the SysV segment ids their
/// `postmaster.pid` names.
pub fn pg_shared_memory(root: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    for (pid, name) in processes_under(root) {
        if name != "postgres" {
            continue;
        }
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        for line in maps.lines() {
            if let Some(at) = line.find("/dev/shm/PostgreSQL.") {
                files.push(PathBuf::from(&line[at..]));
            }
        }
    }
    files.sort();
    files.dedup();
    let mut segments = Vec::new();
    for dir in std::fs::read_dir(root).unwrap().flatten() {
        let pid_file = dir.path().join("postgres/data/postmaster.pid");
        let text = std::fs::read_to_string(pid_file).unwrap_or_default();
        if let Some(id) = text
            .lines()
            .nth(6)
            .and_then(|l| l.split_whitespace().nth(1))
        {
            segments.push(id.to_string());
        }
    }
    (files, segments)
}

/// Which of `files` and SysV `segments` still exist.
pub fn shared_memory_left(files: &[PathBuf], segments: &[String]) -> Vec<String> {
    let mut left: Vec<String> = files
        .iter()
        .filter(|f| f.exists())
        .map(|f| f.display().to_string())
        .collect();
    let table = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
    for id in segments {
        if table
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(id.as_str()))
        {
            left.push(format!("SysV segment {id}"));
        }
    }
    left
}
