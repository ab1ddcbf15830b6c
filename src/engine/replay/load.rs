//! Reading a run's evidence for the replay: bounded, inside the directory, never through a
//! symlink.

use std::fs;
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

/// The text of an evidence file named by a relative path. Refused: a path that leaves the
/// directory, a symlink anywhere along it, anything but a regular file, more than the bound.
pub fn read_text(dir: &Path, rel: &str) -> Result<String, String> {
    let path = Path::new(rel);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain || rel.is_empty() {
        return Err("path leaves the evidence directory".to_string());
    }
    let mut at = dir.to_path_buf();
    for part in path.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symlink; the replay reads no file through one",
                    part.as_os_str().to_string_lossy()
                ))
            }
            Ok(_) => {}
            Err(_) => return Err("missing".to_string()),
        }
    }
    let meta = fs::symlink_metadata(&at).map_err(|e| format!("unreadable: {e}"))?;
    if !meta.is_file() {
        return Err("is not a file".to_string());
    }
    if meta.len() > STDOUT_BYTES_MAX {
        return Err(format!(
            "{} bytes exceed the bound of {STDOUT_BYTES_MAX}",
            meta.len()
        ));
    }
    let bytes = fs::read(&at).map_err(|e| format!("unreadable: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn rows(dir: &Path) -> Result<Vec<Row>, String> {
    let text = read_text(dir, crate::engine::evidence::DATABASE_FILES)?;
    serde_json::from_str(&text).map_err(|e| format!("malformed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_and_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/a.txt"), "x\n").unwrap();
        assert_eq!(read_text(dir.path(), "sub/a.txt").unwrap(), "x\n");
        assert!(read_text(dir.path(), "../a.txt").is_err());
        assert!(read_text(dir.path(), "/etc/passwd").is_err());
        std::os::unix::fs::symlink(dir.path().join("sub"), dir.path().join("link")).unwrap();
        let e = read_text(dir.path(), "link/a.txt").unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        assert_eq!(read_text(dir.path(), "sub/none").unwrap_err(), "missing");
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
