//! The labs the engine may run, handed to it once at start-up (`main` installs
//! `labs::LABS`). The labs depend on the engine, never the reverse: no engine file imports
//! a lab or the registry's module, so adding a lab touches only its folder and that list.

use std::sync::OnceLock;

use crate::engine::{Lab, LabStack};
use crate::fail;

static LABS: OnceLock<&'static [&'static Lab]> = OnceLock::new();

/// Hand the engine its labs. Installing the same list twice is harmless; a different one
/// is a programming error.
pub fn install(labs: &'static [&'static Lab]) {
    // Precondition: one entry per lab, each with a stack, each stack its lab's own.
    for (i, lab) in labs.iter().enumerate() {
        assert!(!lab.stacks.is_empty(), "lab {} has a stack", lab.id);
        assert!(
            lab.stacks.iter().all(|on| std::ptr::eq(on.lab, *lab)),
            "lab {}'s stacks are its own",
            lab.id
        );
        assert!(
            labs[..i]
                .iter()
                .all(|other| other.id != lab.id && other.slug != lab.slug),
            "no two labs share an id or a slug ({})",
            lab.id
        );
    }
    let installed = LABS.get_or_init(|| labs);
    assert!(
        std::ptr::eq(*installed, labs),
        "the engine's labs are installed once"
    );
}

/// Every lab, in registry order.
pub fn labs() -> &'static [&'static Lab] {
    // The library's own unit tests have no `main`: they run against the real labs.
    #[cfg(test)]
    install(crate::labs::LABS);
    LABS.get()
        .copied()
        .expect("main installs the labs before any engine command runs")
}

/// Find a lab by `14`, `outbox-inbox` or `14-outbox-inbox`.
pub fn find(name: &str) -> anyhow::Result<&'static Lab> {
    labs()
        .iter()
        .copied()
        .find(|lab| lab.id == name || lab.slug == name || lab.full_name() == name)
        .ok_or_else(|| {
            let known: Vec<String> = labs()
                .iter()
                .map(|l| format!("{} ({})", l.id, l.slug))
                .collect();
            fail::usage(format!("unknown lab '{name}'; known: {}", known.join(", ")))
        })
}

/// Find a lab by name on a stack (`--stack`): no stack, its first (the SQLite one where it has
/// one); another, the one of that name.
pub fn find_on(name: &str, stack: Option<&str>) -> anyhow::Result<&'static LabStack> {
    let lab = find(name)?;
    on(lab, stack)
}

/// A lab on a stack: no stack, its first.
pub fn on(lab: &'static Lab, stack: Option<&str>) -> anyhow::Result<&'static LabStack> {
    let Some(stack) = stack else {
        return Ok(lab.stacks[0]);
    };
    lab.stacks
        .iter()
        .copied()
        .find(|on| on.stack_name() == stack)
        .ok_or_else(|| {
            fail::usage(format!(
                "lab {} has no stack '{stack}'; known: {}",
                lab.id,
                lab.stack_names().join(", ")
            ))
        })
}

/// Every lab on every stack it has, in registry order.
pub fn stacks() -> impl Iterator<Item = &'static LabStack> {
    labs().iter().flat_map(|lab| lab.stacks.iter().copied())
}

/// The first lab on a stack that has what `wanted` asks for (a background step, a load
/// profile): how engine code and tests find a lab by what it does, never by its name.
pub fn first_with(wanted: impl Fn(&LabStack) -> bool) -> Option<&'static LabStack> {
    stacks().find(|lab| wanted(lab))
}

/// Whether a lab's scenarios run a process in the background (a server, a lock holder).
pub fn has_background(lab: &LabStack) -> bool {
    (lab.scenarios)()
        .iter()
        .any(|s| s.steps.iter().any(|step| step.background.is_some()))
}
