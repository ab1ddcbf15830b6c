//! The read-only view of lab 13's four files. A file that does not exist yet reads as empty
//! and is named in `absent`; it is never created.
//!
//! An intent keeps its row after delivery (the intents file is never written after the
//! reply: the receipt is the record of delivery, in its own file), so whether an intent is
//! still owed is a fact of two files: `intents.undelivered` counts intents without a receipt.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;
use rusqlite::Connection;
use serde::Serialize;

use crate::fail;
use crate::labs::http_dispatch::dispatcher::INTENTS_MAX;
use crate::labs::http_dispatch::schema::{HISTORY, INTENTS, RECEIPTS, RECEIVER};
use crate::store::{self, Db};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IntentsState {
    pub intents: i64,
    /// Intents without a receipt: not delivered yet, as far as the dispatcher knows. 0 after
    /// every intent was delivered.
    pub undelivered: i64,
    /// Intents held as result-unknown (`--unknown hold`), left for reconciliation.
    pub unknown: i64,
    /// Attempts recorded before sending, delivered or not.
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

/// The keys of `sql`'s rows, at most `INTENTS_MAX` (the most intents a dispatcher reads).
fn keys(conn: &Connection, sql: &str) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(sql)?;
    let keys = stmt
        .query_map([INTENTS_MAX], |r| r.get(0))?
        .collect::<rusqlite::Result<BTreeSet<String>>>()?;
    Ok(keys)
}

fn intent_keys(conn: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    keys(conn, "SELECT key FROM intents ORDER BY seq LIMIT ?1")
}

fn receipt_keys(conn: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    keys(conn, "SELECT key FROM receipts ORDER BY key LIMIT ?1")
}

/// Intents whose key has no receipt.
fn undelivered(intents: &BTreeSet<String>, receipts: &BTreeSet<String>) -> i64 {
    intents.difference(receipts).count() as i64
}

/// The intents file's counts; `undelivered` is every intent until the receipts are known.
pub fn intents_state(conn: &Connection) -> rusqlite::Result<IntentsState> {
    let intents = n(conn, "SELECT count(*) FROM intents")?;
    Ok(IntentsState {
        intents,
        undelivered: intents,
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
    let mut owed = BTreeSet::new();
    match intents {
        Some(c) => {
            state.intents = intents_state(c)?;
            owed = intent_keys(c)?;
        }
        None => state.absent.push("intents"),
    }
    match receipts {
        Some(c) => {
            state.receipts = receipts_state(c)?;
            state.intents.undelivered = undelivered(&owed, &receipt_keys(c)?);
        }
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
    let mut owed = BTreeSet::new();
    match store::open_existing(paths.intents, &INTENTS, trace)? {
        Some(db) => {
            state.intents = intents_state(&db.conn).map_err(on(&db, paths.intents))?;
            if state.intents.intents > INTENTS_MAX {
                return Err(fail::usage(format!(
                    "intents database {} holds {} intents, more than the {INTENTS_MAX} the lab reads",
                    paths.intents.display(),
                    state.intents.intents
                )));
            }
            owed = intent_keys(&db.conn).map_err(on(&db, paths.intents))?;
        }
        None => state.absent.push("intents"),
    }
    match store::open_existing(paths.receipts, &RECEIPTS, trace)? {
        Some(db) => {
            state.receipts = receipts_state(&db.conn).map_err(on(&db, paths.receipts))?;
            let delivered = receipt_keys(&db.conn).map_err(on(&db, paths.receipts))?;
            state.intents.undelivered = undelivered(&owed, &delivered);
        }
        None => state.absent.push("receipts"),
    }
    // Postcondition: what is owed is part of what was intended.
    assert!(state.intents.undelivered <= state.intents.intents);
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
