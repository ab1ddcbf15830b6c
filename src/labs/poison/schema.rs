//! Lab f2's two database kinds: the queue (messages in order, failed attempts, the
//! dead-letter table) and the receiver (one credit per message, its amount limited by a CHECK
//! constraint: the rule a poison message breaks).

use crate::store::Schema;

/// The receiver's rule: an amount from 1 to this (the CHECK constraint `amount_limit`).
pub const AMOUNT_LIMIT: i64 = 1_000;

pub static QUEUE: Schema = Schema {
    db: "queue",
    user_version: 2201,
    tables: &[
        (
            "messages",
            &[
                "seq",
                "message_id",
                "amount",
                "status",
                "failures",
                "last_error",
            ],
        ),
        (
            "dead_letters",
            &[
                "message_id",
                "seq",
                "amount",
                "reason",
                "attempts",
                "status",
            ],
        ),
    ],
    ddl: "CREATE TABLE messages(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id TEXT NOT NULL UNIQUE,
            amount INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'parked')),
            failures INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            first_failed_ms INTEGER,
            enqueued_ms INTEGER NOT NULL,
            done_ms INTEGER);
          CREATE INDEX messages_status ON messages(status, seq);
          CREATE TABLE dead_letters(
            message_id TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            amount INTEGER NOT NULL,
            reason TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('parked', 'replayed')),
            parked_ms INTEGER NOT NULL,
            fixed_ms INTEGER,
            replayed_ms INTEGER);",
};

pub static RECEIVER: Schema = Schema {
    db: "receiver",
    user_version: 2202,
    tables: &[("credits", &["message_id", "amount", "applied_ms"])],
    ddl: "CREATE TABLE credits(
            message_id TEXT PRIMARY KEY,
            amount INTEGER NOT NULL CONSTRAINT amount_limit CHECK (amount BETWEEN 1 AND 1000),
            applied_ms INTEGER NOT NULL);",
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant the docs and the model quote is the one the DDL enforces.
    #[test]
    fn the_limit_is_the_one_the_check_constraint_holds() {
        assert!(RECEIVER
            .ddl
            .contains(&format!("amount BETWEEN 1 AND {AMOUNT_LIMIT}")));
    }
}
