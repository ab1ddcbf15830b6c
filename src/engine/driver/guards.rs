//! What the driver refuses before a run (a power cut under a background step, a server kill
//! it may not make) and the record of the cuts it made.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Options, POWER_CUTS};
use crate::engine::fleet;
use crate::engine::nemesis::Nemesis;
use crate::engine::scenario::Scenario;
use crate::engine::Lab;
use crate::fail;

/// A server kill needs a lab on servers, a server of its stack, and private servers: a server
/// the user gave is never killed (one line, exit 2).
pub(super) fn servers_killable(lab: &Lab, options: &Options) -> Result<()> {
    let Some(server) = options.stack.server else {
        return Ok(());
    };
    fleet::check_kill(lab, &options.stack, server)
}

/// A power cut acts on files nobody holds open: a lab whose scenarios keep a process running
/// in the background (a server) cannot be cut by the driver; one line, exit 2.
pub(super) fn cuttable(scenarios: &[Scenario], nemesis: &dyn Nemesis) -> Result<()> {
    if nemesis.name() != "power-loss" {
        return Ok(());
    }
    for s in scenarios {
        if let Some(step) = s.steps.iter().find(|st| st.background.is_some()) {
            return Err(fail::usage(format!(
                "--crash-mode power-loss: scenario {} keeps step {} running in the background, which a cut would kill under later steps; explore this lab under power loss instead",
                s.name, step.name
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
