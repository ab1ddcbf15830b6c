//! The read-only view of lab 13's four files. A file that does not exist yet reads as empty
//! and is named in `absent`; it is never created.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::dispatch::schema::{HISTORY, INTENTS, RECEIPTS, RECEIVER};
use crate::store::{self, Db};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IntentsState {
    pub intents: i64,
    pub pending: i64,
    pub unknown: i64,
    pub attempts: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiptsState {
    pub receipts: i64,
    pub replayed: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HistoryState {
    pub history: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverState {
    pub effects: i64,
    /// Distinct keys among the effects.
    pub keys: i64,
    /// Rows of the idempotency ledger.
    pub ledger: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub intents: IntentsState,
    pub receipts: ReceiptsState,
    pub history: HistoryState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

pub struct Paths<'a> {
    pub intents: &'a Path,
    pub receipts: &'a Path,
    pub history: &'a Path,
    pub receiver: &'a Path,
}

fn count(db: &Db, path: &Path, sql: &str) -> Result<i64> {
    db.conn
        .query_row(sql, [], |r| r.get(0))
        .map_err(|e| store::explain(e, db.db, &path.display().to_string()))
}

/// The role's readback: traced unless `--no-trace` turned the trace off.
pub fn read(paths: &Paths<'_>) -> Result<State> {
    read_traced(paths, store::trace_on())
}

/// As `read`, without the SQL trace when `trace` is false (the harness reads in its own
/// process, where stdout is its report).
pub fn read_traced(paths: &Paths<'_>, trace: bool) -> Result<State> {
    let mut state = State::default();
    match store::open_existing(paths.intents, &INTENTS, trace)? {
        Some(db) => {
            let p = paths.intents;
            state.intents = IntentsState {
                intents: count(&db, p, "SELECT count(*) FROM intents")?,
                pending: count(
                    &db,
                    p,
                    "SELECT count(*) FROM intents WHERE status = 'pending'",
                )?,
                unknown: count(
                    &db,
                    p,
                    "SELECT count(*) FROM intents WHERE status = 'unknown'",
                )?,
                attempts: count(&db, p, "SELECT count(*) FROM attempts")?,
            };
        }
        None => state.absent.push("intents"),
    }
    match store::open_existing(paths.receipts, &RECEIPTS, trace)? {
        Some(db) => {
            let p = paths.receipts;
            state.receipts = ReceiptsState {
                receipts: count(&db, p, "SELECT count(*) FROM receipts")?,
                replayed: count(&db, p, "SELECT count(*) FROM receipts WHERE replayed = 1")?,
            };
        }
        None => state.absent.push("receipts"),
    }
    match store::open_existing(paths.history, &HISTORY, trace)? {
        Some(db) => {
            state.history.history = count(&db, paths.history, "SELECT count(*) FROM history")?;
        }
        None => state.absent.push("history"),
    }
    match store::open_existing(paths.receiver, &RECEIVER, trace)? {
        Some(db) => {
            let p = paths.receiver;
            state.receiver = ReceiverState {
                effects: count(&db, p, "SELECT count(*) FROM effects")?,
                keys: count(&db, p, "SELECT count(DISTINCT key) FROM effects")?,
                ledger: count(&db, p, "SELECT count(*) FROM idempotency")?,
            };
        }
        None => state.absent.push("receiver"),
    }
    Ok(state)
}
