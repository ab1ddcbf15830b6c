//! The recorded command (`processes.json` `command`), parsed by the very parser the binary
//! uses, so the audit knows exactly what the driver or chaos was asked to do. (`--no-trace`
//! changes neither: the children of both always trace.)

use crate::cli::{Cli, Command};
use crate::crash::Mode;
use crate::engine::crash_mode::{self, CrashMode};
use crate::engine::nemesis::Nemesis;
use crate::fail;
use crate::power::cut::Style;
use crate::power::profile::Profile;

/// What `crashlab driver LAB …` asked for.
pub struct Driver {
    pub lab: String,
    pub keep_db: bool,
    pub moves: Vec<String>,
    pub crash_mode: CrashMode,
    /// The fault the command injects (a power cut with its style and seed).
    pub nemesis: &'static dyn Nemesis,
    /// The store profile the command asks for.
    pub profile: Profile,
    /// A power cut's style and seed, as the command gives them (defaults filled in).
    pub cut: Option<(Style, u64)>,
    pub step_timeout_ms: u64,
    /// `--stack`, the server URLs and `--server`.
    pub stack: Box<crate::engine::stack::StackArgs>,
}

/// What `crashlab chaos LAB …` asked for.
pub struct Chaos {
    pub lab: String,
    pub options: crate::engine::load::chaos::Options,
}

pub enum Parsed {
    Driver(Driver),
    Chaos(Chaos),
}

/// Parse a recorded command line; an error says why it is not one of a run's commands.
pub fn parse(command: &[String]) -> Result<Parsed, String> {
    let cli = Cli::parse_recorded(command).map_err(|reason| match reason {
        None => format!("command {command:?} does not start with crashlab"),
        Some(first) => format!(
            "command {:?} is not one crashlab accepts: {}",
            command.join(" "),
            if first.is_empty() {
                "does not parse"
            } else {
                &first
            }
        ),
    })?;
    match cli.command {
        Command::Driver {
            lab,
            out: _,
            keep_db,
            moves,
            crash_mode,
            power,
            seed,
            step_timeout_ms,
            json: _,
            junit: _,
            stack,
        } => {
            let refused = |e: anyhow::Error| {
                format!(
                    "command {:?} is not one crashlab runs: {}",
                    command.join(" "),
                    fail::one_line(&e)
                )
            };
            let nemesis = crash_mode::choose_on(crash_mode, power.cut, seed, stack.server)
                .map_err(refused)?;
            let profile = power.profile().map_err(refused)?;
            Ok(Parsed::Driver(Driver {
                lab,
                keep_db,
                moves,
                crash_mode,
                nemesis,
                profile,
                cut: (crash_mode == CrashMode::PowerLoss).then(|| {
                    (
                        power.cut.unwrap_or(Style::Drop),
                        seed.unwrap_or(crash_mode::CUT_SEED_DEFAULT),
                    )
                }),
                step_timeout_ms,
                stack,
            }))
        }
        command @ Command::Chaos { .. } => {
            let (lab, options) = command.into_chaos().expect("a chaos command");
            Ok(Parsed::Chaos(Chaos { lab, options }))
        }
        _ => Err(format!(
            "command {:?} is neither a driver nor a chaos run",
            command.join(" ")
        )),
    }
}

pub fn mode_named(name: &str) -> Option<Mode> {
    [Mode::Exit, Mode::Abort, Mode::Kill, Mode::Hang]
        .into_iter()
        .find(|m| m.name() == name)
}
