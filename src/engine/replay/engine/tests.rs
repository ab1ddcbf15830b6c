//! The replayer on statements written here: transaction boundaries, crash discard,
//! failed statements, pragmas.

use super::*;

fn count(store: &Store, file: &str, sql: &str) -> i64 {
    store
        .conn(file)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

fn setup(store: &mut Store, session: &mut Session) {
    for (i, sql) in [
        "BEGIN IMMEDIATE",
        "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER NOT NULL CHECK (v > 0));",
        "COMMIT",
    ]
    .iter()
    .enumerate()
    {
        session.feed(store, i, "a.db", sql);
    }
}

#[test]
fn a_transaction_counts_only_at_its_commit_and_a_rollback_never() {
    let mut store = Store::default();
    let mut p = Session::default();
    setup(&mut store, &mut p);
    assert!(!p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE"));
    assert!(!p.feed(&mut store, 11, "a.db", "INSERT INTO t VALUES ('x', 1)"));
    // Another process reads committed state only.
    let mut reader = Session::default();
    reader.feed(&mut store, 0, "a.db", "SELECT count(*) FROM t");
    assert_eq!(reader.outcomes[&0].rows, vec![vec![Value::Integer(0)]]);
    assert!(p.feed(&mut store, 12, "a.db", "COMMIT"));
    assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 1);
    assert_eq!(p.outcomes[&11].changes, 1);
    assert_eq!(p.outcomes[&11].rowid, Some(1));
    let unit = p.units.last().unwrap();
    assert_eq!(unit.end, End::Committed);
    assert_eq!(unit.touched.len(), 1);
    assert_eq!(
        unit.touched[0].row,
        Some(vec![Value::Text("x".into()), Value::Integer(1)])
    );
    p.feed(&mut store, 13, "a.db", "BEGIN IMMEDIATE");
    p.feed(&mut store, 14, "a.db", "INSERT INTO t VALUES ('y', 2)");
    assert!(!p.feed(&mut store, 15, "a.db", "ROLLBACK"));
    assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 1);
    assert_eq!(p.units.last().unwrap().end, End::RolledBack);
    assert_eq!(p.outcomes[&14].changes, 1, "what it did is still recorded");
}

#[test]
fn a_process_that_ends_inside_a_transaction_is_discarded() {
    let mut store = Store::default();
    let mut p = Session::default();
    setup(&mut store, &mut p);
    p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE");
    p.feed(&mut store, 11, "a.db", "INSERT INTO t VALUES ('x', 1)");
    assert!(p.in_transaction("a.db"));
    p.end(&mut store, 12);
    assert!(!p.in_transaction("a.db"));
    assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 0);
    assert_eq!(p.units.last().unwrap().end, End::Discarded);
}

#[test]
fn failed_statements_fail_in_the_replay_too() {
    let mut store = Store::default();
    let mut p = Session::default();
    setup(&mut store, &mut p);
    p.feed(&mut store, 10, "a.db", "INSERT INTO t VALUES ('x', 1)");
    p.feed(&mut store, 11, "a.db", "BEGIN IMMEDIATE");
    p.feed(&mut store, 12, "a.db", "INSERT INTO t VALUES ('x', 5)");
    p.feed(&mut store, 13, "a.db", "INSERT INTO t VALUES ('z', -1)");
    p.feed(&mut store, 14, "a.db", "ROLLBACK");
    let dup = p.outcomes[&12].error.as_deref().unwrap();
    assert!(dup.contains("UNIQUE"), "{dup}");
    let check = p.outcomes[&13].error.as_deref().unwrap();
    assert!(check.contains("CHECK"), "{check}");
    assert_eq!(count(&store, "a.db", "SELECT sum(v) FROM t"), 1);
    // COMMIT with nothing open fails as SQLite would.
    p.feed(&mut store, 15, "a.db", "COMMIT");
    assert!(p.outcomes[&15].error.is_some());
}

#[test]
fn a_begin_inside_an_open_transaction_waits_for_it() {
    let mut store = Store::default();
    let mut p = Session::default();
    setup(&mut store, &mut p);
    p.feed(&mut store, 10, "a.db", "BEGIN IMMEDIATE");
    p.feed(&mut store, 11, "a.db", "BEGIN IMMEDIATE");
    p.feed(&mut store, 12, "a.db", "INSERT INTO t VALUES ('x', 1)");
    assert!(p.feed(&mut store, 13, "a.db", "COMMIT"));
    assert_eq!(p.interleaved, vec![11]);
    assert!(p.in_transaction("a.db"), "the waiting BEGIN starts now");
    p.feed(&mut store, 14, "a.db", "INSERT INTO t VALUES ('y', 2)");
    assert!(p.feed(&mut store, 15, "a.db", "COMMIT"));
    assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 2);
}

#[test]
fn connection_pragmas_are_skipped_and_content_pragmas_kept() {
    let mut store = Store::default();
    let mut p = Session::default();
    p.feed(&mut store, 0, "a.db", "PRAGMA journal_mode=wal");
    p.feed(&mut store, 1, "a.db", "PRAGMA query_only=ON");
    assert!(p.feed(&mut store, 2, "a.db", "PRAGMA user_version=7"));
    assert_eq!(count(&store, "a.db", "PRAGMA user_version"), 7);
    assert!(!p.outcomes.contains_key(&0));
    p.feed(&mut store, 3, "a.db", "PRAGMA foreign_keys=ON");
    p.feed(
        &mut store,
        4,
        "a.db",
        "CREATE TABLE p(id INTEGER PRIMARY KEY)",
    );
    p.feed(
        &mut store,
        5,
        "a.db",
        "CREATE TABLE c(id INTEGER REFERENCES p(id))",
    );
    p.feed(&mut store, 6, "a.db", "INSERT INTO c VALUES (9)");
    assert!(p.outcomes[&6]
        .error
        .as_deref()
        .unwrap()
        .contains("FOREIGN KEY"));
    // Another process that never turned foreign keys on writes the same row freely.
    let mut q = Session::default();
    q.feed(&mut store, 0, "a.db", "INSERT INTO c VALUES (9)");
    assert_eq!(q.outcomes[&0].error, None);
}

#[test]
fn a_cut_takes_a_file_back_to_the_latest_state_of_its_window_the_row_records() {
    let mut store = Store::default();
    store.record_windows();
    let mut p = Session::default();
    setup(&mut store, &mut p);
    store.committed("a.db");
    let digest = |store: &Store| store.digest("a.db").unwrap();
    let schema_only = digest(&store);
    for (i, v) in [(20, 1), (21, 2)] {
        assert!(p.feed(
            &mut store,
            i,
            "a.db",
            &format!("INSERT INTO t VALUES ('k{v}', {v})")
        ));
        store.committed("a.db");
    }
    let two = digest(&store);
    // The row says the file holds the schema only: two commits are taken back.
    let back = store.roll_back("a.db", &|d| d == Some(schema_only.as_str()));
    assert_eq!(back, Some(2));
    assert_eq!(count(&store, "a.db", "SELECT count(*) FROM t"), 0);
    // A state the window never held is no state a cut leaves: nothing moves.
    assert_eq!(
        store.roll_back("a.db", &|d| d == Some("not a digest")),
        None
    );
    assert_eq!(digest(&store), schema_only);
    // After the cut a new window opens: the states before it are out of reach.
    store.open_window();
    assert_eq!(store.roll_back("a.db", &|d| d == Some(two.as_str())), None);
    // No file at all: the window's base when the file did not exist yet.
    let mut fresh = Store::default();
    fresh.record_windows();
    setup(&mut fresh, &mut Session::default());
    fresh.committed("a.db");
    assert_eq!(fresh.roll_back("a.db", &|d| d.is_none()), Some(1));
    assert!(fresh.conn("a.db").is_none() && fresh.holds_nothing("a.db"));
}
