//! Lab 13's files and database kinds. Each file has one writer role; columns are ours.

use crate::store::Schema;

/// The files of a run, relative to its work directory.
pub const INTENTS_DB: &str = "intents.db";
pub const RECEIPTS_DB: &str = "receipts.db";
pub const HISTORY_DB: &str = "history.db";
pub const RECEIVER_DB: &str = "receiver.db";
/// Where the receiver writes its port, and the clients read it.
pub const PORT_FILE: &str = "receiver.port";

/// `intents.db`: what is owed (intent) and every attempt to deliver it, recorded before sending.
pub static INTENTS: Schema = Schema {
    db: "intents",
    user_version: 1301,
    tables: &[
        ("intents", &["seq", "key", "body", "status", "created_ms"]),
        ("attempts", &["attempt_id", "key", "started_ms"]),
    ],
    ddl: "CREATE TABLE intents(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL UNIQUE,
            body TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'unknown')),
            created_ms INTEGER NOT NULL);
          CREATE TABLE attempts(
            attempt_id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL REFERENCES intents(key),
            started_ms INTEGER NOT NULL);
          CREATE INDEX attempts_key ON attempts(key);",
};

/// `receipts.db`: the reply the dispatcher got, one row per delivered key.
pub static RECEIPTS: Schema = Schema {
    db: "receipts",
    user_version: 1302,
    tables: &[(
        "receipts",
        &["key", "status", "response", "replayed", "received_ms"],
    )],
    ddl: "CREATE TABLE receipts(
            key TEXT PRIMARY KEY,
            status INTEGER NOT NULL,
            response TEXT NOT NULL,
            replayed INTEGER NOT NULL CHECK (replayed IN (0, 1)),
            received_ms INTEGER NOT NULL);",
};

/// `history.db`: the dispatcher's local log, appended after the receipt in its own commit.
pub static HISTORY: Schema = Schema {
    db: "history",
    user_version: 1303,
    tables: &[("history", &["seq", "key", "event", "at_ms"])],
    ddl: "CREATE TABLE history(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL UNIQUE,
            event TEXT NOT NULL,
            at_ms INTEGER NOT NULL);",
};

/// `receiver.db`: the effects the receiver applied and, in keyed mode, its idempotency ledger.
pub static RECEIVER: Schema = Schema {
    db: "receiver",
    user_version: 1304,
    tables: &[
        ("effects", &["effect_id", "key", "body", "applied_ms"]),
        (
            "idempotency",
            &["key", "body_sha256", "status", "response", "stored_ms"],
        ),
    ],
    ddl: "CREATE TABLE effects(
            effect_id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT,
            body TEXT NOT NULL,
            applied_ms INTEGER NOT NULL);
          CREATE INDEX effects_key ON effects(key);
          CREATE TABLE idempotency(
            key TEXT PRIMARY KEY,
            body_sha256 TEXT NOT NULL,
            status INTEGER NOT NULL,
            response TEXT NOT NULL,
            stored_ms INTEGER NOT NULL);
          CREATE INDEX idempotency_stored ON idempotency(stored_ms);",
};
