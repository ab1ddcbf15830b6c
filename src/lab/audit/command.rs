//! The recorded command (`processes.json` `command`), parsed by the very parser the binary
//! uses, so the audit knows exactly what the driver or chaos was asked to do. (`--no-trace`
//! changes neither: the children of both always trace.)

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::crash::Mode;

/// What `crashlab driver LAB …` asked for.
pub struct Driver {
    pub lab: String,
    pub keep_db: bool,
    pub moves: Vec<String>,
    pub crash_mode: Mode,
    pub step_timeout_ms: u64,
}

/// What `crashlab chaos LAB …` asked for.
pub struct Chaos {
    pub lab: String,
    pub options: crate::load::chaos::Options,
}

pub enum Parsed {
    Driver(Driver),
    Chaos(Chaos),
}

/// Parse a recorded command line; an error says why it is not one of a run's commands.
pub fn parse(command: &[String]) -> Result<Parsed, String> {
    if command.first().map(String::as_str) != Some("crashlab") {
        return Err(format!("command {command:?} does not start with crashlab"));
    }
    let cli = Cli::try_parse_from(command).map_err(|e| {
        let text = e.render().to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("does not parse")
            .trim()
            .to_string();
        format!(
            "command {:?} is not one crashlab accepts: {}",
            command.join(" "),
            first.strip_prefix("error: ").unwrap_or(&first)
        )
    })?;
    match cli.command {
        Command::Driver {
            lab,
            out: _,
            keep_db,
            moves,
            crash_mode,
            step_timeout_ms,
        } => Ok(Parsed::Driver(Driver {
            lab,
            keep_db,
            moves,
            crash_mode,
            step_timeout_ms,
        })),
        Command::Chaos {
            lab,
            messages,
            consumers,
            kills,
            seed,
            batch,
            lease_ms,
            process_timeout_ms,
            timeout_ms,
            json,
            out,
        } => Ok(Parsed::Chaos(Chaos {
            lab,
            options: crate::load::chaos::Options {
                messages,
                consumers,
                kills,
                seed,
                batch,
                lease_ms,
                process_timeout_ms,
                timeout_ms,
                json,
                out,
            },
        })),
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
