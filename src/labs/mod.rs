//! The labs, each a folder: its system under test, its crash points, its scenarios and what
//! must hold. The engine knows them only through this registry; adding a lab is its folder
//! and one line in `LABS`.

pub mod http_dispatch;
pub mod outbox_inbox;

use crate::engine::Lab;
use crate::fail;

pub static LABS: &[&Lab] = &[&outbox_inbox::lab::LAB, &http_dispatch::lab::LAB];

/// Find a lab by `14`, `outbox-inbox` or `14-outbox-inbox`.
pub fn find(name: &str) -> anyhow::Result<&'static Lab> {
    LABS.iter()
        .copied()
        .find(|lab| lab.id == name || lab.slug == name || lab.full_name() == name)
        .ok_or_else(|| {
            let known: Vec<String> = LABS
                .iter()
                .map(|l| format!("{} ({})", l.id, l.slug))
                .collect();
            fail::usage(format!("unknown lab '{name}'; known: {}", known.join(", ")))
        })
}
