//! crashlab: crash-recovery experiments on real processes and real SQLite files.
//!
//! The library holds everything; `main` parses and routes. `engine` runs, explores, loads
//! and audits any lab; `labs` holds each lab in its own folder, registered in `labs::LABS`.

pub mod cli;
pub mod common;
pub mod crash;
pub mod engine;
pub mod events;
pub mod fail;
pub mod interrupt;
pub mod junit;
pub mod labfile;
pub mod labs;
pub mod out;
pub mod owner;
pub mod pause;
pub mod point;
pub mod power;
pub mod probe;
pub mod rng;
pub mod role;
pub mod route;
pub mod servers;
pub mod stackfile;
pub mod store;
