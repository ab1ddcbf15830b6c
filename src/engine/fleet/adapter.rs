//! The engine's servers are `crate::servers::Servers`.

use std::path::Path;

use anyhow::Result;

use super::Fleet;
use crate::engine::stack::{StackArgs, StackDef};

/// Start (or reach) the servers of `def` under `dir`.
pub fn start(_def: &StackDef, _args: &StackArgs, _dir: &Path) -> Result<Box<dyn Fleet>> {
    Err(crate::fail::unavailable(
        "this build of crashlab cannot start servers yet",
    ))
}
