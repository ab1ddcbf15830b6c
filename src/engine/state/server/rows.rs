//! The audit's checks of server rows in `database-files.json`: a server store has no files,
//! so a row has no size and no raw digest; an existing store has a logical digest.

use super::super::{FileRow, Part};
use crate::common::is_sha256;

pub(super) fn row_problems(row: &FileRow, part: Part) -> Vec<String> {
    let mut problems = Vec::new();
    if part != Part::Store {
        problems.push("a server store has no side files".to_string());
        return problems;
    }
    if row.bytes != 0 || row.sha256.is_some() {
        problems.push("a server store has no size or raw digest".to_string());
    }
    let digest = row.logical_sha256.as_deref().is_some_and(is_sha256);
    match (row.exists, digest) {
        (true, false) => problems.push("exists but lacks a well-formed logical digest".to_string()),
        (false, _) if row.logical_sha256.is_some() => {
            problems.push("does not exist, yet has a digest".to_string())
        }
        _ => {}
    }
    problems
}

/// Every store has its row after every step: one row per name per (scenario, step).
pub(super) fn rows_problems(names: &[&str], rows: &[FileRow]) -> Vec<String> {
    let mut problems = Vec::new();
    for row in rows {
        if !names.contains(&row.file.as_str()) {
            problems.push(format!("{} is no store of the lab", row.file));
        }
    }
    problems
}
