//! The two stacks lab f3 runs on, as a role's `--stack` names them. On `sqlite` (the default)
//! the queue is a SQLite file with leases, relative to the role's directory; on
//! `postgres-rabbitmq` it is a RabbitMQ queue and the consumers record their deliveries and
//! replies in a PostgreSQL database, each a logical name that `stack.json` in that directory
//! resolves. Lab 13's receiver keeps its file in the work directory on both.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum Stack {
    /// A SQLite queue with leases: a consumer paused past its lease loses the message
    #[default]
    #[value(name = "sqlite")]
    #[serde(rename = "sqlite")]
    Sqlite,
    /// A RabbitMQ queue (manual acks, heartbeats) and the consumers' PostgreSQL database
    #[value(name = "postgres-rabbitmq")]
    #[serde(rename = "postgres-rabbitmq")]
    Servers,
}

/// The stores of a run, as its roles' flags name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stores {
    pub queue: &'static str,
    /// The consumers' database: on the servers only (on SQLite the queue file holds replies).
    pub db: Option<&'static str>,
}

impl Stack {
    pub const ALL: [Stack; 2] = [Stack::Sqlite, Stack::Servers];

    /// Its `--stack` name.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Sqlite => "sqlite",
            Stack::Servers => "postgres-rabbitmq",
        }
    }

    /// The stores of the lab's runs: the queue file, or the servers' logical names.
    pub const fn stores(self) -> Stores {
        match self {
            Stack::Sqlite => Stores {
                queue: "queue.db",
                db: None,
            },
            Stack::Servers => Stores {
                queue: "messages",
                db: Some("consumer"),
            },
        }
    }

    /// The stores in the work directory as the engine lists them (snapshots, evidence).
    pub const fn databases(self) -> &'static [&'static str] {
        match self {
            Stack::Sqlite => &["queue.db", "receiver.db"],
            Stack::Servers => &["consumer", "messages", "receiver.db"],
        }
    }

    /// How long consumer A, B and C of a scenario each wait for the message. On SQLite B
    /// waits out A's lease, at most 10 s (bounded, never reached: A is stopped and cannot
    /// renew). On the servers B asks the broker again for up to 8 s: past its heartbeat
    /// timeout (about two intervals) with room to spare, inside the driver's default step
    /// timeout (10 s).
    pub const fn waits(self) -> [u64; 3] {
        match self {
            Stack::Sqlite => [10_000, 10_000, 10_000],
            Stack::Servers => [0, 8_000, 0],
        }
    }

    /// Flags of the other stack, refused here: `given` are the flags given.
    pub fn refuse(self, given: &[(&str, bool, Stack)]) -> anyhow::Result<()> {
        match given.iter().find(|(_, on, of)| *on && *of != self) {
            Some((flag, _, of)) => Err(crate::fail::usage(format!(
                "{flag} is for stack {}, not {}",
                of.name(),
                self.name()
            ))),
            None => Ok(()),
        }
    }
}
