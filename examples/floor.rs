//! The bare-process floor a lab step is measured against: a Rust binary that opens SQLite in
//! WAL with synchronous=FULL, inserts one row, commits and exits. A step of crashlab does the
//! same kind of work plus its contract (pinned pragmas, schema check, trace, events), so
//! `step / floor` is what the harness and the contract cost.
//!
//! `cargo build --release --example floor && target/release/examples/floor DIR/floor.db`

use rusqlite::Connection;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: floor FILE (a database file to create or append to)");
    let conn = Connection::open(&path).expect("the database opens");
    conn.pragma_update(None, "journal_mode", "wal")
        .expect("WAL is set");
    conn.pragma_update(None, "synchronous", "full")
        .expect("synchronous is set");
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT NOT NULL);
         INSERT INTO t(v) VALUES ('one row');
         COMMIT;",
    )
    .expect("one row commits");
}
