//! `stack.json`: where a role on servers finds them. The engine writes it into the work
//! directory of each scenario (the roles' current directory) before the first step; a role
//! reads it and connects by logical name. Nothing else tells a role where the servers are,
//! so a step's argv stays the same from run to run while ports change.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The file's name in the work directory.
pub const NAME: &str = "stack.json";

/// The servers of one scenario, by logical name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackFile {
    /// `--stack` name of the run: `postgres-rabbitmq`.
    pub stack: String,
    /// Logical database (`sender`) → connection URL of this scenario's own database
    /// (`postgres://crashlab@127.0.0.1:PORT/crashlab_…_sender`).
    pub postgres: BTreeMap<String, String>,
    /// The broker's AMQP URL, when the stack has one.
    pub amqp_url: Option<String>,
    /// Logical queue (`messages`) → this scenario's own queue name.
    pub queues: BTreeMap<String, String>,
    /// The queues' type (`x-queue-type`): every role declares them with it (a declare with
    /// other arguments is refused by the broker). Absent in a file of an older run: classic.
    #[serde(default)]
    pub queue_type: crate::engine::stack::QueueType,
}

/// Read `stack.json` in `dir`; one line naming the file when it is missing or malformed.
pub fn read(dir: &Path) -> Result<StackFile> {
    let path = dir.join(NAME);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        crate::fail::usage(format!(
            "{}: {e} (a role on servers reads where they are from {NAME} in its directory; the driver writes it)",
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| crate::fail::usage(format!("{}: not a stack file: {e}", path.display())))
}

/// Write `stack.json` into `dir` whole: a temporary file renamed over it, so a role never
/// reads half of one.
pub fn write(dir: &Path, file: &StackFile) -> Result<()> {
    let tmp = dir.join(format!("{NAME}.tmp"));
    let text = serde_json::to_string_pretty(file)?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(NAME)).with_context(|| format!("writing {NAME}"))
}
