//! Lab 14 on the server stack (`--stack postgres-rabbitmq`): the sender's and receiver's
//! state in PostgreSQL, the transport on RabbitMQ with persistent messages, publisher confirms
//! and manual acks. The roles find their servers in `stack.json` (`crate::stackfile`).

pub mod amqp;
pub mod commands;
pub mod consumer;
pub mod explore;
pub mod history;
pub mod lab;
pub mod load;
pub mod pg;
pub mod points;
pub mod publisher;
pub mod readback;
pub mod roles;
pub mod route;
pub mod schema;
pub mod sender;
pub mod variant;
