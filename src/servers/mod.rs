//! The servers a lab on a stack needs: PostgreSQL and RabbitMQ, private to a run (started
//! under a directory the caller owns, on free ports of 127.0.0.1) or given by URL.
//!
//! No private server outlives the `Servers` value nor the process that holds it: every
//! server process is spawned with PR_SET_PDEATHSIG (from one long-lived thread,
//! `process::Launcher`), and `Drop` kills and waits for them all. On a given server crashlab
//! creates and drops only its own `crashlab_` names, and never kills nor restarts it.

pub mod binaries;
pub mod command;
pub mod names;
pub mod ports;
pub mod postgres;
mod prepare;
// The audit bounds the broker restarts a run's queue settling may make.
pub use prepare::SETTLE_WAIT_MS;
pub mod process;
pub mod queues;
pub mod rabbitmq;
mod ready;
mod redact;
pub mod shm;
mod start;

/// The error of a start given up because SIGINT or SIGTERM arrived: exit 130, as every
/// interrupted command.
fn interrupted(server: &str, signal: libc::c_int) -> anyhow::Error {
    anyhow::Error::new(crate::fail::Failure {
        code: crate::fail::EXIT_INTERRUPTED,
        message: format!(
            "interrupted by signal {signal} while {server} was starting; nothing of it is left"
        ),
    })
}

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::engine::stack::QueueType;
use crate::fail;
use postgres::StartError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Postgres,
    Rabbitmq,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Postgres => "postgres",
            Kind::Rabbitmq => "rabbitmq",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "postgres" => Some(Kind::Postgres),
            "rabbitmq" => Some(Kind::Rabbitmq),
            _ => None,
        }
    }
}

/// Which servers a run needs, and which of them the user already has.
#[derive(Debug, Default, Clone, Copy)]
pub struct Want<'a> {
    pub postgres: bool,
    pub rabbitmq: bool,
    /// `postgres -c NAME=VALUE` for a private cluster (StackDef::pg_settings).
    pub pg_settings: &'a [(&'a str, &'a str)],
    /// Servers the user already has: reached, never started, killed or changed beyond the
    /// databases and queues crashlab creates (names starting `crashlab_`).
    pub pg_url: Option<&'a str>,
    pub amqp_url: Option<&'a str>,
    /// The type of the queues crashlab declares (`prepare`, `settle`) and writes into
    /// `stack.json` for the roles.
    pub queue_type: QueueType,
}

impl<'a> Want<'a> {
    /// What a lab's stack needs: PostgreSQL when it names databases, RabbitMQ when it names
    /// queues, each private unless its URL is given.
    pub fn of(
        def: &'a crate::engine::stack::StackDef,
        pg_url: Option<&'a str>,
        amqp_url: Option<&'a str>,
    ) -> Want<'a> {
        Want {
            postgres: !def.databases.is_empty(),
            rabbitmq: !def.queues.is_empty(),
            pg_settings: def.pg_settings,
            pg_url,
            amqp_url,
            queue_type: QueueType::Classic,
        }
    }
}

/// One server's start, for the evidence.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Startup {
    /// `postgres` or `rabbitmq`.
    pub server: &'static str,
    pub version: String,
    /// The port on 127.0.0.1 of a private server; None for a given one.
    pub port: Option<u16>,
    pub private: bool,
    /// From the first spawn (initdb for PostgreSQL) to the first accepted connection; for a
    /// given server, the first connection.
    pub start_wall_ms: u64,
    /// Each restart after a kill: from spawn to ready.
    pub restart_wall_ms: Vec<u64>,
}

enum Pg {
    Private(postgres::Private),
    Given(String),
}

enum Mq {
    Private(rabbitmq::Private),
    Given(String),
}

/// The servers of a run. Drop kills whatever it started, and waits for it.
pub struct Servers {
    // Fields drop in this order: the servers before the thread that spawned them.
    pg: Option<(Pg, Startup)>,
    mq: Option<(Mq, Startup)>,
    launcher: process::Launcher,
    queue_type: QueueType,
    /// Logical queue -> the run's one queue of that name, once `settle` made it: every
    /// `prepare` then names it (purged) instead of a fresh one.
    settled: Option<BTreeMap<String, String>>,
    /// With settled quorum queues: an empty queue of the run's own, settled with them, whose
    /// answering a purge after a restart says the node's Raft leaders are back.
    probe: Option<String>,
}

/// A scoped thread's result; its panic goes on in this thread.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn since_ms(start: Instant) -> u64 {
    start.elapsed().as_millis() as u64
}

impl Servers {
    /// Start private servers under `dir` (a directory the caller owns and removes, under one
    /// the `postgres` user may traverse when crashlab runs as root), or reach the given ones.
    /// Missing binaries: exit 69 naming the install command; an unreachable URL: 69; a port
    /// in use: another port (bounded retries).
    pub fn start(want: &Want, dir: &Path) -> Result<Servers> {
        assert!(want.postgres || want.rabbitmq, "a stack needs a server");
        // Every program is looked for before anything starts: a missing one leaves nothing
        // running behind its error.
        if want.postgres && want.pg_url.is_none() {
            binaries::postgres_bin()?;
            binaries::server_user()?;
        }
        if want.rabbitmq && want.amqp_url.is_none() {
            binaries::rabbitmq_server()?;
            binaries::epmd()?;
        }
        let launcher = process::Launcher::new()?;
        // PostgreSQL (about a second) starts while RabbitMQ (about five) boots.
        let (pg, mq) = std::thread::scope(|scope| {
            let pg = want.postgres.then(|| {
                scope.spawn(|| match want.pg_url {
                    Some(url) => start::given_postgres(url),
                    None => start::postgres(dir, want.pg_settings, &launcher),
                })
            });
            let mq = want.rabbitmq.then(|| {
                scope.spawn(|| match want.amqp_url {
                    Some(url) => start::given_rabbitmq(url),
                    None => start::rabbitmq(dir, &launcher),
                })
            });
            (pg.map(joined), mq.map(joined))
        });
        let mut servers = Servers {
            pg: None,
            mq: None,
            launcher,
            queue_type: want.queue_type,
            settled: None,
            probe: None,
        };
        // Whichever started is kept in `servers` first, so that an error of the other drops
        // (kills) it on the way out.
        let pg = pg.transpose();
        let mq = mq.transpose();
        servers.pg = match pg {
            Ok(pg) => pg,
            Err(e) => {
                servers.mq = mq.ok().flatten();
                return Err(e);
            }
        };
        servers.mq = mq?;
        Ok(servers)
    }

    /// Did crashlab start every server it has (none given by URL)?
    pub fn private(&self) -> bool {
        let pg = self
            .pg
            .as_ref()
            .is_none_or(|(p, _)| matches!(p, Pg::Private(_)));
        let mq = self
            .mq
            .as_ref()
            .is_none_or(|(m, _)| matches!(m, Mq::Private(_)));
        pg && mq
    }

    /// The private servers' own processes while they run (the postmaster, the Erlang node,
    /// epmd): children of this process that no role started.
    pub fn pids(&self) -> Vec<libc::pid_t> {
        let mut pids = Vec::new();
        if let Some((Pg::Private(p), _)) = &self.pg {
            pids.extend(p.pid());
        }
        if let Some((Mq::Private(m), _)) = &self.mq {
            pids.extend(m.pids());
        }
        pids
    }

    /// The PostgreSQL server's administrative URL (its `postgres` database), if there is one.
    pub fn pg_url(&self) -> Option<String> {
        self.pg.as_ref().map(|(pg, _)| match pg {
            Pg::Private(p) => p.url("postgres"),
            Pg::Given(url) => url.clone(),
        })
    }

    /// The broker's URL, if there is one.
    pub fn amqp_url(&self) -> Option<String> {
        self.mq.as_ref().map(|(mq, _)| match mq {
            Mq::Private(p) => p.url(),
            Mq::Given(url) => url.clone(),
        })
    }

    /// SIGKILL every process of that server (postmaster and backends / the Erlang node),
    /// gone before it returns. Refused (one line, exit 2) for a server the user gave.
    pub fn kill(&mut self, kind: Kind) -> Result<()> {
        match kind {
            Kind::Postgres => match &mut self.pg {
                Some((Pg::Private(p), _)) => p.kill(),
                Some((Pg::Given(_), _)) => Err(refuse_given(kind)),
                None => Err(not_started(kind)),
            },
            Kind::Rabbitmq => match &mut self.mq {
                Some((Mq::Private(m), _)) => m.kill_node(),
                Some((Mq::Given(_), _)) => Err(refuse_given(kind)),
                None => Err(not_started(kind)),
            },
        }
    }

    /// Whether crashlab's private server of that kind is up (not killed); a given one always.
    /// Whether this stack has the server at all (started or given).
    pub fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Postgres => self.pg.is_some(),
            Kind::Rabbitmq => self.mq.is_some(),
        }
    }

    pub fn running(&self, kind: Kind) -> bool {
        match kind {
            Kind::Postgres => match &self.pg {
                Some((Pg::Private(p), _)) => p.running(),
                other => other.is_some(),
            },
            Kind::Rabbitmq => match &self.mq {
                Some((Mq::Private(m), _)) => m.running(),
                other => other.is_some(),
            },
        }
    }

    /// Start it again on the same port and data (killed first if it still runs), and wait
    /// until it is ready (bounded). Returns the restart's wall_ms.
    pub fn restart(&mut self, kind: Kind) -> Result<u64> {
        self.kill(kind)?;
        let started = Instant::now();
        let launcher = &self.launcher;
        let (result, startup) = match kind {
            Kind::Postgres => match &mut self.pg {
                Some((Pg::Private(p), startup)) => (p.start(p.port, launcher), startup),
                _ => unreachable!("kill refused a server crashlab did not start"),
            },
            Kind::Rabbitmq => match &mut self.mq {
                Some((Mq::Private(m), startup)) => (m.restart(launcher), startup),
                _ => unreachable!("kill refused a server crashlab did not start"),
            },
        };
        match result {
            Ok(()) => {
                let wall_ms = since_ms(started);
                startup.restart_wall_ms.push(wall_ms);
                if kind == Kind::Rabbitmq {
                    self.await_leaders()?;
                }
                Ok(wall_ms)
            }
            Err(StartError::PortTaken) => Err(fail::unavailable(format!(
                "{}: its port {} was taken by another process while it was down",
                kind.name(),
                startup.port.unwrap_or_default()
            ))),
            Err(StartError::Other(e)) => Err(e),
        }
    }

    /// For the evidence: per server, version, port, private or given, start wall_ms, restarts.
    pub fn startups(&self) -> Vec<Startup> {
        let pg = self.pg.as_ref().map(|(_, s)| s.clone());
        let mq = self.mq.as_ref().map(|(_, s)| s.clone());
        pg.into_iter().chain(mq).collect()
    }

    /// Kill every private server and wait until each is gone.
    pub fn stop(mut self) -> Result<()> {
        self.stop_all()
    }

    fn stop_all(&mut self) -> Result<()> {
        let pg = match self.pg.as_mut() {
            Some((Pg::Private(p), _)) => p.kill(),
            _ => Ok(()),
        };
        let mq = match self.mq.as_mut() {
            Some((Mq::Private(m), _)) => m.kill_all(),
            _ => Ok(()),
        };
        pg.and(mq)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.stop_all();
    }
}

pub(crate) fn refuse_given(kind: Kind) -> anyhow::Error {
    let option = match kind {
        Kind::Postgres => "--pg-url",
        Kind::Rabbitmq => "--amqp-url",
    };
    fail::usage(format!(
        "{}: crashlab does not kill or restart a server it was given ({option}); run it on private servers",
        kind.name()
    ))
}

pub(crate) fn not_started(kind: Kind) -> anyhow::Error {
    fail::usage(format!("{}: this stack has no such server", kind.name()))
}

/// The database name in a URL (its path, before any query).
fn database_of(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.split_once('/').map_or("", |(_, path)| path);
    path.split('?').next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_of_a_url_is_its_path() {
        assert_eq!(
            database_of("postgres://u@h:1/crashlab_a_b?x=y"),
            "crashlab_a_b"
        );
        assert_eq!(database_of("postgres://u@h:1"), "");
    }
}
