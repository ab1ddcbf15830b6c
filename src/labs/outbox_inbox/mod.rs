//! Lab 14, the system under test: sender, publisher, consumer, a raw enqueue, and the readback.
//! It knows nothing of the harness beyond `crash::point`.

pub mod commands;
pub mod consumer;
pub mod consumer_queue;
pub mod consumer_receiver;
pub mod enqueue;
pub mod explore;
pub mod history;
pub mod lab;
pub mod load;
pub mod load_amounts;
pub mod load_ceiling;
pub mod load_check;
pub mod model;
pub mod points;
pub mod publisher;
pub mod readback;
pub mod replay;
pub mod roles;
pub mod route;
pub mod schema;
pub mod sender;
pub mod variant;
