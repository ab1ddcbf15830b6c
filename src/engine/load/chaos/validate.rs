//! A chaos command's options against their bounds and the lab they run, each refusal one
//! line (exit 2) before anything starts.

use anyhow::Result;

use super::options::{Options, KILLS_MAX, TIMEOUT_MS_MAX};
use crate::engine::crash_mode::CrashMode;
use crate::engine::load::profile::LoadProfile;
use crate::engine::load::server_kills;
use crate::engine::LabStack;
use crate::fail;

/// Out of range: one line, exit 2.
pub fn range(what: &str, v: u64, low: u64, high: u64) -> Result<()> {
    if v < low || v > high {
        return Err(fail::usage(format!(
            "{what} {v} is out of range ({low} to {high})"
        )));
    }
    Ok(())
}

/// The bounds every chaos run keeps: at least `kills_min` kills and at most KILLS_MAX, and
/// both timeouts from 1 ms to TIMEOUT_MS_MAX.
pub fn bounds(o: &Options, kills_min: u64) -> Result<()> {
    range("--kills", o.kills as u64, kills_min, KILLS_MAX as u64)?;
    range("--timeout-ms", o.timeout_ms, 1, TIMEOUT_MS_MAX)?;
    range(
        "--process-timeout-ms",
        o.process_timeout_ms,
        1,
        TIMEOUT_MS_MAX,
    )
}

pub fn validate(lab: &LabStack, profile: &dyn LoadProfile, o: &Options) -> Result<()> {
    if let Some(mode) = o.crash_mode {
        crate::engine::crash_mode::supported(lab, mode)?;
    }
    crate::engine::load::validate_shape(profile, o.messages, o.consumers)?;
    validate_servers(lab, profile, o)?;
    bounds(o, 0)?;
    match o.crash_mode {
        None | Some(CrashMode::PowerLoss) => {}
        Some(other) => {
            return Err(fail::usage(format!(
                "chaos --crash-mode {}: chaos kills from outside with SIGKILL, or cuts the power (power-loss); the process crashes are the driver's and explore's",
                other.name()
            )))
        }
    }
    if o.power.cut.is_some() && o.crash_mode.is_none() {
        return Err(fail::usage(
            "--cut is for --crash-mode power-loss only (chaos's default is a SIGKILL)",
        ));
    }
    if let Some(style) = o.power.cut {
        // One cut per kill moment, seeded: exhaustive is no single cut.
        crate::power::cut::seeded(style, 0, &[], 0)?;
    }
    let store = o.power.profile()?;
    // Chaos watches the files while the roles run, holding them open in WAL mode: a role
    // cannot leave WAL then (it needs the file alone), and would wait on its lock forever.
    if store.journal_mode != "wal" {
        return Err(fail::usage(format!(
            "--store-profile {}: chaos keeps the databases open in WAL mode while its roles run, so a rollback journal cannot be pinned; run it under driver or explore",
            store.name
        )));
    }
    Ok(())
}

/// The options of a lab on servers: `--server-kills N --server S` (S in the lab's stack and
/// started by this run), `--variant` among the profile's.
fn validate_servers(lab: &LabStack, profile: &dyn LoadProfile, o: &Options) -> Result<()> {
    range(
        "--server-kills",
        o.server_kills as u64,
        0,
        server_kills::SERVER_KILLS_MAX as u64,
    )?;
    let stack = crate::engine::stack::name_of(lab.stack);
    if let Some(variant) = &o.variant {
        let known = profile.variants();
        if !known.contains(&variant.as_str()) {
            return Err(fail::usage(match known.is_empty() {
                true => format!(
                    "--variant {variant}: lab {} on stack {stack} runs its own design only under chaos",
                    lab.id()
                ),
                false => format!(
                    "--variant {variant}: lab {} on stack {stack} has {}",
                    lab.id(),
                    known.join(", ")
                ),
            }));
        }
    }
    match (o.server_kills, o.stack.server) {
        (0, None) => Ok(()),
        (0, Some(server)) => Err(fail::usage(format!(
            "chaos --server {}: give --server-kills N, the number of times to kill it",
            server.name()
        ))),
        (n, None) => Err(fail::usage(format!(
            "--server-kills {n}: name the server to kill with --server postgres|rabbitmq"
        ))),
        (n, Some(server)) => crate::engine::fleet::check_kill_by(
            lab,
            &o.stack,
            server,
            &format!("--server-kills {n}"),
        ),
    }
}
