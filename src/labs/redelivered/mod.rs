//! Lab f3 (redelivered): a queue hands a message to a second consumer while the first is
//! still working on it (its lease expired under a pause), so a side effect outside the
//! receiver's transaction, an HTTP call to lab 13's receiver, runs twice unless the call
//! carries the message id as its Idempotency-Key (Particular/NServiceBus#5648).
//!
//! The system under test: a queue with leases (`queue.rs`), a consumer that claims, calls and
//! acks (`consumer.rs`), a readback; lab 13's receiver is run by its own subcommand. It knows
//! nothing of the harness beyond `crash::point` (where the pause nemesis also stops it).

pub mod commands;
pub mod consumer;
pub mod explore;

pub mod history;
pub mod lab;
pub mod points;
pub mod queue;
pub mod readback;
pub mod replay;
pub mod roles;
pub mod route;
pub mod schema;
pub mod stages;
