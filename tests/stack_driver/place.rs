//! A stack test's own place: a directory the `postgres` user may pass through, TMPDIR inside
//! it (where the servers' private directories go), and a mark in the environment of what it
//! runs, so what it started is found by that alone.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::common::{self, BIN};

/// A test's own directory, which the `postgres` user may pass through (PostgreSQL refuses to
/// run as root, so its data directory is the `postgres` user's), with `tmp/` for TMPDIR.
pub struct Place {
    dir: tempfile::TempDir,
    mark: String,
}

impl Place {
    pub fn new(name: &str) -> Place {
        let dir = tempfile::Builder::new()
            .prefix("crashlab-stack-test-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o711)).unwrap();
        let mark = format!("stack-{name}-{}", std::process::id());
        Place { dir, mark }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.path())
            .env("TMPDIR", self.path().join("tmp"))
            .env("CRASHLAB_TEST_MARK", &self.mark)
            .stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .expect("the crashlab binary runs")
    }

    pub fn run_env(&self, args: &[&str], env: (&str, &str)) -> Output {
        self.command(args)
            .env(env.0, env.1)
            .output()
            .expect("the crashlab binary runs")
    }

    /// Live processes this test started: marked in their environment, or running in (or
    /// named with) its directory. A PostgreSQL backend rewrites its environment for its
    /// process title, so its directory (the data directory is its cwd) finds it too.
    pub fn leftovers(&self) -> Vec<String> {
        let root = self.path().to_string_lossy().into_owned();
        let mut found = common::marked_processes(&self.mark);
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) || found.contains(&name) {
                continue;
            }
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            if status.is_empty() || status.contains("State:\tZ") {
                continue;
            }
            let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cwd.starts_with(&root) || cmdline.contains(&root) {
                found.push(format!("{name} {cmdline}"));
            }
        }
        found
    }

    /// Wait (bounded) until nothing the test started is alive; what is left, if anything.
    pub fn settle(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = self.leftovers();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
