//! Lab 14's three database kinds. Table names are the contract; columns are ours.

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
