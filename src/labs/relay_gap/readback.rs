//! The read-only view of lab f1's two databases: the Outbox rows (committed, pending), the
//! relay's position, what the receiver has, and the rows committed but never published
//! (`missing`: the loss the `last-id` design shows). The same portable queries run on
//! PostgreSQL (the role) and on SQLite (the audit's replay), through `Source`.

use anyhow::Result;
use serde::Serialize;

use super::pg::Pg;
use super::schema::{OUTBOX, RECEIVER, RELAY};

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
        let rows = self.query(sql).map_err(|e| format!("{e:#}"))?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
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

/// `gap-verify`: the state on PostgreSQL, its queries traced.
pub fn read(outbox: &str, receiver: &str) -> Result<State> {
    let mut ob = Pg::connect(OUTBOX.db, outbox, "gap-verify")?;
    let mut rx = Pg::connect(RECEIVER.db, receiver, "gap-verify")?;
    state_of(&mut ob, &mut rx).map_err(|e| crate::fail::failed(format!("readback: {e}")))
}

/// Rows a design's own next poll would still take (its view of what is owed): above the
/// mark, still pending, or at or above the horizon. `last-id`'s skipped row is below its
/// mark: nothing owed in its view, and missing all the same.
pub fn owed(source: &mut dyn Source, variant: &str, s: &State) -> Result<i64, String> {
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

/// The readback of `gap-verify` on the replayed databases (engine::Lab::readback).
pub fn replayed(
    phase: &str,
    dbs: &crate::engine::Databases<'_>,
) -> Option<Result<serde_json::Value, String>> {
    if phase != super::roles::VERIFY {
        return None;
    }
    let (Some(ob), Some(rx)) = (dbs.get("outbox"), dbs.get("receiver")) else {
        return Some(Err("the replay has no outbox or receiver database".into()));
    };
    let mut ob = SharedConn(ob);
    let mut rx = SharedConn(rx);
    Some(
        state_of(&mut ob, &mut rx).map(|s| serde_json::to_value(s).expect("a readback serializes")),
    )
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
