//! The two stacks lab 14 runs on, as a role's `--stack` names them. A role's store flags name
//! its stores: on `sqlite` (the default) each is a SQLite file, relative to the role's
//! directory; on `postgres-rabbitmq` each is a logical name that `stack.json` in that
//! directory resolves (a PostgreSQL database, the RabbitMQ queue), written there by the
//! driver or `crashlab servers --work DIR`. The stack is named, never guessed from the
//! files: a missing `stack.json` is refused (exit 2), not taken for SQLite, and every store
//! of a role is on its one stack.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum Stack {
    /// Three SQLite files: the sender, a durable SQL queue (claims, leases), the receiver
    #[default]
    #[value(name = "sqlite")]
    #[serde(rename = "sqlite")]
    Sqlite,
    /// PostgreSQL databases (sender, receiver) and a RabbitMQ queue (confirms, manual acks)
    #[value(name = "postgres-rabbitmq")]
    #[serde(rename = "postgres-rabbitmq")]
    Servers,
}

/// The stores of a run, as its roles' flags name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stores {
    pub sender: &'static str,
    pub queue: &'static str,
    pub receiver: &'static str,
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

    /// The stores of the lab's runs: the contract's file names, or the servers' logical names.
    pub fn stores(self) -> Stores {
        match self {
            Stack::Sqlite => Stores {
                sender: "sender.db",
                queue: "queue.db",
                receiver: "receiver.db",
            },
            Stack::Servers => Stores {
                sender: "sender",
                queue: "messages",
                receiver: "receiver",
            },
        }
    }

    /// The stores in the work directory as the engine lists them (snapshots, evidence).
    pub const fn databases(self) -> &'static [&'static str] {
        match self {
            Stack::Sqlite => &["sender.db", "queue.db", "receiver.db"],
            Stack::Servers => &["sender", "receiver", "messages"],
        }
    }

    /// Whether each delivery leaves a receipt in the receiver's transaction (how many times
    /// it came, whether the broker flagged it redelivered, what it came to). The broker's
    /// deliveries are nowhere else to count; the SQL queue keeps its own rows.
    pub fn receipts(self) -> bool {
        self == Stack::Servers
    }

    /// Flags that shape the SQL queue and its batches, refused on the broker's stack: there
    /// a role handles one message per transaction and the broker redelivers what a dead
    /// consumer held, with no lease. `given` are the flags given with another value than
    /// their default.
    pub fn refuse(self, given: &[(&str, bool)]) -> anyhow::Result<()> {
        if self == Stack::Sqlite {
            return Ok(());
        }
        match given.iter().find(|(_, on)| *on) {
            Some((flag, _)) => Err(crate::fail::usage(format!(
                "{flag} shapes the SQL queue of stack sqlite; on {} a role handles one message per transaction and the broker redelivers what a dead consumer held",
                self.name()
            ))),
            None => Ok(()),
        }
    }
}
