//! The servers of one run of a lab on servers: started (or reached) once per run, a fresh set
//! of databases and queues per scenario or case (`stack.json` in its work directory), dropped
//! after it, stopped at the end; and killed and restarted by the server-kill nemesis.
//!
//! One run per process holds them: the session lives in a process-wide slot, so the nemesis
//! (a `&'static dyn Nemesis`, called from the driver or an explore case) reaches the servers
//! without every caller threading them through. The `Session` guard owns the slot: however a
//! run ends (an error, SIGINT), dropping it stops every server it started.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::stack::{QueueType, Server, StackArgs, StackDef};
use crate::engine::LabStack;
use crate::fail;
use crate::stackfile::StackFile;

mod adapter;
pub mod kill;

/// The file of a run on servers, in its evidence: the stack, each server's startup, the kills.
pub const SERVERS: &str = "servers.json";

/// What the engine asks of a set of servers (`crate::servers::Servers` is the one).
pub trait Fleet: Send {
    fn prepare(&self, def: &StackDef, tag: &str, work: &Path) -> Result<StackFile>;
    fn release(&self, file: &StackFile) -> Result<()>;
    fn private(&self) -> bool;
    fn kill(&mut self, server: Server) -> Result<()>;
    fn restart(&mut self, server: Server) -> Result<()>;
    /// Make the run's queues once so that they survive a broker kill; every later `prepare`
    /// names them (purged) instead of fresh ones.
    fn settle(&mut self, def: &StackDef, tag: &str) -> Result<()>;
    /// Per server: version, port, private or given, start wall_ms, restarts (no path).
    fn startups(&self) -> serde_json::Value;
    fn stop(self: Box<Self>) -> Result<()>;
}

/// A kill the nemesis made, for `servers.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Kill {
    pub server: Server,
    pub point: String,
    /// From the SIGKILL to the server accepting connections again.
    pub restart_wall_ms: f64,
}

struct Slot {
    fleet: Box<dyn Fleet>,
    kills: Vec<Kill>,
}

static SLOT: Mutex<Option<Slot>> = Mutex::new(None);

fn slot() -> std::sync::MutexGuard<'static, Option<Slot>> {
    SLOT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The servers of a run; dropping it stops them.
pub struct Session {
    def: &'static StackDef,
    /// `--queue-type`, for `servers.json`.
    queue_type: QueueType,
    /// Whether the run's queues were settled (made once, surviving a broker kill).
    settled: bool,
    /// The servers' private directory (data, sockets, logs): never inside the evidence.
    dir: tempfile::TempDir,
}

/// Refuse what a lab's stack cannot take: server URLs for a lab on files, a broker URL for a
/// stack without one, `--server` without server-kill is said by `crash_mode`.
pub fn check(lab: &LabStack, args: &StackArgs) -> Result<()> {
    let stack = crate::engine::stack::name_of(lab.stack);
    let refuse = |flag: &str, what: &str| {
        Err(fail::usage(format!(
            "{flag}: lab {} on stack {stack} uses no {what} (--stack names a stack with one)",
            lab.id()
        )))
    };
    match lab.stack {
        None if args.pg_url.is_some() => refuse("--pg-url", "PostgreSQL"),
        None if args.amqp_url.is_some() => refuse("--amqp-url", "RabbitMQ"),
        None if args.queue_type.is_some() => refuse("--queue-type", "RabbitMQ queue"),
        Some(def) if def.databases.is_empty() && args.pg_url.is_some() => {
            refuse("--pg-url", "PostgreSQL")
        }
        Some(def) if def.queues.is_empty() && args.amqp_url.is_some() => {
            refuse("--amqp-url", "RabbitMQ")
        }
        Some(def) if def.queues.is_empty() && args.queue_type.is_some() => {
            refuse("--queue-type", "RabbitMQ queue")
        }
        _ => Ok(()),
    }
}

impl Session {
    /// Start (or reach) the servers `lab` needs; None for a lab on files.
    pub fn start(lab: &LabStack, args: &StackArgs) -> Result<Option<Session>> {
        check(lab, args)?;
        let Some(def) = lab.stack else {
            return Ok(None);
        };
        let dir = crate::owner::tempdir("servers").context("creating the servers' directory")?;
        let mut fleet = adapter::start(def, args, dir.path())?;
        // A run that kills the broker runs every case on queues that survived a kill before
        // the first case: a queue lost because its declare was not yet durable would read
        // as a message the design lost (docs/lab-14-stack.md).
        let settled = args.server == Some(Server::Rabbitmq) && !def.queues.is_empty();
        if settled {
            fleet.settle(def, &tag("q", 0))?;
        }
        let mut held = slot();
        // One run per process: a second session would share the nemesis's slot.
        assert!(held.is_none(), "one run's servers at a time");
        *held = Some(Slot {
            fleet,
            kills: Vec::new(),
        });
        Ok(Some(Session {
            def,
            queue_type: args.queue_type.unwrap_or_default(),
            settled,
            dir,
        }))
    }

    pub fn def(&self) -> &'static StackDef {
        self.def
    }

    /// Fresh databases and queues for one scenario or case, `stack.json` in `work`; `tag`
    /// (`fleet::tag`) names them.
    pub fn prepare(&self, tag: &str, work: &Path) -> Result<StackFile> {
        debug_assert!(tag
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
        let held = slot();
        let slot = held.as_ref().expect("a session holds its servers");
        slot.fleet
            .prepare(self.def, tag, work)
            .with_context(|| format!("preparing the servers for {tag}"))
    }

    pub fn release(&self, file: &StackFile) -> Result<()> {
        let held = slot();
        let slot = held.as_ref().expect("a session holds its servers");
        slot.fleet.release(file)
    }

    /// `servers.json`: the stack, the servers' startups, the kills made.
    pub fn record(&self) -> serde_json::Value {
        let held = slot();
        let slot = held.as_ref().expect("a session holds its servers");
        let mut record = serde_json::json!({
            "stack": self.def.name,
            "servers": slot.fleet.startups(),
            "kills": slot.kills,
        });
        if !self.def.queues.is_empty() {
            record["queue_type"] = self.queue_type.name().into();
            record["queues_settled"] = self.settled.into();
        }
        record
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::engine::evidence::write_json(dir, SERVERS, &self.record())
    }

    /// Stop every server; errors said (the guard's drop would swallow them).
    pub fn finish(self) -> Result<()> {
        let taken = slot().take();
        let result = match taken {
            Some(slot) => slot.fleet.stop(),
            None => Ok(()),
        };
        drop(self);
        result
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(slot) = slot().take() {
            // An error or a signal unwinds here: the servers go all the same.
            let _ = slot.fleet.stop();
        }
        let _ = &self.dir;
    }
}

/// SIGKILL the whole server and start it again, ready, before the next step (the nemesis).
pub fn kill_and_restart(server: Server, point: &str) -> Result<()> {
    let mut held = slot();
    let slot = held
        .as_mut()
        .ok_or_else(|| fail::usage("--crash-mode server-kill: this run has no servers"))?;
    // A server the user gave is refused before the run (`check_kill`), and by the fleet.
    let started = Instant::now();
    slot.fleet.kill(server)?;
    slot.fleet.restart(server)?;
    slot.kills.push(Kill {
        server,
        point: point.to_string(),
        restart_wall_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
    });
    Ok(())
}

/// A short tag for a scenario's or case's databases and queues (`s4711_3`): unique among
/// the runs on one server (a server the user gave may serve several at once).
pub fn tag(kind: &str, index: usize) -> String {
    format!("{kind}{}_{index}", std::process::id())
}

/// `--server S` with server-kill: the lab runs on a stack with S, and S is private.
pub fn check_kill(lab: &LabStack, args: &StackArgs, server: Server) -> Result<()> {
    check_kill_by(lab, args, server, "--crash-mode server-kill")
}

/// As `check_kill`, for the option `what` that asks for the kills (chaos: `--server-kills N`).
pub fn check_kill_by(lab: &LabStack, args: &StackArgs, server: Server, what: &str) -> Result<()> {
    let Some(def) = lab.stack else {
        // The hint names only stacks this lab has: a --stack that would be refused is no hint.
        let stacks: Vec<&str> = lab
            .lab
            .stacks
            .iter()
            .filter_map(|l| l.stack.map(|s| s.name))
            .collect();
        let hint = match stacks.is_empty() {
            true => "it runs on SQLite files only".to_string(),
            false => format!("give --stack {}", stacks.join("|")),
        };
        return Err(fail::usage(format!(
            "{what}: lab {} on stack sqlite has no servers ({hint})",
            lab.id()
        )));
    };
    if !server.in_stack(def) {
        return Err(fail::usage(format!(
            "--server {}: stack {} has no such server",
            server.name(),
            def.name
        )));
    }
    let given = match server {
        Server::Postgres => args.pg_url.is_some().then_some("--pg-url"),
        Server::Rabbitmq => args.amqp_url.is_some().then_some("--amqp-url"),
    };
    if let Some(flag) = given {
        return Err(fail::usage(format!(
            "{what} --server {}: that server is yours ({flag}); crashlab kills only servers it started",
            server.name()
        )));
    }
    check_quorum_kill(args, server)
}

/// How many restarts of `server` beyond its kills a run may show: a run that kills the broker
/// settles its queues first (`Session::start`), one restart per attempt, at least one.
pub fn settle_restarts(settles: bool, server: Server) -> std::ops::RangeInclusive<usize> {
    if settles && server == Server::Rabbitmq {
        1..=crate::servers::SETTLE_WAIT_MS.len()
    } else {
        0..=0
    }
}

/// A broker kill on a quorum queue is refused: after the restart the queue answers a count of
/// 0 until its Raft leader is elected, and nothing short of taking a message tells "empty"
/// from "no leader yet", so recovery and the checker would read a held design as broken
/// (measured; docs/lab-14-stack.md, "On a quorum queue").
pub fn check_quorum_kill(args: &StackArgs, server: Server) -> Result<()> {
    if server == Server::Rabbitmq
        && args.queue_type == Some(crate::engine::stack::QueueType::Quorum)
    {
        return Err(fail::usage(
            "--queue-type quorum with --server rabbitmq kills: not supported (a restarted quorum queue reads empty until its leader is elected; see docs/lab-14-stack.md)",
        ));
    }
    Ok(())
}

/// The stores of a lab on servers, as argv names them; none for a lab on files.
pub fn server_stores(lab: &LabStack) -> &'static [&'static str] {
    match lab.stack {
        Some(_) => lab.databases,
        None => &[],
    }
}

/// The stores the audit's replay rebuilds: every one but a queue (a broker's state is no
/// SQL; its digest is its message count, checked elsewhere).
pub fn replayed_stores(lab: &LabStack) -> &'static [&'static str] {
    let Some(def) = lab.stack else {
        return lab.databases;
    };
    if def.queues.is_empty() {
        return lab.databases;
    }
    static CACHE: Mutex<Vec<(usize, &'static [&'static str])>> = Mutex::new(Vec::new());
    let key = lab as *const LabStack as usize;
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, stores)) = cache.iter().find(|(k, _)| *k == key) {
        return stores;
    }
    // One list per lab for the process's life: leaked once, never again.
    let stores: Vec<&'static str> = lab
        .databases
        .iter()
        .copied()
        .filter(|d| !def.queues.contains(d))
        .collect();
    let stores: &'static [&'static str] = Vec::leak(stores);
    cache.push((key, stores));
    stores
}

/// A fresh tag for a case's databases (`c4711_0`, `c4711_1`, …): unique in the process.
pub fn next_tag() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    tag("c", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}
