//! What every lab's roles share around their own work: arming the crash point, and the
//! readback's output with `--expect`'s check.

use anyhow::Result;

use crate::cli::CrashArgs;
use crate::crash;
use crate::engine;
use crate::fail;

/// Arm the crash point of a phase; an unknown or foreign point is a usage error.
pub fn arm(args: &CrashArgs, phase: &str, points: &'static [crash::PointDef]) -> Result<()> {
    if let Some(spec) = &args.crash_at {
        let at = crash::parse(spec, points, Some(phase))?;
        crash::arm(at, args.crash_mode);
    }
    Ok(())
}

/// The stage `--expect NAME` names among a lab's stages; an unknown name lists the known ones.
pub fn expected_stage(
    name: Option<&str>,
    stages: &[engine::scenario::Stage],
) -> Result<Option<engine::scenario::Stage>> {
    let Some(name) = name else {
        return Ok(None);
    };
    match stages.iter().find(|s| s.name == name) {
        Some(stage) => Ok(Some(*stage)),
        None => {
            let known: Vec<&str> = stages.iter().map(|s| s.name).collect();
            Err(fail::usage(format!(
                "unknown stage '{name}'; known: {}",
                known.join(", ")
            )))
        }
    }
}

/// A readback's output: its JSON (`--json`) or its one human line; then `--expect`'s check.
pub fn readback_out(
    json: bool,
    state: &impl serde::Serialize,
    line: &str,
    stage: Option<engine::scenario::Stage>,
) -> Result<i32> {
    let value = serde_json::to_value(state)?;
    match json {
        true => crate::out::line(&serde_json::to_string(&value)?),
        false => crate::out::line(line),
    }
    check_stage(stage, &value)
}

/// `--expect`: exit 1 with the field-by-field diff when the readback is not the stage.
fn check_stage(
    stage: Option<engine::scenario::Stage>,
    readback: &serde_json::Value,
) -> Result<i32> {
    if let Some(stage) = stage {
        let problems = stage.diff(readback);
        if !problems.is_empty() {
            return Err(fail::failed(format!(
                "readback does not match stage {}: {}",
                stage.name,
                problems.join("; ")
            )));
        }
    }
    Ok(fail::EXIT_OK)
}
