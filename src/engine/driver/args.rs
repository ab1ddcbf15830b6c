//! What a user gives the driver: crash moves (`--move-crash`), the output directory (claimed
//! before the run, refused when it exists) and its default name.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::crash;
use crate::engine::scenario::Scenario;
use crate::engine::LabStack;
use crate::fail;

/// Apply `--move-crash` to the scenarios; every error is a usage error naming the move.
pub fn apply_moves(lab: &LabStack, scenarios: &mut [Scenario], moves: &[String]) -> Result<()> {
    for spec in moves {
        let (name, point) = spec.split_once('=').ok_or_else(|| {
            fail::usage(format!(
                "--move-crash {spec}: expected STEP=POINT[@N] or STEP=none"
            ))
        })?;
        // `SCENARIO/STEP` names one step; a bare `STEP` every step of that name.
        let (only, step_name) = match name.split_once('/') {
            Some((scenario, step)) => (Some(scenario), step),
            None => (None, name),
        };
        let matching: Vec<&mut crate::engine::scenario::Step> = scenarios
            .iter_mut()
            .filter(|s| only.is_none_or(|o| o == s.name))
            .flat_map(|s| s.steps.iter_mut())
            .filter(|s| s.name == step_name)
            .collect();
        if matching.is_empty() {
            return Err(fail::usage(format!(
                "--move-crash {spec}: lab {} has no step '{name}'",
                lab.id()
            )));
        }
        for step in matching {
            if point == "none" {
                // No crash: the step runs to its end and must exit 0 (results.json says so).
                step.crash = None;
                step.expected_exit = fail::EXIT_OK;
                continue;
            }
            if !lab.points.iter().any(|p| p.phase() == step.phase) {
                return Err(fail::usage(format!(
                    "--move-crash {spec}: step {name} runs {}, which has no crash points",
                    step.phase
                )));
            }
            crash::parse(point, lab.points, Some(step.phase))?;
            step.crash = Some(point.to_string());
        }
    }
    Ok(())
}

/// The suffix of the directory a run writes until it is complete.
const PARTIAL: &str = ".partial";
/// The longest name of one directory entry (Linux's NAME_MAX).
const NAME_BYTES_MAX: usize = 255;

/// A path a user gave, refused when it exists; its `.partial` sibling is where the run writes
/// until it is complete, so the final directory appears whole or not at all.
pub fn claim_out(out: &Path) -> Result<PathBuf> {
    let partial = check_out(out)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| out_error(e, parent))?;
    }
    fs::create_dir(&partial).map_err(|e| out_error(e, &partial))?;
    // Held until this process ends, however it ends (a SIGKILL included).
    if let Err(e) = crate::owner::lock_for_life(&partial) {
        let _ = fs::remove_dir(&partial);
        return Err(fail::io(format!("locking {}: {e}", partial.display())));
    }
    Ok(partial)
}

/// What `claim_out` refuses, found without making anything: a run that starts servers first
/// says so before they start. The `.partial` sibling it would write.
pub fn check_out(out: &Path) -> Result<PathBuf> {
    if out.exists() {
        return Err(fail::usage(format!(
            "output directory {} already exists; choose a new one (evidence is never overwritten)",
            out.display()
        )));
    }
    let name = out
        .file_name()
        .ok_or_else(|| fail::usage(format!("output directory {} has no name", out.display())))?;
    // The `.partial` sibling must be a legal name too (NAME_MAX: 255 bytes on Linux).
    if name.len() + PARTIAL.len() > NAME_BYTES_MAX {
        return Err(fail::usage(format!(
            "output directory name is {} bytes; at most {} (its {PARTIAL} sibling must fit in {NAME_BYTES_MAX})",
            name.len(),
            NAME_BYTES_MAX - PARTIAL.len()
        )));
    }
    let partial = out.with_file_name(format!("{}{PARTIAL}", name.to_string_lossy()));
    if partial.exists() {
        // The run writing a `.partial` holds its lock for its life: a lock that can be
        // taken means that run is gone, and what it left can go.
        return Err(match crate::owner::held(&partial) {
            Ok(true) => fail::locked(format!(
                "{} is being written by a crashlab run still going; choose another --out",
                partial.display()
            )),
            _ => fail::usage(format!(
                "{} was left by a crashlab run that is gone; remove it: rm -rf '{}'",
                partial.display(),
                partial.display()
            )),
        });
    }
    // A parent that is no directory (`--out afile/sub`, `/dev/null/x`) is bad input, said
    // before anything is made.
    if let Some(file) = out
        .ancestors()
        .skip(1)
        .find(|a| fs::metadata(a).is_ok_and(|m| !m.is_dir()))
    {
        return Err(fail::usage(format!(
            "output directory {}: {} is not a directory",
            out.display(),
            file.display()
        )));
    }
    Ok(partial)
}

/// A directory for the output that cannot be made: a path the user may not write or that
/// names no directory is bad input (exit 2); anything else (a full disk) an I/O error (74).
fn out_error(error: std::io::Error, path: &Path) -> anyhow::Error {
    use std::io::ErrorKind;
    let message = format!("creating {}: {error}", path.display());
    match error.kind() {
        // A parent that exists yet takes no new directory (`/proc`) is a place the user
        // named, not a fault of the machine.
        ErrorKind::NotFound
        | ErrorKind::PermissionDenied
        | ErrorKind::ReadOnlyFilesystem
        | ErrorKind::NotADirectory
        | ErrorKind::AlreadyExists
        | ErrorKind::InvalidFilename => fail::usage(message),
        _ => fail::io(message),
    }
}

/// `target/lab/14-outbox-inbox-20261202T190000Z`: the default output directory.
pub fn default_out(lab: &LabStack) -> PathBuf {
    PathBuf::from("target")
        .join("lab")
        .join(format!("{}-{}", lab.full_name(), utc_stamp()))
}

/// The UTC time as `YYYYMMDDTHHMMSSZ` (civil-from-days, Howard Hinnant's algorithm).
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::registry;

    /// A lab with a crashing step in a scenario of several steps (any registered lab will do:
    /// the tests take its names from its own definition).
    fn lab_and_crash() -> (&'static LabStack, Vec<Scenario>, String, String) {
        let lab = registry::stacks().next().expect("a lab");
        let scenarios = (lab.scenarios)();
        let step = scenarios
            .iter()
            .flat_map(|s| &s.steps)
            .find(|s| s.crash.is_some())
            .expect("a lab has a crashing step");
        let other = lab
            .points
            .iter()
            .find(|p| p.phase() == step.phase && Some(p.name) != step.crash_point())
            .expect("the phase has another point")
            .name;
        let name = step.name.clone();
        (lab, scenarios, name, other.to_string())
    }

    #[test]
    fn a_move_sets_the_step_s_point_and_none_makes_it_run_to_its_end() {
        let (lab, mut scenarios, step, other) = lab_and_crash();
        apply_moves(lab, &mut scenarios, &[format!("{step}={other}@2")]).unwrap();
        let moved = scenarios
            .iter()
            .flat_map(|s| &s.steps)
            .find(|s| s.name == step);
        assert_eq!(
            moved.unwrap().crash.as_deref(),
            Some(format!("{other}@2").as_str())
        );
        apply_moves(lab, &mut scenarios, &[format!("{step}=none")]).unwrap();
        let moved = scenarios
            .iter()
            .flat_map(|s| &s.steps)
            .find(|s| s.name == step);
        assert_eq!(moved.unwrap().crash, None);
        assert_eq!(moved.unwrap().expected_exit, fail::EXIT_OK);
    }

    #[test]
    fn a_bad_move_is_a_usage_error_naming_it() {
        let (lab, mut scenarios, step, _) = lab_and_crash();
        let err = |spec: &str, scenarios: &mut Vec<Scenario>| {
            apply_moves(lab, scenarios, &[spec.to_string()])
                .unwrap_err()
                .to_string()
        };
        assert!(err("no-equals", &mut scenarios).contains("expected STEP=POINT[@N]"));
        assert!(err("no-such-step=x.y", &mut scenarios).contains("has no step 'no-such-step'"));
        let unknown = err(&format!("{step}=nowhere.at-all"), &mut scenarios);
        assert!(unknown.contains("unknown crash point"), "{unknown}");
        // Nothing was changed by the refused moves.
        assert_eq!(scenarios.len(), (lab.scenarios)().len());
    }
}
