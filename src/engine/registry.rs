//! The labs the engine may run, handed to it once at start-up (`main` installs
//! `labs::LABS`). The labs depend on the engine, never the reverse: no engine file imports
//! a lab or the registry's module, so adding a lab touches only its folder and that list.

use std::sync::OnceLock;

use crate::engine::Lab;
use crate::fail;

static LABS: OnceLock<&'static [&'static Lab]> = OnceLock::new();

/// Hand the engine its labs. Installing the same list twice is harmless; a different one
/// is a programming error.
pub fn install(labs: &'static [&'static Lab]) {
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

/// Find a lab by name and stack (`--stack`): no stack, the first lab of that name (the SQLite
/// one, listed first); `sqlite`, the one without servers; another, the one on that stack.
pub fn find_on(name: &str, stack: Option<&str>) -> anyhow::Result<&'static Lab> {
    let first = find(name)?;
    let Some(stack) = stack else {
        return Ok(first);
    };
    let same = || {
        labs()
            .iter()
            .copied()
            .filter(|lab| lab.full_name() == first.full_name())
    };
    same()
        .find(|lab| crate::engine::stack::name_of(lab.stack) == stack)
        .ok_or_else(|| {
            let known: Vec<&str> = same()
                .map(|lab| crate::engine::stack::name_of(lab.stack))
                .collect();
            fail::usage(format!(
                "lab {} has no stack '{stack}'; known: {}",
                first.id,
                known.join(", ")
            ))
        })
}

/// The first lab that has what `wanted` asks for (a background step, a load profile): how
/// engine code and tests find a lab by what it does, never by its name.
pub fn first_with(wanted: impl Fn(&Lab) -> bool) -> Option<&'static Lab> {
    labs().iter().copied().find(|lab| wanted(lab))
}

/// Whether a lab's scenarios run a process in the background (a server, a lock holder).
pub fn has_background(lab: &Lab) -> bool {
    (lab.scenarios)()
        .iter()
        .any(|s| s.steps.iter().any(|step| step.background.is_some()))
}
