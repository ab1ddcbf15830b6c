//! Lab 14, Outbox → transport → Inbox, one story over two stacks: SQLite files (a durable SQL
//! queue with claims and leases) and PostgreSQL + RabbitMQ (publisher confirms, manual acks).
//!
//! - The story, written once: the roles (`roles.rs`), the scenario and its stages
//!   (`lab.rs`, `stages.rs`), the points (`points.rs`), the designs (`variant.rs`), the
//!   history in Jepsen's words (`history.rs`), explore's plan and predictions (`explore/`),
//!   the load profile (`load/`), and the one reader of the state (`state.rs`).
//! - The roles' bodies, written once against the ports (`ports.rs`): the business store and
//!   its Outbox (`outbox.rs`), the Inbox store (`inbox.rs`), the publisher and the consumer.
//! - The adapters: the SQL stores are SQLite files or PostgreSQL databases (the same
//!   statements, `crate::store::sql`); the transport is the SQL queue (`queue.rs`) or
//!   RabbitMQ (`broker.rs`); `open.rs` opens each role's on its stack (`stack.rs`).
//!
//! The system under test knows nothing of the harness beyond `crash::point`.

pub mod broker;
pub mod consumer;
pub mod explore;
pub mod history;
pub mod inbox;
pub mod lab;
pub mod load;
pub mod model;
pub mod open;
pub mod outbox;
pub mod points;
pub mod ports;
pub mod publisher;
pub mod queue;
pub mod replay;
pub mod roles;
pub mod schema;
pub mod stack;
pub mod stages;
pub mod state;
pub mod variant;
