use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::*;
use crate::engine::state::sqlite::logical_sha256_conn;

static SCHEMA: Schema = Schema {
    db: "ledger",
    user_version: 0,
    tables: &[("entry", &["id", "note", "amount"]), ("seen", &["key"])],
    ddl: "CREATE TABLE IF NOT EXISTS entry (id TEXT PRIMARY KEY, note TEXT, amount INTEGER NOT NULL);\n\
          CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY);",
};

fn filled() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(SCHEMA.ddl).unwrap();
    // Inserted out of key order, with a quote, a newline and a NULL.
    conn.execute_batch(
        "INSERT INTO entry VALUES ('b', 'it''s\nhere', 25);\n\
         INSERT INTO entry VALUES ('a', NULL, -7);\n\
         INSERT INTO seen VALUES ('m1');",
    )
    .unwrap();
    conn
}

#[test]
fn a_dump_loads_back_to_the_same_logical_digest() {
    let conn = filled();
    let text = dump::write(&conn, &SCHEMA).unwrap();
    assert!(text.starts_with(dump::HEADER));
    // Rows in key order: `a` before `b`.
    let a = text.find("VALUES ('a'").unwrap();
    let b = text.find("VALUES ('b'").unwrap();
    assert!(a < b, "{text}");
    let loaded = dump::load(text.as_bytes()).unwrap();
    assert_eq!(
        logical_sha256_conn(&loaded).unwrap(),
        logical_sha256_conn(&conn).unwrap()
    );
    // One row changed: another digest.
    conn.execute("UPDATE entry SET amount = 26 WHERE id = 'b'", [])
        .unwrap();
    assert_ne!(
        logical_sha256_conn(&loaded).unwrap(),
        logical_sha256_conn(&conn).unwrap()
    );
}

#[test]
fn a_dump_that_is_not_crashlab_s_or_is_cut_is_refused() {
    let text = dump::write(&filled(), &SCHEMA).unwrap();
    assert!(dump::load(b"CREATE TABLE x (a);").is_err());
    // Cut before its COMMIT: the transaction stays open, refused.
    let cut = &text[..text.find("COMMIT;").unwrap()];
    let e = dump::load(cut.as_bytes()).unwrap_err();
    assert!(format!("{e:#}").contains("transaction open"), "{e:#}");
}

#[test]
fn literals_read_the_same_in_both_dialects() {
    assert_eq!(dump::literal(ValueRef::Null).unwrap(), "NULL");
    assert_eq!(dump::literal(ValueRef::Integer(-3)).unwrap(), "-3");
    assert_eq!(dump::literal(ValueRef::Real(2.0)).unwrap(), "2.0");
    assert_eq!(dump::literal(ValueRef::Text(b"o'k")).unwrap(), "'o''k'");
    assert!(dump::literal(ValueRef::Blob(b"x")).is_err());
    assert!(dump::literal(ValueRef::Real(f64::NAN)).is_err());
}

#[test]
fn a_kept_queue_digests_as_its_count() {
    let kept = vec![
        queue::Kept {
            message_id: Some("M1".into()),
            redelivered: false,
            body: "{}".into(),
        },
        queue::Kept {
            message_id: None,
            redelivered: true,
            body: "x".into(),
        },
    ];
    let text = queue::write("messages", &kept).unwrap();
    let digest = queue::kept_digest(text.as_bytes()).unwrap().unwrap();
    assert_eq!(digest, queue::digest_of_count(2));
    assert_ne!(digest, queue::digest_of_count(1));
    // A line dropped: the count says otherwise.
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    assert!(queue::kept_digest(cut.as_bytes()).unwrap().is_err());
    // A dump is no queue.
    assert!(queue::kept_digest(dump::HEADER.as_bytes()).is_none());
    // The store reads either kind.
    let store = ServerStore { schemas: &[] };
    assert_eq!(store.kept_digest(text.as_bytes(), &[]).unwrap(), digest);
}

#[test]
fn server_rows_have_no_size_and_a_digest_when_they_exist() {
    let row = |exists: bool, logical: Option<&str>, sha: Option<&str>| FileRow {
        scenario: "s".into(),
        after_step: "a".into(),
        file: "sender".into(),
        exists,
        bytes: 0,
        sha256: sha.map(str::to_string),
        logical_sha256: logical.map(str::to_string),
        frozen: Vec::new(),
    };
    let store = ServerStore { schemas: &[] };
    let hex = queue::digest_of_count(0);
    assert!(store
        .row_problems(&row(true, Some(&hex), None), Part::Store)
        .is_empty());
    assert!(store
        .row_problems(&row(false, None, None), Part::Store)
        .is_empty());
    assert_eq!(
        store
            .row_problems(&row(true, None, None), Part::Store)
            .len(),
        1
    );
    assert_eq!(
        store
            .row_problems(&row(false, Some(&hex), None), Part::Store)
            .len(),
        1
    );
    assert_eq!(
        store
            .row_problems(&row(true, Some(&hex), Some(&hex)), Part::Store)
            .len(),
        1
    );
}
