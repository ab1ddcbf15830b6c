//! What the power-loss tests share: the checks on what a run leaves behind.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

/// No file of the shim's undo log or its stash in an evidence directory.
pub fn no_undo_files(dir: &Path) {
    for file in super::common::files(dir) {
        let name = file.to_string_lossy();
        assert!(!name.contains("power-undo"), "{name} kept in the evidence");
    }
}

/// A sentinel database and a sentinel file beside the runs' work directories: no cut of any
/// run may touch them.
pub fn sentinels(root: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let db = root.join("sender.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    fs::write(root.join("power-undo.log"), b"not a run's log").unwrap();
    [db, root.join("power-undo.log")]
        .into_iter()
        .map(|p| {
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}
