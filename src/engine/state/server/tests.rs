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
    let loaded = dump::load(text.as_bytes(), &[&SCHEMA]).unwrap();
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
    assert!(dump::load(b"CREATE TABLE x (a);", &[&SCHEMA]).is_err());
    // Cut before its COMMIT: refused at the line where COMMIT; should be.
    let cut = &text[..text.find("COMMIT;").unwrap()];
    let e = dump::load(cut.as_bytes(), &[&SCHEMA]).unwrap_err();
    let lines = cut.matches('\n').count();
    assert!(
        format!("{e:#}").starts_with(&format!("line {}: ", lines + 1)),
        "{e:#}"
    );
}

/// `text` with `what` put in at the start of line `line` (1-based).
fn put(text: &str, line: usize, what: &str) -> String {
    let at: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    format!("{}{what}{}", &text[..at], &text[at..])
}

/// The refusal of `text`: one line, naming the line `line`.
fn refused(text: &str, line: usize) -> String {
    let e = dump::load(text.as_bytes(), &[&SCHEMA]).unwrap_err();
    let e = format!("{e:#}");
    assert!(!e.contains('\n'), "{e}");
    assert!(e.starts_with(&format!("line {line}: ")), "{e}");
    e
}

#[test]
fn a_dump_is_read_only_in_the_form_crashlab_writes_and_never_run() {
    let text = dump::write(&filled(), &SCHEMA).unwrap();
    let lines = text.matches('\n').count();
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("evil.db");
    let evil = evil.to_str().unwrap();
    // Before BEGIN;, among the DDL, among the rows, after COMMIT;: each refused, and the
    // file an ATTACH or VACUUM INTO would make never appears.
    let attach = format!("ATTACH '{evil}' AS e; CREATE TABLE e.pwn(x);\n");
    refused(&put(&text, 2, &attach), 2);
    refused(&put(&text, 3, &attach), 3);
    refused(&put(&text, 5, &format!("VACUUM INTO '{evil}';\n")), 5);
    assert!(!std::path::Path::new(evil).exists());
    let recursive =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c;\n";
    refused(&format!("{text}{recursive}"), lines + 1);
    refused(&format!("{text}COMMIT;\n"), lines + 1);
    refused(&put(&text, 4, "CREATE TEMP TABLE t(x);\n"), 4);
    refused(&put(&text, 6, "DELETE FROM entry;\n"), 6);
    let rollback = text.replace("COMMIT;\n", "DELETE FROM entry;\nROLLBACK;\n");
    refused(&rollback, lines);
    // A row split over two lines, and two rows on one: not as the writer writes them.
    let split = text.replacen("\") VALUES (", "\")\nVALUES (", 1);
    refused(&split, 5);
    let joined = text.replacen("-7);\nINSERT", "-7); INSERT", 1);
    refused(&joined, 5);
    // Rows out of key order: the loaded rows written again differ from the dump.
    let mut rows: Vec<&str> = text.lines().collect();
    rows.swap(4, 7);
    let swapped = format!("{}\n", rows.join("\n"));
    let e = refused(&swapped, 5);
    assert!(e.contains("key order"), "{e}");
    // A DDL that is not the lab's.
    refused(&text.replacen("amount INTEGER", "amount TEXT", 1), 3);
    // The dump as written still loads.
    assert!(dump::load(text.as_bytes(), &[&SCHEMA]).is_ok());
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
