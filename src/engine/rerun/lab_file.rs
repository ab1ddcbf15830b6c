//! A lab file's run, rerun: the lab file found again where the run found it, unchanged since,
//! and the recorded command made to run it by its whole path from the rerun's temporary
//! directory.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::fail;

/// The lab file a lab file's run names, found again from where `audit --rerun` runs and
/// unchanged since (its SHA-256 is the recorded one): the rerun runs the user's commands,
/// which the evidence does not hold, so a lab file that moved or changed is said, not run.
pub fn found_again(record: &serde_json::Value, where_: &str) -> Result<PathBuf> {
    let named = record
        .get("lab_file")
        .and_then(|l| l.as_str())
        .unwrap_or("");
    let sha = record
        .get("lab_sha256")
        .and_then(|l| l.as_str())
        .unwrap_or("");
    if named.is_empty() || sha.is_empty() {
        return Err(fail::usage(format!(
            "{where_}: records no lab_file and lab_sha256"
        )));
    }
    let path = std::path::absolute(named)
        .map_err(|e| fail::usage(format!("{where_}: cannot locate {named}: {e}")))?;
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            return Err(fail::usage(format!(
                "{where_}: the lab file {named} is not readable from here ({e}): run audit --rerun where the run started"
            )))
        }
    };
    let now = crate::labfile::evidence::lab_sha256(&text);
    if now != sha {
        return Err(fail::usage(format!(
            "{where_}: the lab file {named} changed since the run (sha256 {}…, recorded {}…): a rerun would run another lab",
            &now[..12.min(now.len())],
            &sha[..12.min(sha.len())]
        )));
    }
    Ok(path)
}

/// The recorded command after `crashlab`, its lab argument (`lab`) made the whole path
/// `found`: the one occurrence that, replaced, parses as the command's lab.
pub fn whole_path(command: &[String], lab: &str, found: &Path) -> Option<Vec<String>> {
    let whole = found.display().to_string();
    (2..command.len())
        .filter(|&i| command[i] == lab)
        .map(|i| {
            let mut replaced = command.to_vec();
            replaced[i] = whole.clone();
            replaced
        })
        .find(|replaced| {
            let parsed = Cli::parse_recorded(replaced).ok().map(|c| c.command);
            match parsed {
                Some(Command::Driver { lab, .. }) => lab == whole,
                Some(Command::Explore(args)) => args.lab == whole,
                _ => false,
            }
        })
        .map(|replaced| replaced[1..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn the_lab_argument_is_made_whole_and_a_flag_value_of_the_same_text_is_not() {
        let whole = Path::new("/x/y/crashlab.toml");
        assert_eq!(
            whole_path(
                &words("crashlab driver a/crashlab.toml --out d"),
                "a/crashlab.toml",
                whole
            ),
            Some(words("driver /x/y/crashlab.toml --out d"))
        );
        // `--out` names the same text: only the positional lab is replaced.
        assert_eq!(
            whole_path(
                &words("crashlab explore --out crashlab.toml --json crashlab.toml"),
                "crashlab.toml",
                whole
            ),
            Some(words(
                "explore --out crashlab.toml --json /x/y/crashlab.toml"
            ))
        );
        assert_eq!(
            whole_path(&words("crashlab driver other.toml"), "crashlab.toml", whole),
            None
        );
    }
}
