//! The read-only view of lab f1's two databases: the Outbox rows (committed, pending), the
//! relay's position, what the receiver has, and the rows committed but never published
//! (`missing`: the loss the `last-id` design shows). The same portable queries run on
//! PostgreSQL (the role) and on SQLite (the audit's replay), through `Source`.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::pg;
use super::schema::{OUTBOX, RECEIVER, RELAY};
use crate::store::pg::{Pg, Session};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OutboxState {
    /// Committed rows.
    pub rows: i64,
    /// Rows still `pending` (only `pending-status` marks them).
    pub pending: i64,
    pub ids: Vec<i64>,
    /// The relay's position (its row in `relay_state`; zeros before its first poll).
    pub relay: RelayState,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RelayState {
    pub last_id: i64,
    pub horizon: i64,
    pub polls: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverState {
    pub published: i64,
    pub ids: Vec<i64>,
    /// Committed Outbox rows the receiver does not have: never published, never applied.
    pub missing: i64,
    pub missing_ids: Vec<i64>,
}

/// Keyed by database, as every readback is (the audit holds each key to a database the
/// step's argv names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct State {
    pub outbox: OutboxState,
    pub receiver: ReceiverState,
}

/// Where the readback's queries run: one integer column per query.
pub trait Source {
    fn ints(&mut self, sql: &str) -> Result<Vec<i64>, String>;
}

impl Source for Pg {
    fn ints(&mut self, sql: &str) -> Result<Vec<i64>, String> {
        let rows = pg::run(self, sql, &[]).map_err(|e| format!("{e:#}"))?.rows;
        let ints = rows.iter().map(|r| pg::int(r, 0)).collect::<Result<_>>();
        ints.map_err(|e| format!("{e:#}"))
    }
}

fn one(source: &mut dyn Source, sql: &str) -> Result<i64, String> {
    Ok(source.ints(sql)?.first().copied().unwrap_or(0))
}

/// The state of both databases.
pub fn state_of(outbox: &mut dyn Source, receiver: &mut dyn Source) -> Result<State, String> {
    let relay = format!("'{RELAY}'");
    let mut s = State {
        outbox: OutboxState {
            rows: one(outbox, "SELECT count(*) FROM outbox")?,
            pending: one(
                outbox,
                "SELECT count(*) FROM outbox WHERE status = 'pending'",
            )?,
            ids: outbox.ints("SELECT id FROM outbox ORDER BY id")?,
            relay: RelayState {
                last_id: one(
                    outbox,
                    &format!("SELECT last_id FROM relay_state WHERE relay = {relay}"),
                )?,
                horizon: one(
                    outbox,
                    &format!("SELECT horizon FROM relay_state WHERE relay = {relay}"),
                )?,
                polls: one(
                    outbox,
                    &format!("SELECT polls FROM relay_state WHERE relay = {relay}"),
                )?,
            },
        },
        receiver: ReceiverState {
            published: one(receiver, "SELECT count(*) FROM published")?,
            ids: receiver.ints("SELECT id FROM published ORDER BY id")?,
            ..ReceiverState::default()
        },
    };
    s.receiver.missing_ids = s
        .outbox
        .ids
        .iter()
        .copied()
        .filter(|id| !s.receiver.ids.contains(id))
        .collect();
    s.receiver.missing = s.receiver.missing_ids.len() as i64;
    // Postconditions: the counts are the lists'.
    assert_eq!(s.outbox.rows, s.outbox.ids.len() as i64);
    assert_eq!(s.receiver.published, s.receiver.ids.len() as i64);
    Ok(s)
}

/// The state on PostgreSQL, through `stack.json` in `dir`: traced from a role (`dir` is `.`),
/// untraced from explore (a case's directory). Also the rows the design `variant`'s own next
/// poll would take, when asked.
pub fn read_in(dir: &Path, dbs: (&str, &str), variant: Option<&str>) -> Result<(State, i64)> {
    let mut ob = pg::open_in(dir, dbs.0, &OUTBOX, Session::ReadOnly, false)?;
    let mut rx = pg::open_in(dir, dbs.1, &RECEIVER, Session::ReadOnly, false)?;
    let failed = |e: String| crate::fail::failed(format!("readback: {e}"));
    let state = state_of(&mut ob, &mut rx).map_err(failed)?;
    let owed = match variant {
        Some(v) => owed(&mut ob, v, &state).map_err(failed)?,
        None => 0,
    };
    Ok((state, owed))
}

/// Rows a design's own next poll would still take (its view of what is owed): above the
/// mark, still pending, or at or above the horizon. `last-id`'s skipped row is below its
/// mark: nothing owed in its view, and missing all the same.
fn owed(source: &mut dyn Source, variant: &str, s: &State) -> Result<i64, String> {
    let sql = match variant {
        "last-id" => format!(
            "SELECT count(*) FROM outbox WHERE id > {}",
            s.outbox.relay.last_id
        ),
        "pending-status" => "SELECT count(*) FROM outbox WHERE status = 'pending'".to_string(),
        _ => format!(
            "SELECT count(*) FROM outbox WHERE xid >= {}",
            s.outbox.relay.horizon
        ),
    };
    one(source, &sql)
}

/// The readback of `gap-verify` on the replayed databases (`LabStack::readback`).
pub fn replayed(dbs: &crate::engine::Databases<'_>) -> Result<serde_json::Value, String> {
    let (Some(ob), Some(rx)) = (dbs.get("outbox"), dbs.get("receiver")) else {
        return Err("the replay has no outbox or receiver database".into());
    };
    let s = state_of(&mut SharedConn(ob), &mut SharedConn(rx))?;
    Ok(serde_json::to_value(s).expect("a readback serializes"))
}

/// A borrowed SQLite connection as a `Source` (queries need only `&Connection`).
struct SharedConn<'a>(&'a rusqlite::Connection);

impl Source for SharedConn<'_> {
    fn ints(&mut self, sql: &str) -> Result<Vec<i64>, String> {
        let mut stmt = self.0.prepare(sql).map_err(|e| e.to_string())?;
        let rows = stmt
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(|e| e.to_string())?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The readback on SQLite under the lab's own DDL (as the replay runs it): a row
    /// committed and never published is `missing`.
    #[test]
    fn a_committed_row_the_receiver_lacks_is_missing() {
        let ob = rusqlite::Connection::open_in_memory().unwrap();
        ob.execute_batch(OUTBOX.ddl).unwrap();
        ob.execute_batch(
            "INSERT INTO outbox(id, writer, body, xid, status) VALUES (7, 'A', 'a', 745, 'pending');
             INSERT INTO outbox(id, writer, body, xid, status) VALUES (8, 'B', 'b', 746, 'pending');
             INSERT INTO relay_state(relay, last_id, horizon, polls) VALUES ('relay', 8, 0, 2);",
        )
        .unwrap();
        let rx = rusqlite::Connection::open_in_memory().unwrap();
        rx.execute_batch(RECEIVER.ddl).unwrap();
        rx.execute_batch("INSERT INTO published(id, body, poll) VALUES (8, 'b', 1)")
            .unwrap();
        let s = state_of(&mut SharedConn(&ob), &mut SharedConn(&rx)).unwrap();
        assert_eq!((s.outbox.rows, s.receiver.published), (2, 1));
        assert_eq!(
            (s.receiver.missing, s.receiver.missing_ids.clone()),
            (1, vec![7])
        );
        assert_eq!((s.outbox.relay.last_id, s.outbox.relay.polls), (8, 2));
    }
}
