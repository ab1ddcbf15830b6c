//! Reading evidence files: inside DIR, bounded in size, and JSON parsed with a problem on failure.

use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::de::DeserializeOwned;

use super::Report;

/// The largest evidence file the audit reads: a run's files are kilobytes.
const FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// A path recorded in evidence must stay inside DIR.
pub(super) fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let path = Path::new(rel);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && !rel.is_empty()).then(|| dir.join(path))
}

pub(super) fn read_text(report: &mut Report, dir: &Path, rel: &str) -> Option<String> {
    let Some(path) = inside(dir, rel) else {
        report.problem(rel, "path leaves the evidence directory");
        return None;
    };
    match fs::metadata(&path) {
        Ok(m) if m.len() > FILE_BYTES_MAX => {
            report.problem(
                rel,
                format!("{} bytes exceed the bound of {FILE_BYTES_MAX}", m.len()),
            );
            return None;
        }
        Ok(m) if !m.is_file() => {
            report.problem(rel, "is not a file");
            return None;
        }
        Ok(_) => {}
        Err(_) => {
            report.problem(rel, "missing");
            return None;
        }
    }
    match fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            report.problem(rel, format!("unreadable: {e}"));
            None
        }
    }
}

pub(super) fn read_json<T: DeserializeOwned>(
    report: &mut Report,
    dir: &Path,
    rel: &str,
) -> Option<T> {
    let text = read_text(report, dir, rel)?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            report.problem(rel, format!("malformed or truncated JSON: {e}"));
            None
        }
    }
}
