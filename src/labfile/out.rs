//! Where a lab file's run writes: `DIR.partial`, claimed and locked as every run's output,
//! published as DIR when complete, removed when a signal stops the run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::lab::UserLab;

/// Refuse an output the run cannot claim (one that exists, a `.partial` left behind) before a
/// server starts: the mistake said at once, nothing started for it.
pub(super) fn check_given(given: &Option<PathBuf>) -> Result<()> {
    match given {
        Some(out) => crate::engine::driver::check_out(out).map(drop),
        None => Ok(()),
    }
}

/// Run `body` into the output as every run does: `--out` (or the default under
/// `target/lab/`) claimed as `DIR.partial`, locked for this process's life, renamed to DIR
/// when complete. SIGINT, SIGTERM or SIGHUP kill the roles' process groups, remove the
/// partial directory and end with exit 130; another error leaves it for inspection.
/// `body` writes into its first path, names the run by its second, puts what the run prints
/// in its third (printed once the evidence is published), and gives the exit code.
pub(super) fn into_out(
    lab: &UserLab,
    given: &Option<PathBuf>,
    what: &str,
    body: impl FnOnce(&Path, &Path, &mut Vec<String>) -> Result<i32>,
) -> Result<i32> {
    let out = given.clone().unwrap_or_else(|| {
        PathBuf::from("target/lab").join(format!(
            "{}-{what}{}",
            lab.id,
            crate::engine::driver::utc_stamp()
        ))
    });
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    // What a role starts and leaves its group comes back here to be swept (process::sweep).
    crate::engine::process::adopt_orphans().context("becoming the reaper of the roles' orphans")?;
    let partial = crate::engine::driver::claim_out(&out)?;
    let mut printed = Vec::new();
    let result = body(&partial, &out, &mut printed);
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::engine::process::interrupted(signal, Some(&partial)));
    }
    let code = result.map_err(|e| {
        e.context(format!(
            "the run stopped; what it wrote is in {}",
            partial.display()
        ))
    })?;
    crate::engine::evidence::publish(&partial, &out)?;
    // What a role or a store said reaches the terminal with no control character in it (an
    // escape sequence in a check's value, say); JSON escapes its own.
    for line in printed.iter().flat_map(|p| p.split('\n')) {
        crate::say!("{}", crate::engine::report::text::clean(line));
    }
    Ok(code)
}
