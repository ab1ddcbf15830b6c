//! Lab f1's two PostgreSQL databases. The DDL here is accepted by PostgreSQL and by SQLite
//! alike (BIGINT, TEXT, CHECK, no sequence, no server type), because the server store's
//! logical digest and the audit's replay load PostgreSQL's rows into SQLite under it. The one
//! thing SQLite has no word for, the sequence the ids come from, is `SEQUENCE_DDL`, run by
//! `gap-init` on PostgreSQL only; the writers trace the id it gave as a literal.

use crate::store::Schema;

/// The sequence the writers take ids from. It starts at 7, so the lab's story reads as the
/// reports do: A takes 7, B takes 8.
pub const SEQUENCE: &str = "outbox_id_seq";
pub const SEQUENCE_START: i64 = 7;
pub const SEQUENCE_DDL: &str = "CREATE SEQUENCE IF NOT EXISTS outbox_id_seq START 7";

/// The relay's one row in `relay_state`.
pub const RELAY: &str = "relay";

/// `outbox`: the rows the writers commit (with the id the sequence gave, the writer's
/// transaction id and a status) and the relay's position.
pub static OUTBOX: Schema = Schema {
    db: "outbox",
    user_version: 3101,
    tables: &[
        ("outbox", &["id", "writer", "body", "xid", "status"]),
        ("relay_state", &["relay", "last_id", "horizon", "polls"]),
    ],
    ddl: "CREATE TABLE IF NOT EXISTS outbox(
            id BIGINT PRIMARY KEY,
            writer TEXT NOT NULL,
            body TEXT NOT NULL,
            xid BIGINT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'published')));
          CREATE TABLE IF NOT EXISTS relay_state(
            relay TEXT PRIMARY KEY,
            last_id BIGINT NOT NULL,
            horizon BIGINT NOT NULL,
            polls BIGINT NOT NULL);",
};

/// `receiver`: every row the relay published, once (the id is the key), with the poll that
/// published it. A row here is the message applied at the receiving side.
pub static RECEIVER: Schema = Schema {
    db: "receiver",
    user_version: 3102,
    tables: &[("published", &["id", "body", "poll"])],
    ddl: "CREATE TABLE IF NOT EXISTS published(
            id BIGINT PRIMARY KEY,
            body TEXT NOT NULL,
            poll BIGINT NOT NULL);",
};
