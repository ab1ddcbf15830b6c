//! The labs, each a folder: its system under test, its crash points, its scenarios and what
//! must hold. `main` hands this list to the engine (`engine::registry::install`); adding a lab
//! is its folder and one line in `LABS`.

pub mod http_dispatch;
pub mod outbox_inbox;
pub mod poison;
pub mod redelivered;
pub mod relay_gap;

use crate::engine::Lab;

pub static LABS: &[&Lab] = &[
    &outbox_inbox::lab::LAB,
    &http_dispatch::lab::LAB,
    &poison::lab::LAB,
    &redelivered::lab::LAB,
    &relay_gap::lab::LAB,
];
