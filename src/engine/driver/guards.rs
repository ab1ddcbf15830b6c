//! What the driver refuses before a run (a power cut under a background step, a server kill
//! it may not make) and the record of the cuts it made.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Options, POWER_CUTS};
use crate::engine::crash_mode;
use crate::engine::fleet;
use crate::engine::nemesis::{Aftermath, Nemesis};
use crate::engine::process::Ended;
use crate::engine::scenario::{Scenario, Step};
use crate::engine::LabStack;
use crate::fail;

/// A server kill needs a lab on servers, a server of its stack, and private servers: a server
/// the user gave is never killed (one line, exit 2).
pub(super) fn servers_killable(lab: &LabStack, options: &Options) -> Result<()> {
    let Some(server) = options.stack.server else {
        return Ok(());
    };
    fleet::check_kill(lab, &options.stack, server)
}

/// A power cut acts on files nobody holds open: a lab whose scenarios keep a process running
/// in the background (a server) cannot be cut by the driver; one line, exit 2.
/// The lab takes power loss (`crash_mode::supported` said so first), so its explore under
/// power loss runs and passes: the line names that command.
pub(super) fn cuttable(
    lab: &LabStack,
    scenarios: &[Scenario],
    nemesis: &dyn Nemesis,
) -> Result<()> {
    if nemesis.name() != "power-loss" {
        return Ok(());
    }
    for s in scenarios {
        if let Some(step) = s.steps.iter().find(|st| st.background.is_some()) {
            return Err(fail::usage(format!(
                "--crash-mode power-loss: scenario {} keeps step {} running in the background, which a cut would kill under later steps; `crashlab explore {} --crash-mode power-loss` explores this lab under power loss",
                s.name, step.name, lab.id()
            )));
        }
    }
    Ok(())
}

/// `power-cuts.jsonl`: one JSON line per cut, in the order they were made.
pub(super) fn write_cuts(dir: &Path, cuts: &[serde_json::Value]) -> Result<()> {
    let mut text = String::new();
    for cut in cuts {
        text.push_str(&serde_json::to_string(cut)?);
        text.push('\n');
    }
    fs::write(dir.join(POWER_CUTS), text).with_context(|| format!("writing {POWER_CUTS}"))
}

/// A crashed step: the nemesis acts on the files before anything reads them (a power cut
/// takes back what was never synced); no other process runs now (`cuttable`). True when a
/// power cut was made, its record appended to `cuts`.
pub(super) fn after_crash(
    nemesis: &dyn Nemesis,
    work: &Path,
    scenario: &Scenario,
    step: &Step,
    ended: &Ended,
    cuts: &mut Vec<serde_json::Value>,
) -> Result<bool> {
    let Some(point) = &step.crash else {
        return Ok(false);
    };
    if ended.exit != nemesis.expected_exit() {
        return Ok(false);
    }
    let point = point.split('@').next().unwrap_or(point);
    nemesis.after_crash(&Aftermath {
        work_dir: work,
        point,
    })?;
    if nemesis.name() != "power-loss" {
        return Ok(false);
    }
    cuts.push(crash_mode::last_cut(
        work,
        &scenario.name,
        &step.name,
        point,
    )?);
    Ok(true)
}
