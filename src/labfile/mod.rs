//! A lab file (`crashlab.toml`): a user's own system under crashlab. Its roles are command
//! lines that speak the point protocol (`crate::point`), its stores SQLite files, its checks
//! and invariants SQL. `load` reads and validates it before any process starts: a mistake is
//! one line, `FILE:LINE:COL: what`, exit 2. docs/own-system.md holds every key.

pub mod chaos;
mod check;
pub mod driver;
pub mod evidence;
pub mod explore;
mod out;
pub mod run;
mod schema;
mod value;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;
use crate::fail;

pub use value::{points_text, to_value};

/// A lab file bigger than this is refused (a lab file is a page of text).
const FILE_BYTES_MAX: u64 = 1024 * 1024;

/// A validated lab file, every name resolved.
#[derive(Debug, Clone)]
pub struct UserLab {
    /// The file as given.
    pub path: PathBuf,
    /// Its directory, whole: `{lab}` in a command line.
    pub dir: PathBuf,
    pub id: String,
    pub title: String,
    pub stores: Vec<StoreDef>,
    pub roles: Vec<RoleDef>,
    pub scenarios: Vec<ScenarioDef>,
    pub checks: Vec<CheckDef>,
    pub invariants: Vec<InvariantDef>,
    pub designs: Vec<DesignDef>,
}

#[derive(Debug, Clone)]
pub struct StoreDef {
    pub name: String,
    /// Its file in the run's directory.
    pub file: String,
    /// The SQL that creates it before each scenario.
    pub schema: Option<String>,
    /// Its schema's file, as the lab file names it (beside the lab file).
    pub schema_file: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RoleDef {
    pub name: String,
    pub command: Vec<String>,
    /// Its points and their windows.
    pub points: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct ScenarioDef {
    pub name: String,
    pub steps: Vec<StepDef>,
}

#[derive(Debug, Clone)]
pub enum StepDef {
    Run {
        name: String,
        role: String,
        /// Where it crashes in `driver`: (point, hit).
        crash: Option<(String, u32)>,
        exit: i32,
    },
    Check {
        name: String,
        check: String,
    },
}

impl StepDef {
    pub fn name(&self) -> &str {
        match self {
            StepDef::Run { name, .. } | StepDef::Check { name, .. } => name,
        }
    }
}

#[derive(Debug, Clone)]
pub struct CheckDef {
    pub name: String,
    pub sql: String,
    /// The first column of the first row, as text (an integer as its digits).
    pub expect: String,
}

#[derive(Debug, Clone)]
pub struct InvariantDef {
    pub name: String,
    pub anomaly: Anomaly,
    pub sql: String,
}

#[derive(Debug, Clone)]
pub struct DesignDef {
    pub name: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub predict: Vec<PredictDef>,
}

/// Where a design breaks: at `point` (at `hit`, or every hit), with exactly these anomalies.
#[derive(Debug, Clone)]
pub struct PredictDef {
    pub point: String,
    pub hit: Option<u32>,
    pub anomalies: Vec<Anomaly>,
    pub mode: Option<Mode>,
}

impl PredictDef {
    pub fn covers(&self, point: &str, hit: u32, mode: Mode) -> bool {
        self.point == point
            && self.hit.is_none_or(|h| h == hit)
            && self.mode.is_none_or(|m| m == mode)
    }

    pub fn at(&self) -> String {
        match self.hit {
            Some(hit) => format!("{}@{hit}", self.point),
            None => self.point.clone(),
        }
    }
}

impl UserLab {
    pub fn role(&self, name: &str) -> Option<&RoleDef> {
        self.roles.iter().find(|r| r.name == name)
    }

    pub fn check(&self, name: &str) -> Option<&CheckDef> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The point's role and window, when a role declares it.
    pub fn point(&self, name: &str) -> Option<(&RoleDef, &str)> {
        self.roles.iter().find_map(|r| {
            r.points
                .iter()
                .find(|(p, _)| p == name)
                .map(|(_, w)| (r, w.as_str()))
        })
    }
}

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
