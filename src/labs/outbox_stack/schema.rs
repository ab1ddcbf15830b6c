//! Lab 14's stores on the server stack: the sender and the receiver, each a PostgreSQL
//! database. The DDL is written so that SQLite accepts it too with the same meaning (the
//! server store's logical digest loads PostgreSQL's rows into SQLite under it, and the audit
//! replays the traced statements on it): natural keys only (no sequence, no AUTOINCREMENT),
//! `TEXT` and `BIGINT` (SQLite gives `BIGINT` integer affinity, PostgreSQL 64 bits), `CHECK`s
//! both read alike.

use crate::store::Schema;

/// The sender: contracts and their Outbox rows, keyed by message id. The publisher sends
/// pending rows in message-id order.
pub static SENDER: Schema = Schema {
    db: "sender",
    user_version: 1411,
    tables: &[
        ("contracts", &["contract_id", "amount"]),
        (
            "outbox",
            &["message_id", "contract_id", "amount", "status", "sent_ms"],
        ),
    ],
    ddl: "CREATE TABLE IF NOT EXISTS contracts(
            contract_id TEXT PRIMARY KEY,
            amount BIGINT NOT NULL CHECK (amount > 0));
          CREATE TABLE IF NOT EXISTS outbox(
            message_id TEXT PRIMARY KEY,
            contract_id TEXT NOT NULL REFERENCES contracts(contract_id),
            amount BIGINT NOT NULL CHECK (amount > 0),
            status TEXT NOT NULL CHECK (status IN ('pending', 'sent')),
            sent_ms BIGINT);
          CREATE INDEX IF NOT EXISTS outbox_status ON outbox(status, message_id);",
};

/// The receiver: the Inbox (one row per message applied), the ledger, and one receipt per
/// physical message the broker delivered (keyed by the id its publish gave it): how many
/// times it came, whether it came redelivered, and what the consumer made of it.
pub static RECEIVER: Schema = Schema {
    db: "receiver",
    user_version: 1413,
    tables: &[
        (
            "inbox",
            &[
                "message_id",
                "digest",
                "contract_id",
                "amount",
                "publish_id",
                "applied_ms",
            ],
        ),
        ("ledger", &["contract_id", "balance", "credits"]),
        (
            "receipts",
            &[
                "publish_id",
                "message_id",
                "outcome",
                "redelivered",
                "handled",
            ],
        ),
    ],
    ddl: "CREATE TABLE IF NOT EXISTS inbox(
            message_id TEXT PRIMARY KEY,
            digest TEXT NOT NULL,
            contract_id TEXT NOT NULL,
            amount BIGINT NOT NULL,
            publish_id TEXT NOT NULL,
            applied_ms BIGINT NOT NULL);
          CREATE TABLE IF NOT EXISTS ledger(
            contract_id TEXT PRIMARY KEY,
            balance BIGINT NOT NULL,
            credits BIGINT NOT NULL);
          CREATE TABLE IF NOT EXISTS receipts(
            publish_id TEXT PRIMARY KEY,
            message_id TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'rejected')),
            redelivered BIGINT NOT NULL CHECK (redelivered IN (0, 1)),
            handled BIGINT NOT NULL);",
};

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite accepts the DDL, and the tables it makes have the columns the schema lists.
    #[test]
    fn the_ddl_is_valid_sqlite_with_the_listed_columns() {
        for schema in [&SENDER, &RECEIVER] {
            let conn = rusqlite::Connection::open_in_memory().unwrap();
            conn.execute_batch(schema.ddl)
                .unwrap_or_else(|e| panic!("{}: {e}", schema.db));
            for (table, columns) in schema.tables {
                let mut stmt = conn
                    .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                    .unwrap();
                let names: Vec<String> = stmt
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                for c in *columns {
                    assert!(names.iter().any(|n| n == c), "{table}.{c} in {names:?}");
                }
            }
        }
    }
}
