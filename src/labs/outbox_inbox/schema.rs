//! Lab 14's stores. On SQLite three files: sender, queue, receiver. On the servers two
//! PostgreSQL databases, sender and receiver (the queue is RabbitMQ's). Table names are the
//! contract; columns are ours.
//!
//! The servers' DDL is written so that SQLite accepts it too with the same meaning (the
//! server store's logical digest loads PostgreSQL's rows into SQLite under it, and the audit
//! replays the traced statements on it): natural keys only (no sequence, no AUTOINCREMENT),
//! `TEXT` and `BIGINT` (SQLite gives `BIGINT` integer affinity, PostgreSQL 64 bits), `CHECK`s
//! both read alike.

use crate::store::Schema;

pub static SENDER: Schema = Schema {
    db: "sender",
    user_version: 1401,
    tables: &[
        ("contracts", &["contract_id", "amount"]),
        (
            "outbox",
            &["seq", "message_id", "contract_id", "amount", "status"],
        ),
    ],
    ddl: "CREATE TABLE contracts(
            contract_id TEXT PRIMARY KEY,
            amount INTEGER NOT NULL CHECK (amount > 0));
          CREATE TABLE outbox(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id TEXT NOT NULL UNIQUE,
            contract_id TEXT NOT NULL REFERENCES contracts(contract_id),
            amount INTEGER NOT NULL CHECK (amount > 0),
            status TEXT NOT NULL CHECK (status IN ('pending', 'sent')),
            sent_ms INTEGER);
          CREATE INDEX outbox_status ON outbox(status, seq);",
};

pub static QUEUE: Schema = Schema {
    db: "queue",
    user_version: 1402,
    tables: &[(
        "deliveries",
        &[
            "delivery_id",
            "message_id",
            "payload",
            "status",
            "reason",
            "claimed_by",
            "lease_until_ms",
        ],
    )],
    ddl: "CREATE TABLE deliveries(
            delivery_id INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'acked', 'rejected')),
            reason TEXT,
            claimed_by TEXT,
            lease_until_ms INTEGER,
            enqueued_ms INTEGER NOT NULL,
            done_ms INTEGER);
          CREATE INDEX deliveries_status ON deliveries(status, delivery_id);",
};

pub static RECEIVER: Schema = Schema {
    db: "receiver",
    user_version: 1403,
    tables: &[
        (
            "inbox",
            &[
                "message_id",
                "digest",
                "contract_id",
                "amount",
                "delivery_id",
                "applied_ms",
            ],
        ),
        ("ledger", &["contract_id", "balance", "credits"]),
    ],
    ddl: "CREATE TABLE inbox(
            message_id TEXT PRIMARY KEY,
            digest TEXT NOT NULL,
            contract_id TEXT NOT NULL,
            amount INTEGER NOT NULL,
            delivery_id INTEGER NOT NULL,
            applied_ms INTEGER NOT NULL);
          CREATE INDEX inbox_applied ON inbox(applied_ms);
          CREATE TABLE ledger(
            contract_id TEXT PRIMARY KEY,
            balance INTEGER NOT NULL,
            credits INTEGER NOT NULL);",
};

/// The sender on PostgreSQL: contracts and their Outbox rows, keyed by message id. The publisher sends
/// pending rows in message-id order.
pub static PG_SENDER: Schema = Schema {
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

/// The receiver on PostgreSQL: the Inbox (one row per message applied), the ledger, and one receipt per
/// physical message the broker delivered (keyed by the id its publish gave it): how many
/// times it came, whether it came redelivered, and what the consumer made of it.
pub static PG_RECEIVER: Schema = Schema {
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
    fn the_servers_ddl_is_valid_sqlite_with_the_listed_columns() {
        for schema in [&PG_SENDER, &PG_RECEIVER] {
            for ((table, columns), names) in schema.tables.iter().zip(schema.sqlite_columns()) {
                for c in *columns {
                    assert!(names.iter().any(|n| n == c), "{table}.{c} in {names:?}");
                }
            }
        }
    }
}
