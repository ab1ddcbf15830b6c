//! Lab f3's own stores: the queue file on SQLite; on the servers, the consumers' database in
//! PostgreSQL. The receiver's file is lab 13's (`http_dispatch::schema::RECEIVER`) on both.

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

/// `consumer`, on PostgreSQL: each delivery a consumer took (with the broker's `redelivered` flag), committed
/// before its call; each reply it got, with whether its ack reached the broker, committed after
/// the ack. Natural keys: a consumer takes a message at most once per run. The DDL is accepted
/// by PostgreSQL and SQLite alike (the server store's digest and the audit's replay load the
/// rows into SQLite).
pub static CONSUMER: Schema = Schema {
    db: "consumer",
    user_version: 3302,
    tables: &[
        (
            "deliveries",
            &["message", "consumer", "tag", "redelivered", "taken_ms"],
        ),
        (
            "replies",
            &[
                "message", "consumer", "status", "replayed", "acked", "at_ms",
            ],
        ),
    ],
    ddl: "CREATE TABLE IF NOT EXISTS deliveries(
            message TEXT NOT NULL,
            consumer TEXT NOT NULL,
            tag BIGINT NOT NULL,
            redelivered BIGINT NOT NULL CHECK (redelivered IN (0, 1)),
            taken_ms BIGINT NOT NULL,
            PRIMARY KEY (message, consumer));
          CREATE TABLE IF NOT EXISTS replies(
            message TEXT NOT NULL,
            consumer TEXT NOT NULL,
            status BIGINT NOT NULL,
            replayed BIGINT NOT NULL CHECK (replayed IN (0, 1)),
            acked BIGINT NOT NULL CHECK (acked IN (0, 1)),
            at_ms BIGINT NOT NULL,
            PRIMARY KEY (message, consumer));",
};

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite accepts the DDL, and its tables have the columns the schema lists.
    #[test]
    fn the_ddl_is_valid_sqlite_with_the_listed_columns() {
        for ((table, columns), names) in CONSUMER.tables.iter().zip(CONSUMER.sqlite_columns()) {
            assert_eq!(names.len(), columns.len(), "{table}: {names:?}");
            for c in *columns {
                assert!(names.iter().any(|n| n == c), "{table}.{c} in {names:?}");
            }
        }
    }
}
