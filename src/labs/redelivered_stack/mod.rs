//! Lab f3 on the server stack (`--stack postgres-rabbitmq`): RabbitMQ hands a message to a
//! second consumer while the first is still working on it, because the broker closed the first
//! one's connection (it missed its heartbeats while stopped), so a side effect outside any
//! transaction, an HTTP call to lab 13's receiver, runs twice unless the call carries the
//! message id as its Idempotency-Key (Particular/NServiceBus#5648).
//!
//! The system under test: a durable queue with manual acks, a consumer that takes a message,
//! records the delivery in PostgreSQL, calls, acks and records the reply (`consumer.rs`, its
//! connection in `link.rs`), a readback; lab 13's receiver is run by its own subcommand.

pub mod commands;
pub mod consumer;
pub mod explore;
pub mod history;
pub mod lab;
pub mod link;
pub mod points;
pub mod readback;
pub mod roles;
pub mod route;
pub mod schema;
pub mod stages;
pub mod store;
