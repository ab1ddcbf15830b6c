//! What lab f1 needs of PostgreSQL beyond the shared traced client (`store::pg`): its
//! sessions bound an open transaction (a writer the pause nemesis holds inside one), a
//! failed connect names the server's address, and the PostgreSQL-only calls (the sequence,
//! the transaction id, the snapshot's horizon) are run untraced and printed as their own
//! lines (`SEQUENCE`, `XID`, `HORIZON`): the statements that use them carry them as literals,
//! so the trace replays on SQLite.

use std::path::Path;

use anyhow::Result;

use crate::fail;
use crate::out;
use crate::store::pg::{self, Outcome, Pg, Session, Val};
use crate::store::Schema;

/// A transaction left open longer than this is ended by the server: the bound of a writer
/// held by the pause nemesis (the harness continues it long before).
pub const IDLE_IN_TRANSACTION_MS: u64 = 300_000;
/// The longest message body accepted (bytes).
pub const BODY_BYTES_MAX: usize = 1_000;

/// Logical database `name` of `stack.json` in `dir` as a store of kind `schema` (`create`:
/// given the schema when it has none): a role's (`dir` is `.`, traced) or explore's (a case's
/// directory, untraced).
pub fn open_in(
    dir: &Path,
    name: &str,
    schema: &'static Schema,
    session: Session,
    create: bool,
) -> Result<Pg> {
    let url = pg::url_of(dir, name)?;
    let mut db =
        pg::open_in(dir, name, schema, session, create).map_err(|e| match fail::exit_code(&e) {
            fail::EXIT_UNAVAILABLE => fail::unavailable(format!(
                "{} (at {})",
                fail::one_line(&e),
                crate::servers::postgres::redact(&url)
            )),
            _ => e,
        })?;
    let bound = format!("SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}");
    db.client.batch_execute(&bound).map_err(|e| db.explain(e))?;
    Ok(db)
}

/// A role's database, through `stack.json` in the current directory, traced; never created
/// (`gap-init` makes the schemas).
pub fn open(name: &str, schema: &'static Schema, session: Session) -> Result<Pg> {
    open_in(Path::new("."), name, schema, session, false)
}

/// Run one statement (traced when the session is), a server error as the role's one line.
pub fn run(db: &mut Pg, sql: &str, args: &[Val<'_>]) -> Result<Outcome> {
    db.run(sql, args).map_err(|e| db.explain(e))
}

/// Column `i` of a row as an integer (the simple protocol gives text).
pub fn int(row: &[Option<String>], i: usize) -> Result<i64> {
    let cell = row.get(i).cloned().flatten();
    cell.as_deref()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| fail::failed(format!("column {i} is {cell:?}, not an integer")))
}

/// A PostgreSQL-only value (`nextval`, `pg_current_xact_id`, the snapshot's xmin): run
/// untraced, printed as `<word> <db> [<what>] <value>`.
pub fn value(db: &mut Pg, word: &str, what: &str, sql: &str) -> Result<i64> {
    let row = db.client.query_one(sql, &[]).map_err(|e| db.explain(e))?;
    let value: i64 = row.get(0);
    match what.is_empty() {
        true => out::line(&format!("{word} {} {value}", db.db)),
        false => out::line(&format!("{word} {} {what} {value}", db.db)),
    }
    Ok(value)
}

/// A body may go into a traced statement: 1 to `BODY_BYTES_MAX` bytes, no control character.
pub fn check_body(body: &str) -> Result<()> {
    if body.is_empty() || body.len() > BODY_BYTES_MAX {
        return Err(fail::usage(format!(
            "--body must be 1 to {BODY_BYTES_MAX} bytes, got {}",
            body.len()
        )));
    }
    if let Some(c) = body.chars().find(|c| c.is_control()) {
        return Err(fail::usage(format!(
            "--body holds a control character ({:?}); one line of printable text is accepted",
            c
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labs::relay_gap::schema::OUTBOX;

    #[test]
    fn bodies_are_bounded_and_integers_read_from_text() {
        assert!(check_body("{\"order\":\"A\"}").is_ok());
        for bad in ["", "a\nb", &"x".repeat(BODY_BYTES_MAX + 1)] {
            let e = check_body(bad).unwrap_err();
            assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE, "{bad:?}");
        }
        let row = [Some("7".to_string()), None, Some("x".to_string())];
        assert_eq!(int(&row, 0).unwrap(), 7);
        assert!(int(&row, 1).is_err() && int(&row, 2).is_err() && int(&row, 3).is_err());
    }

    /// A server that is not there: exit 69, one line naming its address, never the password.
    #[test]
    fn a_failed_connect_names_the_address_without_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let url = format!("postgres://crashlab:pw123SECRET@127.0.0.1:{port}/crashlab_none");
        let stack = serde_json::json!({
            "stack": "postgres", "postgres": {"outbox": url}, "amqp_url": null, "queues": {}
        });
        std::fs::write(dir.path().join("stack.json"), stack.to_string()).unwrap();
        let e = open_in(dir.path(), "outbox", &OUTBOX, Session::ReadOnly, false)
            .err()
            .unwrap();
        let line = fail::one_line(&e);
        assert_eq!(fail::exit_code(&e), fail::EXIT_UNAVAILABLE, "{line}");
        assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
        assert!(
            !line.contains("pw123SECRET") && !line.contains('\n'),
            "{line}"
        );
    }
}
