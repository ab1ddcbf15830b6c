//! Lab f2 (poison), the system under test: a producer writes messages into a SQLite queue,
//! a consumer applies them in order at a receiver whose CHECK constraint rejects one of them
//! forever, and an operator replays a parked message once its payload is corrected. It knows
//! nothing of the harness beyond `crash::point`.

pub mod apply;
pub mod consume;
pub mod explore;
pub mod history;
pub mod lab;
pub mod model;
pub mod points;
pub mod produce;
pub mod readback;
pub mod replay;
pub mod replay_parked;
pub mod roles;
pub mod schema;
