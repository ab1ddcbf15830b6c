//! The servers a lab's roles need: PostgreSQL databases and RabbitMQ queues, given by logical
//! name. The engine starts (or reaches) the servers once per run, gives every scenario fresh
//! databases and queues, and writes their addresses into the work directory
//! (`crate::stackfile`), where every role process reads them.

/// What a lab on servers needs of them.
pub struct StackDef {
    /// `--stack` name: `postgres-rabbitmq`, `postgres`.
    pub name: &'static str,
    /// Logical PostgreSQL databases its roles use (`sender`, `receiver`); each scenario gets
    /// fresh ones.
    pub databases: &'static [&'static str],
    /// Logical RabbitMQ queues its roles use (`messages`); each scenario gets fresh names.
    /// Empty: the lab needs no broker.
    pub queues: &'static [&'static str],
    /// Settings of a private PostgreSQL cluster (`postgres -c NAME=VALUE`), with the reason
    /// each one is there in the lab's docs.
    pub pg_settings: &'static [(&'static str, &'static str)],
}

/// `--stack`, `--pg-url` and `--amqp-url` of driver, explore and chaos.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct StackArgs {
    /// The stack the lab runs on: sqlite (the default: files, nothing installed) or a stack of
    /// servers the lab has (lab 14: postgres-rabbitmq); docs/stack.md
    #[arg(long, value_name = "NAME")]
    pub stack: Option<String>,
    /// A PostgreSQL server you have (postgres://USER@HOST:PORT/DB) instead of a private one:
    /// crashlab only creates and drops its own crashlab_* databases there
    #[arg(long, value_name = "URL")]
    pub pg_url: Option<String>,
    /// A RabbitMQ server you have (amqp://USER:PASS@HOST:PORT/%2f) instead of a private one:
    /// crashlab only declares and deletes its own crashlab_* queues there
    #[arg(long, value_name = "URL")]
    pub amqp_url: Option<String>,
    /// With --crash-mode server-kill: the server killed (and restarted) at every armed point
    #[arg(long, value_enum)]
    pub server: Option<Server>,
    /// The type of the lab's RabbitMQ queue: classic (the default) or quorum (Raft-replicated,
    /// every message on disk); durable either way
    #[arg(long, value_enum, value_name = "TYPE")]
    pub queue_type: Option<QueueType>,
}

/// The type of a RabbitMQ queue a lab declares (its `x-queue-type`); durable either way.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum QueueType {
    #[default]
    Classic,
    Quorum,
}

impl QueueType {
    pub fn name(self) -> &'static str {
        match self {
            QueueType::Classic => "classic",
            QueueType::Quorum => "quorum",
        }
    }
}

/// The stack name of a lab on SQLite files alone.
pub const SQLITE: &str = "sqlite";

impl StackArgs {
    /// The flags as given, for a command line passed on (the same order as clap's).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        for (flag, value) in [
            ("--stack", &self.stack),
            ("--pg-url", &self.pg_url),
            ("--amqp-url", &self.amqp_url),
        ] {
            if let Some(v) = value {
                flags.push(flag.to_string());
                flags.push(v.clone());
            }
        }
        if let Some(server) = self.server {
            flags.push("--server".to_string());
            flags.push(server.name().to_string());
        }
        if let Some(queue_type) = self.queue_type {
            flags.push("--queue-type".to_string());
            flags.push(queue_type.name().to_string());
        }
        flags
    }
}

/// A server a nemesis may kill (`--server`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Server {
    Postgres,
    Rabbitmq,
}

impl Server {
    pub fn name(self) -> &'static str {
        match self {
            Server::Postgres => "postgres",
            Server::Rabbitmq => "rabbitmq",
        }
    }

    /// Whether a stack has this server.
    pub fn in_stack(self, def: &StackDef) -> bool {
        match self {
            Server::Postgres => !def.databases.is_empty(),
            Server::Rabbitmq => !def.queues.is_empty(),
        }
    }
}

/// The name of a lab's stack: its servers', or `sqlite`.
pub fn name_of(def: Option<&StackDef>) -> &'static str {
    def.map_or(SQLITE, |d| d.name)
}
