//! Lab f3 (redelivered), one story over two stacks: a queue hands a message to a second
//! consumer while the first is still working on it, so a side effect outside the receiver's
//! transaction, an HTTP call to lab 13's receiver, runs twice unless the call carries the
//! message id as its Idempotency-Key (Particular/NServiceBus#5648). On SQLite the first
//! consumer's lease expires under a pause; on PostgreSQL + RabbitMQ the broker closes the
//! paused consumer's connection (missed heartbeats) and redelivers.
//!
//! - The story, written once: the roles (`roles.rs`), the scenario and its stages
//!   (`lab.rs`, `stages.rs`), the points (`points.rs`), the history in Jepsen's words
//!   (`history.rs`), explore's plan and predictions (`explore/`), the readbacks
//!   (`state.rs`) and the audit's claims (`replay.rs`).
//! - The consumer's body, written once against its port (`consumer.rs`); the adapters: the
//!   SQLite queue with leases (`queue.rs`), RabbitMQ and the consumers' PostgreSQL records
//!   (`broker.rs`); `stack.rs` names each stack's stores, `store.rs` the engine's view of a
//!   mix of files and servers. Lab 13's receiver is run by its own role.
//!
//! The system under test knows nothing of the harness beyond `crash::point` (where the pause
//! nemesis also stops it).

pub mod broker;
pub mod consumer;
pub mod explore;
pub mod history;
pub mod lab;
pub mod points;
pub mod queue;
pub mod replay;
pub mod roles;
pub mod schema;
pub mod stack;
pub mod stages;
pub mod state;
pub mod store;
