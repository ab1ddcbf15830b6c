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
