//! The role-side store on real SQLite files in a temporary directory.

use super::*;
use crate::fail;

static NOTES: Schema = Schema {
    db: "notes",
    user_version: 901,
    tables: &[("note", &["id", "body"])],
    ddl: "CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
};

static OTHER: Schema = Schema {
    db: "other",
    user_version: 902,
    tables: &[("note", &["id", "body"])],
    ddl: "CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
};

#[test]
fn a_trace_line_is_one_line_with_the_store_named() {
    assert_eq!(
        trace_line("queue", "SELECT 1 WHERE 'a' = 'a'"),
        "SQL queue SELECT 1 WHERE 'a' = 'a'"
    );
    assert_eq!(
        trace_line(
            "sender",
            "INSERT INTO t\n      (a, b)\n\n    VALUES (1, 'x')\n"
        ),
        "SQL sender INSERT INTO t (a, b) VALUES (1, 'x')"
    );
}

#[test]
fn open_creates_the_schema_and_pins_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    let db = open_traced(&path, &NOTES, Access::WriteCreate, false).unwrap();
    assert_eq!(db.db, "notes");
    let pragma = |name: &str| -> String {
        db.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get::<_, rusqlite::types::Value>(0)
            })
            .map(|v| match v {
                rusqlite::types::Value::Integer(i) => i.to_string(),
                rusqlite::types::Value::Text(t) => t,
                other => format!("{other:?}"),
            })
            .unwrap()
    };
    // The values PRAGMAS records for the evidence, as SQLite reports them back.
    let reported = [
        ("wal", "journal_mode"),
        ("2", "synchronous"),
        ("1", "foreign_keys"),
    ];
    for (value, name) in reported {
        assert!(PRAGMAS.iter().any(|(n, _)| *n == name), "{name} is pinned");
        assert_eq!(pragma(name), value, "{name}");
    }
    assert_eq!(pragma("busy_timeout"), BUSY_TIMEOUT_MS.to_string());
    assert_eq!(pragma("application_id"), APPLICATION_ID.to_string());
    assert_eq!(pragma("user_version"), "901");
    db.conn
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO note (id, body) VALUES (1, 'one'); COMMIT")
        .unwrap();
    drop(db);
    // A readback: read-only, the rows in order.
    let read = open_existing(&path, &NOTES, false)
        .unwrap()
        .expect("exists");
    let notes = rows(&read, "SELECT id, body FROM note ORDER BY id", &path, |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })
    .unwrap();
    assert_eq!(notes, [(1, "one".to_string())]);
    assert!(read
        .conn
        .execute_batch("INSERT INTO note (id, body) VALUES (2, 'two')")
        .is_err());
}

#[test]
fn a_missing_store_is_neither_created_nor_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    assert!(open_existing(&path, &NOTES, false).unwrap().is_none());
    for access in [Access::Read, Access::Write] {
        let error = open_traced(&path, &NOTES, access, false).err().unwrap();
        assert_eq!(fail::exit_code(&error), fail::EXIT_USAGE);
        assert!(error.to_string().contains("notes database"), "{error}");
        assert!(error.to_string().ends_with("does not exist"), "{error}");
    }
    assert!(!path.exists());
}

#[test]
fn a_store_of_another_kind_is_refused_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    drop(open_traced(&path, &NOTES, Access::WriteCreate, false).unwrap());
    let before = std::fs::read(&path).unwrap();
    let error = open_traced(&path, &OTHER, Access::Write, false)
        .err()
        .unwrap();
    assert_eq!(fail::exit_code(&error), fail::EXIT_USAGE);
    assert!(
        error.to_string().contains("has a foreign schema"),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "byte for byte");
}

#[test]
fn a_busy_is_worded_as_what_happened() {
    let busy = |extended_code| {
        let error = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error {
                code: rusqlite::ErrorCode::DatabaseBusy,
                extended_code,
            },
            None,
        );
        super::explain(error, "queue", "queue.db")
    };
    let waited = busy(rusqlite::ffi::SQLITE_BUSY);
    assert_eq!(fail::exit_code(&waited), fail::EXIT_LOCKED);
    assert!(waited.to_string().contains("past the"), "{waited}");
    // A stale snapshot is answered at once: no timeout passed.
    let stale = busy(rusqlite::ffi::SQLITE_BUSY_SNAPSHOT);
    assert_eq!(fail::exit_code(&stale), fail::EXIT_LOCKED);
    assert!(!stale.to_string().contains("past the"), "{stale}");
    assert!(
        stale.to_string().contains("SQLITE_BUSY_SNAPSHOT"),
        "{stale}"
    );
}
