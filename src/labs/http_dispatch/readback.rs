//! Lab 13's four files, read read-only by one reader (`State`): the readback role counts what
//! it read (`State::readback`, the JSON `dispatch-verify` prints), explore judges the rows, and
//! the audit reads the replayed files through it. A file that does not exist yet reads as
//! empty and is named in `absent`; it is never created.
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
use crate::labs::http_dispatch::schema::{
    HISTORY, HISTORY_DB, INTENTS, INTENTS_DB, RECEIPTS, RECEIPTS_DB, RECEIVER, RECEIVER_DB,
};
use crate::store::{self, Schema};

/// The most rows of one table the lab reads: as many as a dispatcher handles intents.
pub const ROWS_MAX: i64 = INTENTS_MAX;

/// Every row of the four files that the readback counts and explore judges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// (seq, key, status).
    pub intents: Vec<(i64, String, String)>,
    /// (attempt id, key).
    pub attempts: Vec<(i64, String)>,
    /// (key, replayed).
    pub receipts: Vec<(String, bool)>,
    /// The key of each history row, in order.
    pub history: Vec<String>,
    /// (effect id, key).
    pub effects: Vec<(i64, Option<String>)>,
    /// The keys of the receiver's idempotency ledger.
    pub ledger: Vec<String>,
    /// The files that do not exist.
    pub absent: Vec<&'static str>,
}

/// One file as its readback and the replay's flags name it, its schema and its tables.
struct File {
    name: &'static str,
    schema: &'static Schema,
    read: fn(&mut State, &Connection, &str) -> Result<()>,
}

/// The four files, in the order of the role's flags.
const FILES: [File; 4] = [
    File {
        name: "intents",
        schema: &INTENTS,
        read: read_intents,
    },
    File {
        name: "receipts",
        schema: &RECEIPTS,
        read: read_receipts,
    },
    File {
        name: "history",
        schema: &HISTORY,
        read: read_history,
    },
    File {
        name: "receiver",
        schema: &RECEIVER,
        read: read_receiver,
    },
];

/// Every row of `sql` (which ends `LIMIT ?1`) in order; more than `ROWS_MAX` is refused, as
/// the lab never writes that many. Errors name the file (`shown`).
fn rows<T>(
    c: &Connection,
    (db, shown): (&str, &str),
    sql: &str,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let explain = |e| store::explain(e, db, shown);
    let mut stmt = c.prepare(sql).map_err(explain)?;
    let rows = stmt
        .query_map([ROWS_MAX + 1], map)
        .and_then(|r| r.collect::<rusqlite::Result<Vec<T>>>())
        .map_err(explain)?;
    if rows.len() as i64 > ROWS_MAX {
        let table = sql.split(" FROM ").nth(1).unwrap_or(sql);
        let table = table.split(' ').next().unwrap_or(table);
        return Err(fail::usage(format!(
            "{db} database {shown} holds more than {ROWS_MAX} rows in {table}, more than the lab reads"
        )));
    }
    Ok(rows)
}

fn read_intents(s: &mut State, c: &Connection, shown: &str) -> Result<()> {
    let at = ("intents", shown);
    s.intents = rows(
        c,
        at,
        "SELECT seq, key, status FROM intents ORDER BY seq LIMIT ?1",
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    s.attempts = rows(
        c,
        at,
        "SELECT attempt_id, key FROM attempts ORDER BY attempt_id LIMIT ?1",
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(())
}

fn read_receipts(s: &mut State, c: &Connection, shown: &str) -> Result<()> {
    s.receipts = rows(
        c,
        ("receipts", shown),
        "SELECT key, replayed FROM receipts ORDER BY key LIMIT ?1",
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(())
}

fn read_history(s: &mut State, c: &Connection, shown: &str) -> Result<()> {
    s.history = rows(
        c,
        ("history", shown),
        "SELECT key FROM history ORDER BY seq LIMIT ?1",
        |r| r.get(0),
    )?;
    Ok(())
}

fn read_receiver(s: &mut State, c: &Connection, shown: &str) -> Result<()> {
    let at = ("receiver", shown);
    s.effects = rows(
        c,
        at,
        "SELECT effect_id, key FROM effects ORDER BY effect_id LIMIT ?1",
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    s.ledger = rows(
        c,
        at,
        "SELECT key FROM idempotency ORDER BY key LIMIT ?1",
        |r| r.get(0),
    )?;
    Ok(())
}

/// Read the four files (intents, receipts, history, receiver), read-only; the SQL traced when
/// `trace` (a role's readback, not the harness reading in its own process).
pub fn read(paths: [&Path; 4], trace: bool) -> Result<State> {
    let mut state = State::default();
    // Each file is opened, read and closed in turn, so the trace keeps its order.
    for (file, path) in FILES.iter().zip(paths) {
        match store::open_existing(path, file.schema, trace)? {
            Some(db) => (file.read)(&mut state, &db.conn, &path.display().to_string())?,
            None => state.absent.push(file.name),
        }
    }
    Ok(state)
}

/// The files of a work directory, by the names the scenarios give them, untraced (the
/// harness reads in its own process, where stdout is its report).
pub fn read_work(work: &Path) -> Result<State> {
    let paths = [INTENTS_DB, RECEIPTS_DB, HISTORY_DB, RECEIVER_DB].map(|f| work.join(f));
    read(paths.each_ref().map(|p| p.as_path()), false)
}

impl State {
    pub fn has_receipt(&self, key: &str) -> bool {
        self.receipts.iter().any(|(k, _)| k == key)
    }

    /// Pending intents with no receipt: what a dispatcher still owes.
    pub fn owed(&self) -> Vec<&str> {
        self.intents
            .iter()
            .filter(|(_, k, status)| status == "pending" && !self.has_receipt(k))
            .map(|(_, k, _)| k.as_str())
            .collect()
    }

    /// Receipts whose history row is missing.
    pub fn history_owed(&self) -> Vec<&str> {
        self.receipts
            .iter()
            .filter(|(k, _)| !self.history.contains(k))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    pub fn quiescent(&self) -> bool {
        self.owed().is_empty() && self.history_owed().is_empty()
    }

    pub fn effects_of(&self, key: &str) -> i64 {
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref() == Some(key))
            .count() as i64
    }

    /// What the readback prints: the counts of each file.
    pub fn readback(&self) -> Readback {
        let len = |n: usize| n as i64;
        let delivered: BTreeSet<&str> = self.receipts.iter().map(|(k, _)| k.as_str()).collect();
        let readback = Readback {
            intents: IntentsState {
                intents: len(self.intents.len()),
                undelivered: len(self
                    .intents
                    .iter()
                    .filter(|(_, k, _)| !delivered.contains(k.as_str()))
                    .count()),
                unknown: len(self
                    .intents
                    .iter()
                    .filter(|(_, _, status)| status == "unknown")
                    .count()),
                attempts: len(self.attempts.len()),
            },
            receipts: ReceiptsState {
                receipts: len(self.receipts.len()),
                replayed: len(self.receipts.iter().filter(|(_, r)| *r).count()),
            },
            history: HistoryState {
                history: len(self.history.len()),
            },
            receiver: self.receiver_counts(),
            absent: self.absent.clone(),
        };
        // Postcondition: what is owed is part of what was intended.
        assert!(readback.intents.undelivered <= readback.intents.intents);
        readback
    }

    fn receiver_counts(&self) -> ReceiverState {
        let keys: BTreeSet<&str> = self
            .effects
            .iter()
            .filter_map(|(_, k)| k.as_deref())
            .collect();
        ReceiverState {
            effects: self.effects.len() as i64,
            keys: keys.len() as i64,
            ledger: self.ledger.len() as i64,
        }
    }
}

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

/// The readback JSON: the counts of each file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Readback {
    pub intents: IntentsState,
    pub receipts: ReceiptsState,
    pub history: HistoryState,
    pub receiver: ReceiverState,
    pub absent: Vec<&'static str>,
}

/// The counts of a receiver file (lab f3 reads lab 13's receiver too); errors name `shown`.
pub fn receiver_state(c: &Connection, shown: &str) -> Result<ReceiverState> {
    let mut state = State::default();
    read_receiver(&mut state, c, shown)?;
    Ok(state.receiver_counts())
}

/// The readback of `dispatch-verify` on the replayed databases (`LabStack::readback`).
pub fn replayed(dbs: &crate::engine::Databases<'_>) -> Result<serde_json::Value, String> {
    let mut state = State::default();
    for file in &FILES {
        match dbs.get(file.name) {
            Some(c) => (file.read)(&mut state, c, "(replayed)")
                .map_err(|e| format!("reading the replayed files: {e:#}"))?,
            None => state.absent.push(file.name),
        }
    }
    Ok(serde_json::to_value(state.readback()).expect("a readback serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Access;

    fn file(dir: &Path, name: &str, schema: &'static Schema, sql: &str) {
        let db = store::open_traced(&dir.join(name), schema, Access::WriteCreate, false);
        db.unwrap().conn.execute_batch(sql).unwrap();
    }

    /// The rows explore judges and the counts the readback prints come from one read; a
    /// missing file is `absent`, never created.
    #[test]
    fn one_read_gives_the_rows_and_the_readback_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        file(dir, INTENTS_DB, &INTENTS, "INSERT INTO intents(key, body, status, created_ms) VALUES ('K1', '{}', 'pending', 1), ('K2', '{}', 'unknown', 2);
             INSERT INTO attempts(key, started_ms) VALUES ('K1', 3), ('K2', 4), ('K2', 5);");
        file(
            dir,
            RECEIPTS_DB,
            &RECEIPTS,
            "INSERT INTO receipts VALUES ('K1', 200, '{}', 1, 6)",
        );
        file(dir, RECEIVER_DB, &RECEIVER, "INSERT INTO effects(key, body, applied_ms) VALUES ('K1', '{}', 7), ('K1', '{}', 8), (NULL, '{}', 9);
             INSERT INTO idempotency VALUES ('K1', 'x', 200, '{}', 7);");
        let s = read_work(dir).unwrap();
        assert_eq!(s.absent, ["history"]);
        assert!(!dir.join(HISTORY_DB).exists());
        assert_eq!((s.owed(), s.history_owed()), (vec![], vec!["K1"]));
        assert_eq!((s.effects_of("K1"), s.effects_of("K2")), (2, 0));
        let r = serde_json::to_value(s.readback()).unwrap();
        assert_eq!(
            r,
            serde_json::json!({
                "intents": {"intents": 2, "undelivered": 1, "unknown": 1, "attempts": 3},
                "receipts": {"receipts": 1, "replayed": 1},
                "history": {"history": 0},
                "receiver": {"effects": 3, "keys": 1, "ledger": 1},
                "absent": ["history"]
            })
        );
        let c = rusqlite::Connection::open(dir.join(RECEIVER_DB)).unwrap();
        assert_eq!(receiver_state(&c, "r").unwrap(), s.readback().receiver);
    }

    /// More rows than the lab reads: one line naming the file and the table, exit 2.
    #[test]
    fn a_table_past_the_bound_is_refused_not_cut() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(RECEIVER.ddl).unwrap();
        c.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i <= ?1)
             INSERT INTO effects(key, body, applied_ms) SELECT 'K', '{}', i FROM n",
            [ROWS_MAX],
        )
        .unwrap();
        let e = receiver_state(&c, "big.db").unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
        let line = fail::one_line(&e);
        assert!(
            line.contains("big.db") && line.contains("in effects"),
            "{line}"
        );
        c.execute("DELETE FROM effects WHERE effect_id = 1", [])
            .unwrap();
        assert_eq!(receiver_state(&c, "big.db").unwrap().effects, ROWS_MAX);
    }
}
