//! `explore.json`: the report as it is, pretty-printed.

use anyhow::{Context, Result};

use crate::engine::explore::report::Report;

pub fn render(report: &Report) -> Result<String> {
    serde_json::to_string_pretty(report).context("serializing the explore report")
}
