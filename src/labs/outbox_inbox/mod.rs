//! Lab 14, the system under test: sender, publisher, consumer, a raw enqueue, and the readback.
//! It knows nothing of the harness beyond `crash::point`.

pub mod consumer;
pub mod enqueue;
pub mod history;
pub mod lab;
pub mod model;
pub mod points;
pub mod publisher;
pub mod readback;
pub mod roles;
pub mod schema;
pub mod sender;
pub mod variant;
