//! A lab file as the engine reads it, every name resolved: its stores, roles, scenarios,
//! checks, invariants and designs. `check` makes it from the file's text; every other part of
//! `labfile` reads it.

use std::path::PathBuf;

use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;

/// A validated lab file, every name resolved.
#[derive(Debug, Clone)]
pub struct UserLab {
    /// The file's text as read and validated: the evidence copies this, never the file
    /// again (it may have changed since the run began).
    pub text: String,
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
    /// Its file in the run's directory: for a store on a server, the SQLite copy the checks
    /// and invariants read (`NAME.postgres.db`, `NAME.rabbitmq.db`).
    pub file: String,
    pub kind: StoreKind,
    /// The SQL that creates it before each scenario.
    pub schema: Option<String>,
    /// Its schema's file, as the lab file names it (beside the lab file).
    pub schema_file: Option<String>,
}

/// Where a store lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// A file in the run's directory.
    Sqlite,
    /// A database of its own on the command's PostgreSQL server.
    Postgres,
    /// A queue of its own on the command's RabbitMQ broker.
    Rabbitmq,
}

impl StoreKind {
    /// The key that declares it in a lab file, and the server it lives on.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
            StoreKind::Rabbitmq => "rabbitmq",
        }
    }

    /// On a server: made there per scenario run, and read back into a SQLite copy.
    pub fn on_server(self) -> bool {
        self != StoreKind::Sqlite
    }
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
        /// In the background: the point it announces once it serves; the next step starts
        /// then, and a later `Stop` ends it.
        ready: Option<String>,
    },
    Check {
        name: String,
        check: String,
    },
    /// Ends the background step at index `step` (SIGTERM, then SIGKILL after a grace).
    Stop {
        name: String,
        step: usize,
    },
}

impl StepDef {
    pub fn name(&self) -> &str {
        match self {
            StepDef::Run { name, .. }
            | StepDef::Check { name, .. }
            | StepDef::Stop { name, .. } => name,
        }
    }
}

#[derive(Debug, Clone)]
pub struct CheckDef {
    pub name: String,
    pub sql: String,
    /// Where `sql` starts in the lab file's text (a byte offset), for a mistake found at run
    /// time.
    pub sql_at: usize,
    /// The first column of the first row, as text (an integer as its digits).
    pub expect: String,
}

#[derive(Debug, Clone)]
pub struct InvariantDef {
    pub name: String,
    pub anomaly: Anomaly,
    pub sql: String,
    /// Where `sql` starts in the lab file's text (a byte offset).
    pub sql_at: usize,
}

#[derive(Debug, Clone)]
pub struct DesignDef {
    pub name: String,
    /// `{design.args}` for every role, unless `role_args` is given.
    pub args: Vec<String>,
    /// `{design.args}` by role: a role not named gets none.
    pub role_args: Vec<(String, Vec<String>)>,
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

impl DesignDef {
    /// What `{design.args}` stands for in `role`'s command line.
    pub fn args_for(&self, role: &str) -> &[String] {
        if self.role_args.is_empty() {
            return &self.args;
        }
        self.role_args
            .iter()
            .find(|(r, _)| r == role)
            .map_or(&[], |(_, args)| args.as_slice())
    }
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
