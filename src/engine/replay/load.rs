//! Reading a run's evidence for the replay: bounded, inside the directory, from the audit's
//! one snapshot of it.

use std::path::{Component, Path};

use serde::Deserialize;

/// The largest stdout the replay reads: a role's trace is kilobytes.
pub const STDOUT_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// One row of `database-files.json`, as the replay needs it. `frozen` names the background
/// steps that were alive (stopped with SIGSTOP) while the row was taken; runs recorded before
/// the field existed read as none.
#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub scenario: String,
    pub after_step: String,
    pub file: String,
    pub exists: bool,
    pub logical_sha256: Option<String>,
    #[serde(default)]
    pub frozen: Vec<String>,
}

/// The after_step of the rows taken once every process of a scenario has ended.
pub const END: &str = "<end>";

/// The evidence the replay reads: the audit's one snapshot of DIR (its first, careful walk
/// read every plain file once), by relative path. The replay opens no path of its own, so a
/// file swapped after that walk (a FIFO, a symlink) is never opened.
pub trait Evidence {
    /// The bytes of a plain file of the snapshot, or why it has none (`missing`, …).
    fn bytes(&self, rel: &str) -> Result<&[u8], String>;
}

/// The text of an evidence file named by a relative path. Refused: a path that leaves the
/// directory, a file the snapshot does not hold, more than the bound.
pub fn read_text(evidence: &dyn Evidence, rel: &str) -> Result<String, String> {
    let path = Path::new(rel);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain || rel.is_empty() {
        return Err("path leaves the evidence directory".to_string());
    }
    let bytes = evidence.bytes(rel)?;
    if bytes.len() as u64 > STDOUT_BYTES_MAX {
        return Err(format!(
            "{} bytes exceed the bound of {STDOUT_BYTES_MAX}",
            bytes.len()
        ));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

pub fn rows(evidence: &dyn Evidence) -> Result<Vec<Row>, String> {
    let text = read_text(evidence, crate::engine::evidence::DATABASE_FILES)?;
    serde_json::from_str(&text).map_err(|e| format!("malformed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_are_refused_and_only_the_snapshot_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "x\n").unwrap();
        let snapshot = crate::engine::audit::snapshot(dir.path());
        // Read once by the walk: what the disk holds later is not read again.
        std::fs::write(dir.path().join("sub/a.txt"), "changed\n").unwrap();
        assert_eq!(read_text(&snapshot, "sub/a.txt").unwrap(), "x\n");
        assert!(read_text(&snapshot, "../a.txt").is_err());
        assert!(read_text(&snapshot, "/etc/passwd").is_err());
        assert!(read_text(&snapshot, "").is_err());
        assert_eq!(read_text(&snapshot, "sub/none").unwrap_err(), "missing");
    }

    #[test]
    fn a_row_without_frozen_reads_as_none_frozen() {
        let row: Row = serde_json::from_str(
            r#"{"scenario":"s","after_step":"a","file":"x.db","exists":true,"bytes":1,"sha256":null,"logical_sha256":"ab"}"#,
        )
        .unwrap();
        assert!(row.frozen.is_empty());
    }
}
