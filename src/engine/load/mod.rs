//! Lab 14 under load: many messages, concurrent roles, seeded random kills (`chaos`), and
//! the cost of it all against plain SQLite inserts (`bench`).

pub mod bench;
pub mod chaos;
pub mod pipeline;
pub mod progress;
pub mod roles;

/// Chaos and bench exist for lab 14 only; another known lab is refused by name.
pub fn check_lab(name: &str) -> anyhow::Result<()> {
    let lab = crate::labs::find(name)?;
    if lab.id != "14" {
        return Err(crate::fail::usage(format!(
            "chaos and bench run lab 14 (outbox-inbox), not lab {}",
            lab.id
        )));
    }
    Ok(())
}
