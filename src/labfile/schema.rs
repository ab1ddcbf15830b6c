//! The keys of a lab file (`crashlab.toml`), as serde reads them: every unknown key is a
//! mistake, and every name another key refers to keeps its place in the file (`Spanned`),
//! so a mistake is reported at its line and column.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLab {
    /// The lab's name in evidence and tables: `python-outbox`.
    pub id: Spanned<String>,
    pub title: String,
    /// Stores by name: `[stores.app] sqlite = "app.db"`.
    pub stores: BTreeMap<String, Spanned<Store>>,
    /// Roles by name: `[roles.relay] command = [...]`.
    pub roles: BTreeMap<String, Spanned<Role>>,
    pub scenarios: Vec<Spanned<Scenario>>,
    #[serde(default)]
    pub checks: Vec<Spanned<Check>>,
    #[serde(default)]
    pub invariants: Vec<Spanned<Invariant>>,
    /// The correct design first.
    pub designs: Vec<Spanned<Design>>,
}

/// A SQLite file in the run's directory (`sqlite = "app.db"`), a database of its own on the
/// run's PostgreSQL server (`postgres = true`), created from `schema` (a file beside the lab
/// file) before each scenario when given, or a queue of its own on the run's RabbitMQ broker
/// (`rabbitmq = true`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Store {
    pub sqlite: Option<Spanned<String>>,
    pub postgres: Option<Spanned<bool>>,
    pub rabbitmq: Option<Spanned<bool>>,
    pub schema: Option<Spanned<String>>,
}

/// A command line with placeholders, and the points it announces with their windows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub command: Vec<Spanned<String>>,
    #[serde(default)]
    pub points: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: Spanned<String>,
    pub steps: Spanned<Vec<Spanned<Step>>>,
}

/// A step runs a role (`role`, optionally crashing at `crash = "POINT[@HIT]"`; with `ready =
/// "POINT"` in the background, the next step starting once it announced that point), stops a
/// background step (`stop = "STEP"`), or reads the stores back against a check (`check`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: Option<Spanned<String>>,
    pub role: Option<Spanned<String>>,
    pub crash: Option<Spanned<String>>,
    /// The exit it must have when it does not crash (default 0).
    pub exit: Option<i32>,
    pub check: Option<Spanned<String>>,
    /// In the background: the point it announces once it serves.
    pub ready: Option<Spanned<String>>,
    /// The background step this step ends (SIGTERM, then SIGKILL).
    pub stop: Option<Spanned<String>>,
}

/// A query on the stores (all attached by name) and the value its first column must show.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub name: Spanned<String>,
    pub sql: Spanned<String>,
    pub expect: toml::Value,
}

/// A query whose rows are anomalies of one kind, in Jepsen's words.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invariant {
    pub name: Spanned<String>,
    pub anomaly: Spanned<String>,
    pub sql: Spanned<String>,
}

/// A variant of the roles: `{design.args}` in a command line, `env` in every role's
/// environment, and where it is predicted to break (empty: nowhere).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Design {
    pub name: Spanned<String>,
    #[serde(default)]
    pub args: Option<Spanned<Args>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub predict: Option<Vec<Spanned<Prediction>>>,
}

/// A design's `{design.args}`: the same for every role (`args = ["--fast"]`), or by role
/// (`args = { publisher = ["--variant", "x"] }`; a role not named gets none), for a design
/// that changes one role of several.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "args must be a list of strings, or a table of them by role: { ROLE = [...] }"
)]
pub enum Args {
    Every(Vec<String>),
    ByRole(BTreeMap<String, Vec<String>>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prediction {
    /// `POINT` (every hit) or `POINT@HIT`.
    pub at: Spanned<String>,
    pub anomalies: Vec<Spanned<String>>,
    /// Only under this crash mode (default: every one).
    pub mode: Option<Spanned<String>>,
}
