//! Lab 13, the system under test: a durable intent log, an HTTP receiver with an
//! idempotency ledger (or without one), a dispatcher that writes receipts and history after
//! the reply, and the readback. It knows nothing of the harness beyond `crash::point`.

pub mod client;
pub mod dispatcher;
pub mod explore;
pub mod history;
pub mod intent;
pub mod lab;
pub mod model;
pub mod points;
pub mod readback;
pub mod receiver;
pub mod replay;
pub mod roles;
pub mod schema;
pub mod stages;
