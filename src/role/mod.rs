//! What every role shares. A role is one struct: `#[derive(clap::Args)]` makes its flags and
//! their parsing, `#[derive(Serialize)]` its argv from the very same fields (`Role::argv`),
//! and `Role::run` its body. Its flags are spelled once, in that struct.
//!
//! Also here: the crash flags every role takes, arming the crash point, and a readback's
//! output with `--expect`'s check.

mod argv;
mod stage;

use anyhow::Result;
use serde::Serialize;

pub use argv::Argv;
pub use stage::{lookup, Stage};

use crate::crash;
use crate::fail;

/// A role: a subcommand of the lab it belongs to, run as a fresh process by the engine.
pub trait Role: clap::Args + clap::FromArgMatches + Serialize {
    /// Its subcommand: `sender`, `publisher`.
    const NAME: &'static str;

    /// Its body: the exit code (`fail::EXIT_OK`), or an error whose kind gives the code.
    fn run(self) -> Result<i32>;

    /// The argv that runs this role with these values: `NAME --flag value …`, in field
    /// order, a value equal to its flag's default left out (crash flags are the engine's).
    fn argv(&self) -> Argv {
        Argv::of(Self::NAME, &command::<Self>(), self)
    }
}

/// A role as the command line and the engine see it: its name, its parser, its body.
#[derive(Clone, Copy)]
pub struct RoleEntry {
    pub name: &'static str,
    /// Its subcommand, flags and help.
    pub command: fn() -> clap::Command,
    /// Parses its flags from the matches of its subcommand and runs it.
    pub run: fn(&clap::ArgMatches) -> Result<i32>,
}

/// The entry of role `R`, for a lab's list of roles.
pub const fn entry<R: Role>() -> RoleEntry {
    RoleEntry {
        name: R::NAME,
        command: command::<R>,
        run: run::<R>,
    }
}

fn command<R: Role>() -> clap::Command {
    R::augment_args(clap::Command::new(R::NAME))
}

fn run<R: Role>(matches: &clap::ArgMatches) -> Result<i32> {
    let role = R::from_arg_matches(matches).map_err(|e| fail::usage(e.to_string()))?;
    role.run()
}

/// Test support: the argv of `role` parses back into the very same values (its flags are
/// spelled once, so its argv and its parser cannot drift apart).
#[cfg(test)]
pub fn parses_back<R: Role + PartialEq + std::fmt::Debug>(role: &R) {
    let words = std::iter::once(R::NAME.to_string()).chain(role.argv().args().to_vec());
    let matches = command::<R>()
        .try_get_matches_from(words)
        .unwrap_or_else(|e| panic!("{role:?}: {e}"));
    assert_eq!(&R::from_arg_matches(&matches).unwrap(), role);
}

/// Where a role may be stopped: its `--crash-at` and `--crash-mode`, which the engine adds to
/// the argv of whichever role it crashes (so never part of `Role::argv`).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashArgs {
    /// Crash at the N-th time POINT is reached (`crashlab points` lists them)
    #[arg(long, value_name = "POINT[@N]")]
    pub crash_at: Option<String>,
    /// How the crash stops the process
    #[arg(long, value_enum, default_value_t = crash::Mode::Exit)]
    pub crash_mode: crash::Mode,
}

/// How a readback role prints and checks what it read.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadbackArgs {
    /// Print the readback JSON as the last line of stdout
    #[arg(long)]
    pub json: bool,
    /// Compare with a stage of this role's lab and exit 1 with a diff on mismatch
    #[arg(long, value_name = "STAGE")]
    pub expect: Option<String>,
}

impl ReadbackArgs {
    /// As a scenario's readback step runs it: the JSON line, checked against `stage` if any.
    pub fn expecting(stage: Option<&str>) -> ReadbackArgs {
        ReadbackArgs {
            json: true,
            expect: stage.map(str::to_string),
        }
    }
}

/// Arm the crash point of a role; an unknown or foreign point is a usage error. Without
/// `--crash-at`, the point protocol's environment arms it (`CRASHLAB_CRASH_AT`,
/// `CRASHLAB_CRASH_MODE`), as it arms any user's role: so a lab file runs crashlab's own
/// roles as it runs anyone's.
pub fn arm(args: &CrashArgs, role: &str, points: &'static [crash::PointDef]) -> Result<()> {
    let (spec, mode) = match &args.crash_at {
        Some(spec) => (Some(spec.clone()), args.crash_mode),
        None => {
            let mode = match std::env::var(crate::point::CRASH_MODE_ENV) {
                Ok(name) => crate::point::mode_named(&name).ok_or_else(|| {
                    fail::usage(format!(
                        "{}={name}: not exit, abort, kill or hang",
                        crate::point::CRASH_MODE_ENV
                    ))
                })?,
                Err(_) => args.crash_mode,
            };
            // Empty: no crash, as when it is not set.
            let spec = std::env::var(crate::point::CRASH_AT_ENV).ok();
            (spec.filter(|s| !s.is_empty()), mode)
        }
    };
    if let Some(spec) = spec {
        let at = crash::parse(&spec, points, Some(role)).map_err(|e| match &args.crash_at {
            Some(_) => e,
            None => fail::usage(format!(
                "{}={spec}: {}",
                crate::point::CRASH_AT_ENV,
                fail::one_line(&e)
            )),
        })?;
        crash::arm(at, mode);
    }
    Ok(())
}

/// The stage `--expect NAME` names among a lab's stages; an unknown name lists the known ones.
pub fn expected_stage(name: Option<&str>, stages: &[Stage]) -> Result<Option<Stage>> {
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
    state: &impl Serialize,
    line: &str,
    stage: Option<Stage>,
) -> Result<i32> {
    let value = serde_json::to_value(state)?;
    match json {
        true => crate::out::line(&serde_json::to_string(&value)?),
        false => crate::out::line(line),
    }
    check_stage(stage, &value)
}

/// `--expect`: exit 1 with the field-by-field diff when the readback is not the stage.
fn check_stage(stage: Option<Stage>, readback: &serde_json::Value) -> Result<i32> {
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
