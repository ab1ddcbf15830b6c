//! The read-only view of lab 13's four files. A file that does not exist yet reads as empty
//! and is named in `absent`; it is never created.

use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use crate::labs::http_dispatch::schema::{HISTORY, INTENTS, RECEIPTS, RECEIVER};
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

fn n(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

pub fn intents_state(conn: &Connection) -> rusqlite::Result<IntentsState> {
    Ok(IntentsState {
        intents: n(conn, "SELECT count(*) FROM intents")?,
        pending: n(
            conn,
            "SELECT count(*) FROM intents WHERE status = 'pending'",
        )?,
        unknown: n(
            conn,
            "SELECT count(*) FROM intents WHERE status = 'unknown'",
        )?,
        attempts: n(conn, "SELECT count(*) FROM attempts")?,
    })
}

pub fn receipts_state(conn: &Connection) -> rusqlite::Result<ReceiptsState> {
    Ok(ReceiptsState {
        receipts: n(conn, "SELECT count(*) FROM receipts")?,
        replayed: n(conn, "SELECT count(*) FROM receipts WHERE replayed = 1")?,
    })
}

pub fn history_state(conn: &Connection) -> rusqlite::Result<HistoryState> {
    Ok(HistoryState {
        history: n(conn, "SELECT count(*) FROM history")?,
    })
}

pub fn receiver_state(conn: &Connection) -> rusqlite::Result<ReceiverState> {
    Ok(ReceiverState {
        effects: n(conn, "SELECT count(*) FROM effects")?,
        keys: n(conn, "SELECT count(DISTINCT key) FROM effects")?,
        ledger: n(conn, "SELECT count(*) FROM idempotency")?,
    })
}

/// The readback JSON of open connections (files, or the audit's replay); `None` is a file
/// that does not exist (`absent`).
pub fn state_of(
    intents: Option<&Connection>,
    receipts: Option<&Connection>,
    history: Option<&Connection>,
    receiver: Option<&Connection>,
) -> rusqlite::Result<State> {
    let mut state = State::default();
    match intents {
        Some(c) => state.intents = intents_state(c)?,
        None => state.absent.push("intents"),
    }
    match receipts {
        Some(c) => state.receipts = receipts_state(c)?,
        None => state.absent.push("receipts"),
    }
    match history {
        Some(c) => state.history = history_state(c)?,
        None => state.absent.push("history"),
    }
    match receiver {
        Some(c) => state.receiver = receiver_state(c)?,
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// The role's readback: traced unless `--no-trace` turned the trace off.
pub fn read(paths: &Paths<'_>) -> Result<State> {
    read_traced(paths, store::trace_on())
}

/// As `read`, without the SQL trace when `trace` is false (the harness reads in its own
/// process, where stdout is its report).
pub fn read_traced(paths: &Paths<'_>, trace: bool) -> Result<State> {
    let mut state = State::default();
    // Each file is opened, counted and closed in turn, so the trace keeps its order.
    fn on(db: &Db, p: &Path) -> impl Fn(rusqlite::Error) -> anyhow::Error {
        let (name, shown) = (db.db, p.display().to_string());
        move |e| store::explain(e, name, &shown)
    }
    match store::open_existing(paths.intents, &INTENTS, trace)? {
        Some(db) => state.intents = intents_state(&db.conn).map_err(on(&db, paths.intents))?,
        None => state.absent.push("intents"),
    }
    match store::open_existing(paths.receipts, &RECEIPTS, trace)? {
        Some(db) => state.receipts = receipts_state(&db.conn).map_err(on(&db, paths.receipts))?,
        None => state.absent.push("receipts"),
    }
    match store::open_existing(paths.history, &HISTORY, trace)? {
        Some(db) => state.history = history_state(&db.conn).map_err(on(&db, paths.history))?,
        None => state.absent.push("history"),
    }
    match store::open_existing(paths.receiver, &RECEIVER, trace)? {
        Some(db) => state.receiver = receiver_state(&db.conn).map_err(on(&db, paths.receiver))?,
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// The readback of `dispatch-verify` on the replayed databases (engine::Lab::readback).
pub fn replayed(
    phase: &str,
    dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    if phase != "dispatch-verify" {
        return None;
    }
    let db = |flag: &str| dbs.get(flag).copied();
    Some(
        state_of(db("intents"), db("receipts"), db("history"), db("receiver"))
            .map(|s| serde_json::to_value(s).expect("a readback serializes"))
            .map_err(|e| format!("reading the replayed files: {e}")),
    )
}
