//! RabbitMQ: a private node (its own node name, ports, Erlang distribution port, port mapper
//! and directories under the run's directory), or a broker the user gave by URL.
//!
//! Two things keep a private node from outliving crashlab:
//! - our own foreground `epmd -port N`, started first: otherwise the node starts
//!   `epmd -daemon`, which detaches and outlives everything;
//! - `NOTIFY_SOCKET` set (to a path where nothing listens): the `rabbitmq-server` script then
//!   `exec`s the Erlang VM instead of forking it under a shell, so `beam.smp` is our child and
//!   keeps the PR_SET_PDEATHSIG armed before exec. Its helpers (`erl_child_setup`,
//!   `inet_gethost`, the disk monitor's shell) exit when the VM's pipes close.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::postgres::{tail, StartError};
use super::process::{self, Launcher};
use super::ready::Waited;
use super::{binaries, ports};
use crate::fail;

/// From spawn to the first AMQP connection (about 5 s idle; more on a loaded machine).
const READY_WAIT_MS: u64 = 90_000;
/// From spawn of `epmd` to its port accepting.
const EPMD_WAIT_MS: u64 = 10_000;
/// One AMQP connection attempt (TCP connect and the AMQP handshake).
const CONNECT_TIMEOUT_MS: u64 = 5_000;

/// Nodes this process started, for their names.
static NODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub struct Private {
    script: PathBuf,
    home: PathBuf,
    node: String,
    /// AMQP, Erlang distribution, epmd.
    pub port: u16,
    dist_port: u16,
    epmd_port: u16,
    epmd: Option<Child>,
    child: Option<Child>,
    pub version: String,
}

impl Private {
    /// Lay out the node's directories under `dir/rabbitmq`; nothing runs yet.
    pub fn init(dir: &Path) -> Result<Private> {
        let script = binaries::rabbitmq_server()?;
        // Checked now, so that a missing one fails before anything starts.
        binaries::epmd()?;
        let home = dir.join("rabbitmq");
        for sub in ["", "mnesia", "log", "home"] {
            let path = home.join(sub);
            std::fs::create_dir_all(&path)
                .with_context(|| format!("creating {}", path.display()))?;
        }
        std::fs::write(home.join("enabled_plugins"), "[].\n")?;
        let version = binaries::rabbitmq_version(&script);
        Ok(Private {
            script,
            home,
            // Unique on this host: the pid, and a count for a process with several nodes.
            node: format!(
                "crashlab-{}-{}@localhost",
                std::process::id(),
                NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            port: 0,
            dist_port: 0,
            epmd_port: 0,
            epmd: None,
            child: None,
            version,
        })
    }

    /// Start `epmd` and the node on `ports` (AMQP, distribution, epmd) and wait until the
    /// node takes an AMQP connection (bounded).
    pub fn start(&mut self, ports_: [u16; 3], launcher: &Launcher) -> Result<(), StartError> {
        assert!(self.child.is_none() && self.epmd.is_none());
        [self.port, self.dist_port, self.epmd_port] = ports_;
        self.start_epmd(launcher)?;
        self.start_node(launcher)
    }

    fn start_epmd(&mut self, launcher: &Launcher) -> Result<(), StartError> {
        let epmd = binaries::epmd().map_err(StartError::Other)?;
        let mut command = Command::new(epmd);
        command
            .args(["-port", &self.epmd_port.to_string()])
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        process::die_with_parent(&mut command, rustix::process::Signal::KILL);
        let child = launcher
            .spawn(command)
            .map_err(|e| StartError::Other(anyhow::Error::new(e).context("starting epmd")))?;
        self.epmd = Some(child);
        let port = self.epmd_port;
        let epmd = self.epmd.as_mut().expect("started above");
        let waited = super::ready::wait(epmd, EPMD_WAIT_MS, 10, false, || ports::accepts(port))
            .map_err(StartError::Other)?;
        match waited {
            Waited::Ready => Ok(()),
            // It exits at once when another epmd has the port.
            Waited::Exited(_) => {
                self.epmd = None;
                Err(StartError::PortTaken)
            }
            Waited::Interrupted(_) | Waited::TimedOut => {
                let _ = self.kill_all();
                Err(StartError::Other(fail::unavailable(format!(
                    "epmd did not listen within {EPMD_WAIT_MS} ms"
                ))))
            }
        }
    }

    /// Start the node (epmd already runs) and wait until it is ready.
    pub fn start_node(&mut self, launcher: &Launcher) -> Result<(), StartError> {
        assert!(self.child.is_none() && self.epmd.is_some());
        let config = self.home.join("rabbitmq.conf");
        std::fs::write(
            &config,
            format!(
                "listeners.tcp.default = 127.0.0.1:{}\nloopback_users = none\n",
                self.port
            ),
        )
        .map_err(|e| StartError::Other(e.into()))?;
        let log_path = self.home.join("log").join("server.out");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| StartError::Other(e.into()))?;
        let log2 = log.try_clone().map_err(|e| StartError::Other(e.into()))?;
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let mut command = Command::new(&self.script);
        command
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home.join("home"))
            .env("LC_ALL", "C.UTF-8")
            .env("NOTIFY_SOCKET", self.home.join("notify"))
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("ERL_EPMD_PORT", self.epmd_port.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}",
            )
            .env("RABBITMQ_MNESIA_BASE", self.home.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", self.home.join("log"))
            .env("RABBITMQ_CONFIG_FILE", &config)
            .env(
                "RABBITMQ_ENABLED_PLUGINS_FILE",
                self.home.join("enabled_plugins"),
            )
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        process::die_with_parent(&mut command, rustix::process::Signal::KILL);
        let child = launcher.spawn(command).map_err(|e| {
            StartError::Other(anyhow::Error::new(e).context("starting rabbitmq-server"))
        })?;
        self.child = Some(child);
        let url = self.url();
        let port = self.port;
        let child = self.child.as_mut().expect("started above");
        // The listener opens at the end of the boot: a TCP accept is nearly ready.
        let waited = super::ready::wait(child, READY_WAIT_MS, 50, true, || {
            ports::accepts(port) && reach(&url).is_ok()
        })
        .map_err(StartError::Other)?;
        match waited {
            Waited::Ready => Ok(()),
            Waited::Exited(status) => {
                self.child = None;
                let log = tail(&log_path);
                if !ports::free(self.port)
                    || !ports::free(self.dist_port)
                    || log.contains("eaddrinuse")
                {
                    return Err(StartError::PortTaken);
                }
                Err(StartError::Other(fail::unavailable(format!(
                    "rabbitmq-server exited while starting ({status}): {log}"
                ))))
            }
            // SIGINT or SIGTERM while the node boots (seconds, more under load): stop
            // waiting at once; the node is killed on the way out.
            Waited::Interrupted(signal) => {
                let _ = self.kill_node();
                Err(StartError::Other(super::interrupted("rabbitmq", signal)))
            }
            Waited::TimedOut => {
                let _ = self.kill_node();
                Err(StartError::Other(fail::unavailable(format!(
                    "RabbitMQ did not take an AMQP connection within {READY_WAIT_MS} ms: {}",
                    tail(&log_path)
                ))))
            }
        }
    }

    /// Start the node again after a kill, on the same ports and data (epmd too, if it died).
    pub fn restart(&mut self, launcher: &Launcher) -> Result<(), StartError> {
        assert!(self.child.is_none(), "killed before a restart");
        if self.epmd.is_none() {
            self.start_epmd(launcher)?;
        }
        self.start_node(launcher)
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    /// The node's and epmd's pids, while they run.
    pub fn pids(&self) -> Vec<libc::pid_t> {
        [&self.child, &self.epmd]
            .into_iter()
            .flatten()
            .map(|c| c.id() as libc::pid_t)
            .collect()
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL the node (the VM and its helpers) and wait until all are gone; epmd stays, as
    /// it would on a machine whose broker crashed.
    pub fn kill_node(&mut self) -> Result<()> {
        match self.child.take() {
            Some(mut child) => process::kill_tree(&mut child),
            None => Ok(()),
        }
    }

    /// The node and epmd.
    pub fn kill_all(&mut self) -> Result<()> {
        let node = self.kill_node();
        let epmd = match self.epmd.take() {
            Some(mut child) => process::kill_tree(&mut child),
            None => Ok(()),
        };
        node.and(epmd)
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = self.kill_all();
    }
}

/// Run `future` on a runtime of its own (the servers' calls are few and short).
pub(super) fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the AMQP client's runtime")?;
    Ok(runtime.block_on(future))
}

pub(super) async fn connect(url: &str) -> Result<lapin::Connection> {
    let connecting = lapin::Connection::connect(url, lapin::ConnectionProperties::default());
    match tokio::time::timeout(Duration::from_millis(CONNECT_TIMEOUT_MS), connecting).await {
        Ok(connected) => Ok(connected?),
        Err(_) => Err(anyhow::anyhow!(
            "no AMQP handshake within {CONNECT_TIMEOUT_MS} ms"
        )),
    }
}

/// Open and close one AMQP connection.
pub fn reach(url: &str) -> Result<()> {
    block_on(async {
        let connection = connect(url).await?;
        let _ = connection.close(200, "crashlab: reached".into()).await;
        Ok(())
    })?
}

/// Reach a broker the user gave: 69 naming it when it cannot be reached.
pub fn reach_given(url: &str) -> Result<()> {
    // A URL that names no broker is bad input (2), not a broker that is down (69).
    url.parse::<lapin::uri::AMQPUri>().map_err(|e| {
        fail::usage(format!(
            "--amqp-url {}: not an AMQP URL: {e}",
            super::postgres::redact(url)
        ))
    })?;
    reach(url).map_err(|e| {
        fail::unavailable(format!(
            "cannot reach RabbitMQ at {} (--amqp-url): {}",
            super::postgres::redact(url),
            fail::one_line(&e)
        ))
    })
}
