//! A lab under load: many items, concurrent roles, seeded random kills (`chaos`), and the
//! cost of it all against plain inserts (`bench`). Which roles run and what "nothing lost,
//! nothing doubled" means come from the lab's load profile; everything here is generic.

pub mod bench;
pub mod chaos;
pub mod kills;
pub mod lifecycle;
pub mod pipeline;
pub mod power_cut;
pub mod profile;
pub mod progress;
pub mod reaped;
pub mod roles;
pub mod server_kills;

use crate::engine::LabStack;
use profile::LoadProfile;

/// The lab named `name` and its load profile; a lab without one is refused in one line that
/// names the labs that have one.
pub fn profile(name: &str) -> anyhow::Result<(&'static LabStack, &'static dyn LoadProfile)> {
    profile_on(name, None)
}

/// As `profile`, for the lab on `stack` (`--stack`).
pub fn profile_on(
    name: &str,
    stack: Option<&str>,
) -> anyhow::Result<(&'static LabStack, &'static dyn LoadProfile)> {
    let lab = crate::engine::registry::find_on(name, stack)?;
    match lab.load {
        Some(profile) => Ok((lab, profile)),
        None => {
            // A lab has a profile on some of its stacks: each is named with its stack, so
            // the line says which one has a profile.
            let named = |l: &LabStack| match l.stack {
                Some(stack) => format!("{} ({}) --stack {}", l.id(), l.slug(), stack.name),
                None => format!("{} ({})", l.id(), l.slug()),
            };
            let with: Vec<String> = crate::engine::registry::stacks()
                .filter(|l| l.load.is_some())
                .map(named)
                .collect();
            Err(crate::fail::usage(format!(
                "lab {} has no load profile; chaos and bench run {}",
                named(lab),
                with.join(", ")
            )))
        }
    }
}

/// Refuse a lab without a load profile (the same one line as `profile`).
pub fn check_lab(name: &str) -> anyhow::Result<()> {
    profile(name).map(|_| ())
}

/// `--messages` and `--consumers`, checked against their bounds for chaos and bench alike.
pub fn validate_shape(
    profile: &dyn profile::LoadProfile,
    messages: usize,
    consumers: usize,
) -> anyhow::Result<()> {
    chaos::range(
        "--messages",
        messages as u64,
        1,
        profile.messages_max() as u64,
    )?;
    chaos::range(
        "--consumers",
        consumers as u64,
        1,
        chaos::CONSUMERS_MAX as u64,
    )
}
