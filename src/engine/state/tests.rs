//! The SQLite store on real files in a temporary directory.

use std::path::Path;

use rusqlite::Connection;

use super::{sha256_file, Cache, FileRow, Part, SnapshotOf, SQLITE};

/// A WAL database at `work/name` with `rows` rows in table `t`, its commits left in the WAL:
/// the connection is returned open, so nothing is checkpointed into the file.
fn wal_db(work: &Path, name: &str, page_size: u32, rows: i64) -> Connection {
    let conn = Connection::open(work.join(name)).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA page_size={page_size}; PRAGMA journal_mode=wal; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n REAL, b BLOB);"
    ))
    .unwrap();
    for id in 0..rows {
        conn.execute(
            "INSERT INTO t (id, body, n, b) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![id, format!("row {id}"), id as f64 / 4.0, vec![id as u8; 3]],
        )
        .unwrap();
    }
    conn
}

/// A complete database (no WAL) with the same rows, inserted in reverse order.
fn rollback_db(path: &Path, page_size: u32, rows: i64) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA page_size={page_size};
         CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL, n REAL, b BLOB);"
    ))
    .unwrap();
    for id in (0..rows).rev() {
        conn.execute(
            "INSERT INTO t (id, body, n, b) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![id, format!("row {id}"), id as f64 / 4.0, vec![id as u8; 3]],
        )
        .unwrap();
    }
}

#[test]
fn snapshot_lists_each_database_then_its_side_files() {
    let work = tempfile::tempdir().unwrap();
    let _open = wal_db(work.path(), "a.db", 4096, 5);
    let rows = SQLITE
        .snapshot(&SnapshotOf::new(
            work.path(),
            &["a.db", "missing.db"],
            "seed",
            "business",
        ))
        .unwrap();
    let files: Vec<&str> = rows.iter().map(|r| r.file.as_str()).collect();
    // The -shm index lies there too (the connection is open) but is never recorded.
    assert!(work.path().join("a.db-shm").is_file());
    assert_eq!(files, ["a.db", "a.db-wal", "missing.db"]);
    let (bytes, sha) = sha256_file(&work.path().join("a.db")).unwrap();
    let db = &rows[0];
    assert_eq!(
        (db.scenario.as_str(), db.after_step.as_str()),
        ("seed", "business")
    );
    assert!(db.exists && db.frozen.is_empty());
    assert_eq!(
        (db.bytes, db.sha256.as_deref()),
        (bytes, Some(sha.as_str()))
    );
    assert_eq!(
        db.logical_sha256.as_deref(),
        Some(SQLITE.logical_digest(work.path(), "a.db").unwrap().as_str())
    );
    let wal = &rows[1];
    assert!(wal.exists && wal.bytes > 0 && wal.logical_sha256.is_none());
    assert_eq!(
        wal.sha256,
        Some(sha256_file(&work.path().join("a.db-wal")).unwrap().1)
    );
    let missing = &rows[2];
    assert!(!missing.exists);
    assert_eq!(
        (missing.bytes, &missing.sha256, &missing.logical_sha256),
        (0, &None, &None)
    );
    // Rows the store takes pass the store's own audit.
    for row in &rows {
        let (_, part) = SQLITE.part(&row.file, &["a.db", "missing.db"]).unwrap();
        assert_eq!(
            SQLITE.row_problems(row, part),
            Vec::<String>::new(),
            "{row:?}"
        );
    }
    assert!(SQLITE
        .rows_problems(&["a.db", "missing.db"], &rows)
        .is_empty());
}

#[test]
fn logical_digest_is_the_same_for_the_same_rows_in_other_pages() {
    let work = tempfile::tempdir().unwrap();
    let _open = wal_db(work.path(), "wal.db", 4096, 40);
    rollback_db(&work.path().join("small.db"), 1024, 40);
    rollback_db(&work.path().join("other.db"), 1024, 41);
    let raw = |name: &str| sha256_file(&work.path().join(name)).unwrap();
    assert_ne!(raw("wal.db"), raw("small.db"), "different bytes");
    let logical = |name: &str| SQLITE.logical_digest(work.path(), name).unwrap();
    assert_eq!(logical("wal.db"), logical("small.db"));
    assert_ne!(logical("small.db"), logical("other.db"), "one more row");
    // Taking the digest touched nothing: no side file appeared beside a complete file.
    assert!(!work.path().join("small.db-shm").exists());
    assert!(!work.path().join("small.db-wal").exists());
}

#[test]
fn a_snapshot_reuses_the_digest_of_an_unchanged_file() {
    let work = tempfile::tempdir().unwrap();
    rollback_db(&work.path().join("a.db"), 4096, 3);
    let mut cache = Cache::new();
    let first = SQLITE
        .snapshot_cached(
            &SnapshotOf::new(work.path(), &["a.db"], "s", "one"),
            &mut cache,
        )
        .unwrap();
    let second = SQLITE
        .snapshot_cached(
            &SnapshotOf::new(work.path(), &["a.db"], "s", "two"),
            &mut cache,
        )
        .unwrap();
    assert_eq!(cache.len(), 1, "one content, one digest taken");
    assert_eq!(first[0].logical_sha256, second[0].logical_sha256);
    assert!(first[0].logical_sha256.is_some());
}

#[test]
fn keep_folds_the_wal_into_one_file_with_the_same_rows() {
    let work = tempfile::tempdir().unwrap();
    let to = tempfile::tempdir().unwrap();
    let open = wal_db(work.path(), "a.db", 4096, 7);
    let before: Vec<FileRow> = SQLITE
        .snapshot(&SnapshotOf::new(work.path(), &["a.db"], "s", "end"))
        .unwrap();
    let kept = SQLITE.keep(work.path(), "a.db", to.path()).unwrap();
    assert_eq!(
        kept, before[0].logical_sha256,
        "the copy shows the recorded state"
    );
    let listed: Vec<String> = std::fs::read_dir(to.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["a.db"], "no side file beside a kept database");
    let copy = Connection::open(to.path().join("a.db")).unwrap();
    let mode: String = copy
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    let n: i64 = copy
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 7);
    // The work directory is as it was.
    let after = SQLITE
        .snapshot(&SnapshotOf::new(work.path(), &["a.db"], "s", "end"))
        .unwrap();
    assert_eq!(before, after);
    // The audit's digest of the kept bytes agrees, and of the original file with its WAL.
    let bytes = std::fs::read(to.path().join("a.db")).unwrap();
    assert_eq!(Some(SQLITE.kept_digest(&bytes, &[]).unwrap()), kept);
    let file = std::fs::read(work.path().join("a.db")).unwrap();
    let wal = std::fs::read(work.path().join("a.db-wal")).unwrap();
    assert_eq!(
        Some(SQLITE.kept_digest(&file, &[("-wal", &wal)]).unwrap()),
        kept
    );
    assert!(SQLITE.kept_digest(&file, &[("-shm", &wal)]).is_err());
    drop(open);
}

#[test]
fn keep_keeps_a_file_that_is_not_a_database_as_its_bytes() {
    let work = tempfile::tempdir().unwrap();
    let to = tempfile::tempdir().unwrap();
    let text = b"not a database, but long enough to be read as a header by SQLite.....";
    std::fs::write(work.path().join("a.db"), text).unwrap();
    assert_eq!(SQLITE.keep(work.path(), "a.db", to.path()).unwrap(), None);
    assert_eq!(std::fs::read(to.path().join("a.db")).unwrap(), text);
    assert_eq!(std::fs::read_dir(to.path()).unwrap().count(), 1);
    let rows = SQLITE
        .snapshot(&SnapshotOf::new(work.path(), &["a.db"], "s", "x"))
        .unwrap();
    assert!(rows[0].exists && rows[0].logical_sha256.is_none());
}

#[test]
fn rows_are_told_apart_and_checked() {
    let names = ["queue.db", "sender.db"];
    assert_eq!(
        SQLITE.part("queue.db", &names),
        Some(("queue.db", Part::Store))
    );
    assert_eq!(
        SQLITE.part("sender.db-wal", &names),
        Some(("sender.db", Part::Side("-wal")))
    );
    assert_eq!(SQLITE.part("sender.db-shm", &names), None, "never recorded");
    assert_eq!(SQLITE.part("other.db", &names), None);
    let side = FileRow {
        scenario: "s".into(),
        after_step: "a".into(),
        file: "queue.db-wal".into(),
        exists: true,
        bytes: 0,
        sha256: Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into()),
        logical_sha256: Some("0".repeat(64)),
        frozen: Vec::new(),
    };
    assert_eq!(
        SQLITE.row_problems(&side, Part::Side("-wal")),
        ["a side file has no logical digest"]
    );
    let mut db = side.clone();
    db.file = "queue.db".into();
    db.bytes = 4096;
    let problems = SQLITE.row_problems(&db, Part::Store);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("4096 bytes disagree with sha256"));
    // The same bytes twice with two logical digests: one content cannot have two.
    let mut a = db.clone();
    a.bytes = 0;
    let mut b = a.clone();
    b.after_step = "b".into();
    b.logical_sha256 = Some("1".repeat(64));
    let problems = SQLITE.rows_problems(&names, &[a, b]);
    assert_eq!(
        problems,
        ["queue.db after b: the same file and WAL as elsewhere, yet another logical_sha256"]
    );
}
