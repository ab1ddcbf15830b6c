//! Commands read back from evidence: a recorded command line parsed with the binary's own
//! parser, and a chaos command turned into the options its run and its audit share.

use clap::Parser;

use super::{Cli, Command};

impl Cli {
    /// Parse a command line recorded in evidence (`crashlab …`) with the binary's own parser.
    /// The error is `None` when it does not start with `crashlab`, else the first line of the
    /// parser's message; each caller words it for its own report.
    pub fn parse_recorded(command: &[String]) -> Result<Cli, Option<String>> {
        if command.first().map(String::as_str) != Some("crashlab") {
            return Err(None);
        }
        Cli::try_parse_from(command).map_err(|e| {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("").trim();
            Some(first.strip_prefix("error: ").unwrap_or(first).to_string())
        })
    }
}

impl Command {
    /// A `crashlab chaos …` command as the lab it names and the options it runs with; the one
    /// conversion both the command and the audit of its evidence use.
    pub fn into_chaos(self) -> Option<(String, crate::engine::load::chaos::Options)> {
        match self {
            Command::Chaos { lab, options } => Some((lab, options)),
            _ => None,
        }
    }
}
