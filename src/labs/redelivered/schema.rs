//! Lab f3's queue file. The receiver's file is lab 13's (`http_dispatch::schema::RECEIVER`).

use crate::store::Schema;

/// `queue.db`: each message with its current lease and how often it was handed out, and
/// each reply a consumer got, recorded with its ack (accepted or refused) in one commit.
pub static QUEUE: Schema = Schema {
    db: "queue",
    user_version: 3301,
    tables: &[
        (
            "messages",
            &[
                "id",
                "body",
                "owner",
                "lease_until_ms",
                "deliveries",
                "acked_by",
                "enqueued_ms",
            ],
        ),
        (
            "replies",
            &[
                "seq", "message", "consumer", "delivery", "status", "replayed", "acked", "at_ms",
            ],
        ),
    ],
    ddl: "CREATE TABLE messages(
            id TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            owner TEXT,
            lease_until_ms INTEGER,
            deliveries INTEGER NOT NULL,
            acked_by TEXT,
            enqueued_ms INTEGER NOT NULL);
          CREATE TABLE replies(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            message TEXT NOT NULL REFERENCES messages(id),
            consumer TEXT NOT NULL,
            delivery INTEGER NOT NULL,
            status INTEGER NOT NULL,
            replayed INTEGER NOT NULL CHECK (replayed IN (0, 1)),
            acked INTEGER NOT NULL CHECK (acked IN (0, 1)),
            at_ms INTEGER NOT NULL);",
};
