//! The writer and the setup. A writer inserts one Outbox row in one transaction, its id
//! taken from the sequence inside that transaction, before the commit: that is how
//! PostgreSQL applications get ids (`BIGSERIAL`, `GENERATED … AS IDENTITY`), and why ids do
//! not commit in their order. Its transaction id goes into the row too (the `xid-horizon`
//! relay reads by it).

use anyhow::Result;

use super::pg;
use super::points;
use super::schema::{OUTBOX, RECEIVER, SEQUENCE, SEQUENCE_DDL};
use crate::crash;
use crate::fail;
use crate::out;
use crate::store::pg::{Session, Val};

/// A writer's name: 1 to 16 of [A-Za-z0-9_-] (it goes into a literal and into lines).
pub fn check_writer(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 16
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match ok {
        true => Ok(()),
        false => Err(fail::usage(format!(
            "--writer '{name}' is not a writer name: 1 to 16 of A-Z a-z 0-9 _ -"
        ))),
    }
}

/// `gap-write`: one row, committed. Prints `COMMITTED outbox write of message N by W`.
pub fn run(outbox: &str, writer: &str, body: &str) -> Result<i64> {
    check_writer(writer)?;
    pg::check_body(body)?;
    let mut db = pg::open(outbox, &OUTBOX, Session::Durable)?;
    pg::run(&mut db, "BEGIN", &[])?;
    // Taken now, visible to no one until the commit: a writer that commits later than one
    // that took a higher id leaves a gap the relay may already have passed.
    let id = pg::value(
        &mut db,
        "SEQUENCE",
        SEQUENCE,
        "SELECT nextval('outbox_id_seq')::bigint",
    )?;
    let xid = pg::value(
        &mut db,
        "XID",
        "",
        "SELECT pg_current_xact_id()::text::bigint",
    )?;
    let n = pg::run(
        &mut db,
        "INSERT INTO outbox(id, writer, body, xid, status) VALUES ($1, $2, $3, $4, 'pending')",
        &[
            Val::Int(id),
            Val::Text(writer),
            Val::Text(body),
            Val::Int(xid),
        ],
    )?;
    assert_eq!(n.changed, 1, "one row inserted");
    crash::point(points::WRITE_AFTER_INSERT);
    pg::run(&mut db, "COMMIT", &[])?;
    out::committed(OUTBOX.db, &format!("write of message {id} by {writer}"));
    crash::point(points::WRITE_AFTER_COMMIT);
    Ok(id)
}

/// `gap-init`: the schemas of both databases (each DDL piece traced, as the replay runs it)
/// and the sequence (PostgreSQL only: printed as `SEQUENCE-CREATED`, never traced as SQL);
/// the relay makes its own row on its first poll. Run again, it changes nothing.
pub fn init(outbox: &str, receiver: &str) -> Result<()> {
    let mut db = pg::open(outbox, &OUTBOX, Session::Durable)?;
    // One transaction per database: a setup cut short leaves nothing half made. The
    // sequence goes in the outbox's (so `store::pg`'s own creation, a transaction of its
    // schema alone, serves only the receiver).
    pg::run(&mut db, "BEGIN", &[])?;
    db.client
        .batch_execute(SEQUENCE_DDL)
        .map_err(|e| db.explain(e))?;
    out::line(&format!(
        "SEQUENCE-CREATED {} {SEQUENCE} start {}",
        OUTBOX.db,
        super::schema::SEQUENCE_START
    ));
    for piece in OUTBOX
        .ddl
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        pg::run(&mut db, piece, &[])?;
    }
    pg::run(&mut db, "COMMIT", &[])?;
    let here = std::path::Path::new(".");
    drop(pg::open_in(
        here,
        receiver,
        &RECEIVER,
        Session::Durable,
        true,
    )?);
    out::line("SCHEMA outbox, receiver: ready");
    Ok(())
}
