//! A lab file (`crashlab.toml`): a user's own system under crashlab. Its roles are command
//! lines that speak the point protocol (`crate::point`), its stores SQLite files, PostgreSQL
//! databases or RabbitMQ queues (read back into SQLite copies), its checks and invariants SQL. `load` reads and
//! validates it before any process starts: a mistake is one line, `FILE:LINE:COL: what`, exit
//! 2. docs/own-system.md holds every key.

pub mod chaos;
mod check;
pub mod driver;
pub mod evidence;
pub mod explore;
mod lab;
mod out;
mod postgres;
mod queue;
pub mod report;
pub mod run;
mod schema;
mod servers;
pub mod stores;
mod value;

use std::path::Path;

use anyhow::Result;

use crate::fail;

pub use lab::{
    CheckDef, DesignDef, InvariantDef, PredictDef, RoleDef, ScenarioDef, StepDef, StoreDef, UserLab,
};
pub use value::{points_text, to_value};

/// A lab file bigger than this is refused (a lab file is a page of text).
const FILE_BYTES_MAX: u64 = 1024 * 1024;

/// Whether a lab argument names a lab file rather than a built-in lab.
pub fn is_file(lab: &str) -> bool {
    lab.ends_with(".toml") || Path::new(lab).is_file()
}

/// Read and validate the lab file at `path`: one line `FILE:LINE:COL: what`, exit 2, for its
/// first mistake.
pub fn load(path: &Path) -> Result<UserLab> {
    let shown = path.display().to_string();
    let size = std::fs::metadata(path)
        .map_err(|e| fail::usage(format!("{shown}: cannot read the lab file: {e}")))?
        .len();
    if size > FILE_BYTES_MAX {
        return Err(fail::usage(format!(
            "{shown}: {size} bytes, more than the {FILE_BYTES_MAX} a lab file may hold"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| fail::usage(format!("{shown}: cannot read the lab file: {e}")))?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::path::absolute(parent)
        .map_err(|e| fail::usage(format!("{shown}: cannot locate the lab file: {e}")))?;
    check::validate(&text, path, &dir).map_err(|m| fail::usage(format!("{shown}:{m}")))
}
