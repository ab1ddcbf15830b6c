//! Record an intent: a stable key and its body, committed before anything is sent.

use std::path::Path;

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use crate::common::now_ms;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::model::{check_body, check_key, shown_key};
use crate::labs::http_dispatch::points;
use crate::labs::http_dispatch::schema::INTENTS;
use crate::out;
use crate::store::{self, Access};

/// What recording did.
#[derive(Debug, PartialEq, Eq)]
pub enum Recorded {
    New(i64),
    /// The same key with the same body was already there: nothing written.
    Already(i64),
}

pub fn run(path: &Path, key: &str, body: &str) -> Result<Recorded> {
    check_key(key)?;
    check_body(body)?;
    let db = store::open(path, &INTENTS, Access::WriteCreate)?;
    let shown = path.display().to_string();
    let on_db = |e| store::explain(e, "intents", &shown);
    db.conn.execute_batch("BEGIN IMMEDIATE").map_err(on_db)?;
    let existing: Option<(i64, String)> = db
        .conn
        .prepare_cached("SELECT seq, body FROM intents WHERE key = ?1")
        .and_then(|mut s| {
            s.query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(on_db)?;
    if let Some((seq, old)) = existing {
        db.conn.execute_batch("ROLLBACK").map_err(on_db)?;
        if old == body {
            out::line(&format!(
                "ALREADY intent {seq} key {}: same body, nothing written",
                shown_key(key)
            ));
            return Ok(Recorded::Already(seq));
        }
        return Err(fail::conflict(format!(
            "payload conflict: intent key {} is recorded with another body",
            shown_key(key)
        )));
    }
    db.conn
        .prepare_cached(
            "INSERT INTO intents(key, body, status, created_ms) VALUES (?1, ?2, 'pending', ?3)",
        )
        .and_then(|mut s| s.execute(params![key, body, now_ms()]))
        .map_err(on_db)?;
    let seq = db.conn.last_insert_rowid();
    crash::point(points::INTENT_BEFORE_COMMIT);
    db.conn.execute_batch("COMMIT").map_err(on_db)?;
    out::committed("intents", &format!("intent {seq} key {}", shown_key(key)));
    crash::point(points::INTENT_AFTER_COMMIT);
    Ok(Recorded::New(seq))
}
