//! A driver run's pictures (`timeline.svg` per output directory, `report.html`) are drawn by
//! pure functions from the recorded files (lab/report): the audit draws them again from the
//! same files, as it read them, and each must be exactly there, byte for byte.

use std::collections::BTreeSet;

use super::tree::Tree;
use super::Report;
use crate::engine::evidence::{self, Processes, Results};
use crate::engine::files::FileRow;
use crate::engine::report::{self, model};

/// Check the pictures; returns the paths they take, for the list of files the run writes.
pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    processes: &Processes,
    results: Option<&Results>,
) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    let files: Option<Vec<FileRow>> = tree.json(report, evidence::DATABASE_FILES);
    let (Some(results), Some(files)) = (results, files) else {
        return paths;
    };
    if processes.processes.len() != results.steps.len() {
        // Said by the results check; the pictures cannot be drawn from such records.
        return paths;
    }
    // As model::load reads a run, from the audit's snapshot of DIR (never through a link).
    let read = |rel: &str| {
        tree.get(rel).map(|b| {
            let cut = b.len() as u64 > model::OUTPUT_BYTES_MAX;
            let kept = &b[..b.len().min(model::OUTPUT_BYTES_MAX as usize)];
            (String::from_utf8_lossy(kept).into_owned(), cut)
        })
    };
    let outputs = model::outputs_of(processes, read);
    let ev = model::Evidence {
        processes: processes.clone(),
        results: results.clone(),
        files,
        outputs,
    };
    for (rel, text) in report::render(&ev) {
        match tree.get(&rel) {
            Some(bytes) if bytes == text.as_bytes() => {}
            Some(_) => report.problem(&rel, "is not the picture the recorded evidence draws"),
            None if tree.has_file(&rel) => {}
            None => report.problem(&rel, "missing: the driver draws it from the records"),
        }
        paths.insert(rel);
    }
    paths
}
