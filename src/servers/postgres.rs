//! PostgreSQL: a private cluster (`initdb` + `postgres` on a free port of 127.0.0.1, its
//! socket and data in the run's directory), or a server the user gave by URL.
//!
//! `postgres` runs directly, not through `pg_ctl`: `pg_ctl` daemonizes it, and a daemon is
//! out of reach of PR_SET_PDEATHSIG, so it would outlive a crashlab that was SIGKILLed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::process::{self, Launcher};
use super::ready::Waited;
use super::{binaries, ports};
use crate::fail;

pub use super::redact::redact;

/// The superuser of a private cluster (initdb -U), trusted on 127.0.0.1 and its socket.
pub const USER: &str = "crashlab";
/// `initdb` of an empty cluster takes about a second; this bounds a stuck one.
const INITDB_WAIT_MS: u64 = 60_000;
/// From spawn to the first accepted connection (about 0.1 s idle, seconds on a busy machine).
const READY_WAIT_MS: u64 = 30_000;
/// A connection attempt to a given or private server.
const CONNECT_TIMEOUT_MS: u64 = 5_000;

/// A private cluster.
pub struct Private {
    bin: PathBuf,
    /// Owned by the server's user; holds `data/`, the socket and the log.
    home: PathBuf,
    pub port: u16,
    settings: Vec<(String, String)>,
    /// (uid, gid) the server runs as: `postgres` when crashlab runs as root, which initdb and
    /// postgres refuse.
    user: Option<(u32, u32)>,
    child: Option<Child>,
}

/// Why a start failed: the port was taken (start again on another), or anything else.
pub enum StartError {
    PortTaken,
    Other(anyhow::Error),
}

impl Private {
    /// `initdb` a cluster under `dir/postgres`; nothing runs yet.
    pub fn init(dir: &Path, settings: &[(&str, &str)], launcher: &Launcher) -> Result<Private> {
        let bin = binaries::postgres_bin()?;
        let user = binaries::server_user()?;
        let home = dir.join("postgres");
        std::fs::create_dir(&home).with_context(|| format!("creating {}", home.display()))?;
        if let Some((uid, gid)) = user {
            // The server's user must own its directories and traverse to them.
            binaries::let_traverse(dir)?;
            std::os::unix::fs::chown(&home, Some(uid), Some(gid))
                .with_context(|| format!("giving {} to the postgres user", home.display()))?;
        }
        let log = std::fs::File::create(home.join("initdb.log"))?;
        // initdb forks the postgres that builds the cluster: the group goes with crashlab.
        let mut command = process::group_dies_with_parent(&bin.join("initdb"));
        command
            .args([
                "--no-sync",
                "--no-instructions",
                "-A",
                "trust",
                "-E",
                "UTF8",
            ])
            .args(["--locale=C", "-U", USER, "-D"])
            .arg(home.join("data"))
            .env("LC_ALL", "C")
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        as_user(&mut command, user);
        let mut child = launcher
            .spawn(command)
            .with_context(|| format!("starting {}", bin.join("initdb").display()))?;
        let status = wait_exit(&mut child, INITDB_WAIT_MS)?;
        if !status.success() {
            let log = tail(&home.join("initdb.log"));
            let message = format!("initdb failed ({status}): {log}");
            // A full disk is an I/O error (74) as everywhere else; any other failure means
            // the server cannot be had here (69).
            return Err(if log.contains("No space left on device") {
                fail::io(message)
            } else {
                fail::unavailable(message)
            });
        }
        Ok(Private {
            bin,
            home,
            port: 0,
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            user,
            child: None,
        })
    }

    /// Start `postgres` on `port` and wait until it accepts connections (bounded).
    pub fn start(&mut self, port: u16, launcher: &Launcher) -> Result<(), StartError> {
        assert!(self.child.is_none(), "one postmaster at a time");
        self.port = port;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.home.join("postgres.log"))
            .map_err(|e| StartError::Other(e.into()))?;
        let log2 = log.try_clone().map_err(|e| StartError::Other(e.into()))?;
        let mut command = Command::new(self.bin.join("postgres"));
        command
            .arg("-D")
            .arg(self.home.join("data"))
            .arg("-k")
            .arg(&self.home)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"]);
        for (name, value) in &self.settings {
            command.arg("-c").arg(format!("{name}={value}"));
        }
        command
            .env("LC_ALL", "C")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        as_user(&mut command, self.user);
        // SIGQUIT, not SIGKILL, when crashlab dies: PostgreSQL's immediate shutdown, which
        // ends the backends and removes the cluster's shared memory (a SysV segment and the
        // files of /dev/shm/PostgreSQL.*) that a SIGKILLed postmaster would leave behind.
        process::die_with_parent(&mut command, rustix::process::Signal::QUIT);
        let child = launcher
            .spawn(command)
            .map_err(|e| StartError::Other(anyhow::Error::new(e).context("starting postgres")))?;
        self.child = Some(child);
        let url = self.url("postgres");
        let child = self.child.as_mut().expect("started above");
        let waited = super::ready::wait(child, READY_WAIT_MS, 20, true, || {
            connect(&url, 1_000).is_ok()
        })
        .map_err(StartError::Other)?;
        match waited {
            Waited::Ready => Ok(()),
            Waited::Exited(status) => {
                self.child = None;
                let log = tail(&self.home.join("postgres.log"));
                if !ports::free(port) || log.contains("Address already in use") {
                    return Err(StartError::PortTaken);
                }
                Err(StartError::Other(fail::unavailable(format!(
                    "postgres exited while starting ({status}): {log}"
                ))))
            }
            // SIGINT or SIGTERM while the server boots: stop waiting, and kill it.
            Waited::Interrupted(signal) => {
                let _ = self.kill();
                Err(StartError::Other(super::interrupted("postgres", signal)))
            }
            Waited::TimedOut => {
                let _ = self.kill();
                Err(StartError::Other(fail::unavailable(format!(
                    "postgres did not accept connections within {READY_WAIT_MS} ms: {}",
                    tail(&self.home.join("postgres.log"))
                ))))
            }
        }
    }

    /// The URL of database `db` on this cluster.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// The postmaster's pid, while it runs.
    pub fn pid(&self) -> Option<libc::pid_t> {
        self.child.as_ref().map(|c| c.id() as libc::pid_t)
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL the postmaster and every backend, and wait until all are gone: a backend still
    /// attached to the old shared memory makes the next start refuse the data directory.
    ///
    /// A SIGKILLed postmaster cannot remove its shared memory: its SysV segment and its
    /// dynamic segments (`/dev/shm/PostgreSQL.*`, a megabyte of RAM each) would stay for
    /// good once the data directory is gone. They are noted before the kill (the segment's id
    /// from `postmaster.pid`, the files from the processes' memory maps) and removed once
    /// every process is gone, when nothing can be attached any more.
    pub fn kill(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let root = child.id() as i32;
        let files = super::shm::dynamic_segments(&process::tree(root));
        let segment = super::shm::sysv_segment(&self.home.join("data").join("postmaster.pid"));
        process::kill_tree(&mut child)?;
        super::shm::remove(&files, segment);
        Ok(())
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

fn as_user(command: &mut Command, user: Option<(u32, u32)>) {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = user {
        command.uid(uid).gid(gid);
    }
}

/// Wait (bounded) for a short-lived child; killed and an error past the bound.
fn wait_exit(child: &mut Child, wait_ms: u64) -> Result<std::process::ExitStatus> {
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            process::kill_tree(child)?;
            return Err(fail::failed(format!("initdb still ran after {wait_ms} ms")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last lines of a server's log, on one line, for an error message.
pub fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" | ")
}

/// A connection, handshake included, within `timeout_ms`. The client's own connect timeout
/// bounds only the TCP connect: a port that accepts and never answers (another program on
/// it, a stuck server) would hang the handshake. So it runs on a thread of its own, waited
/// for at most `timeout_ms`; past that the thread is left to end when the peer closes.
pub fn connect(url: &str, timeout_ms: u64) -> Result<postgres::Client> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| fail::usage(format!("{}: not a PostgreSQL URL: {e}", redact(url))))?;
    config.connect_timeout(Duration::from_millis(timeout_ms));
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("crashlab-pg-connect".into())
        .spawn(move || {
            let _ = send.send(config.connect(postgres::NoTls));
        })
        .context("starting a connection thread")?;
    match receive.recv_timeout(Duration::from_millis(timeout_ms)) {
        Ok(connected) => Ok(connected?),
        Err(_) => Err(anyhow::anyhow!(
            "no PostgreSQL handshake within {timeout_ms} ms"
        )),
    }
}

/// Reach a server the user gave: 69 naming it when it cannot be reached.
pub fn reach(url: &str) -> Result<String> {
    let mut client = connect(url, CONNECT_TIMEOUT_MS).map_err(|e| {
        if fail::exit_code(&e) == fail::EXIT_USAGE {
            return e;
        }
        fail::unavailable(format!(
            "cannot reach PostgreSQL at {} (--pg-url): {}",
            redact(url),
            fail::one_line(&e)
        ))
    })?;
    version(&mut client)
}

pub fn version(client: &mut postgres::Client) -> Result<String> {
    let row = client.query_one("SHOW server_version", &[])?;
    Ok(row.get::<_, String>(0))
}

/// Open an administrative connection to `url` (a server crashlab started or was given).
pub fn admin(url: &str) -> Result<postgres::Client> {
    connect(url, CONNECT_TIMEOUT_MS).map_err(|e| {
        fail::unavailable(format!(
            "cannot reach PostgreSQL at {}: {}",
            redact(url),
            fail::one_line(&e)
        ))
    })
}

/// Create database `name` (a `crashlab_` name), dropping a leftover of the same name first.
pub fn create_database(client: &mut postgres::Client, name: &str) -> Result<()> {
    assert!(
        super::names::ours(name),
        "crashlab touches only its own names: {name}"
    );
    drop_database(client, name)?;
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\" STRATEGY FILE_COPY"))
        .with_context(|| format!("creating database {name}"))
}

/// Drop database `name` (a `crashlab_` name), ending its sessions (a crashed role's backend
/// may still hold one).
pub fn drop_database(client: &mut postgres::Client, name: &str) -> Result<()> {
    assert!(
        super::names::ours(name),
        "crashlab touches only its own names: {name}"
    );
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .with_context(|| format!("dropping database {name}"))
}

/// `url` with its database replaced by `db`; the query (`?sslmode=…`) kept.
pub fn database_url(url: &str, db: &str) -> Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| fail::usage(format!("{}: not a postgres:// URL", redact(url))))?;
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or_default();
    let mut out = format!("{scheme}://{authority}/{db}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_keeps_the_server_and_the_query() {
        assert_eq!(
            database_url("postgres://u:p@h:5/x?sslmode=disable", "crashlab_a_b").unwrap(),
            "postgres://u:p@h:5/crashlab_a_b?sslmode=disable"
        );
        assert_eq!(
            database_url("postgresql://h", "crashlab_a").unwrap(),
            "postgresql://h/crashlab_a"
        );
        assert!(database_url("h:5/x", "crashlab_a").is_err());
    }
}
