//! The relay: one poll per run. It reads the Outbox rows it has not published yet (each
//! design decides which those are), publishes them to the receiver in one commit (an insert
//! keyed by the row id, so a poll repeated after a crash publishes nothing twice), then
//! commits its new position. The designs:
//!
//! - `last-id`: rows with `id > last_id`, then `last_id` = the highest id read. A row whose
//!   id was taken before a higher one but committed after it is below the mark when it
//!   becomes visible: skipped for ever (the bug of the reports).
//! - `pending-status`: rows with `status = 'pending'`, then each published row marked
//!   `published` (lab 14's relay): a late row is pending when it appears, so it is read.
//! - `xid-horizon`: only rows whose writer's transaction id lies below the oldest
//!   transaction still running (`pg_snapshot_xmin(pg_current_snapshot())`), from the last
//!   horizon on: every such transaction has ended, so no row can still appear below the new
//!   horizon. A writer held open holds the horizon back; its row is read once it commits.

use anyhow::Result;

use serde::Serialize;

use super::pg;
use super::points;
use super::schema::{OUTBOX, RECEIVER, RELAY};
use crate::crash;
use crate::events::{self, Event};
use crate::fail;
use crate::out;
use crate::store::pg::{Pg, Session, Val};

/// How the relay decides which Outbox rows it has not published yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Rows with an id above the highest it published (loses a row that commits late)
    LastId,
    /// Rows still marked pending; each published row is marked published
    PendingStatus,
    /// Rows whose writer's transaction lies below the oldest running one (pg_snapshot_xmin)
    XidHorizon,
}

/// The relay's designs by name, the correct ones first.
pub const VARIANTS: &[&str] = &["pending-status", "xid-horizon", "last-id"];

impl Variant {
    /// The design of that name (one of `VARIANTS`).
    pub fn named(name: &str) -> Variant {
        <Variant as clap::ValueEnum>::from_str(name, false)
            .unwrap_or_else(|_| unreachable!("lab f1 has no design {name}"))
    }
}

/// The most rows one poll reads.
pub const BATCH_MAX: usize = 1_000;

/// One Outbox row as the relay read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: i64,
    pub body: String,
    pub xid: i64,
}

/// The relay's position, as `relay_state` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub last_id: i64,
    pub horizon: i64,
    pub polls: i64,
}

/// What one poll did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    pub read: Vec<i64>,
    pub published: Vec<i64>,
    pub already: Vec<i64>,
}

/// The query of a design's poll, given the position (and the horizon, for `xid-horizon`).
pub fn select(variant: Variant, at: Position, horizon: i64) -> String {
    let limit = BATCH_MAX + 1;
    match variant {
        Variant::LastId => format!(
            "SELECT id, body, xid FROM outbox WHERE id > {} ORDER BY id LIMIT {limit}",
            at.last_id
        ),
        Variant::PendingStatus => format!(
            "SELECT id, body, xid FROM outbox WHERE status = 'pending' ORDER BY id LIMIT {limit}"
        ),
        Variant::XidHorizon => format!(
            "SELECT id, body, xid FROM outbox WHERE xid >= {} AND xid < {horizon} ORDER BY xid, id LIMIT {limit}",
            at.horizon
        ),
    }
}

/// The rows of one poll, bounded by `BATCH_MAX`, and the horizon to commit. A full batch of
/// `xid-horizon` stops short of its last transaction id, so that no transaction is split
/// between two polls.
pub fn bound(variant: Variant, mut rows: Vec<Row>, horizon: i64) -> Result<(Vec<Row>, i64)> {
    if rows.len() <= BATCH_MAX {
        return Ok((rows, horizon));
    }
    rows.truncate(BATCH_MAX);
    if variant != Variant::XidHorizon {
        return Ok((rows, horizon));
    }
    let cut = rows.last().expect("a full batch").xid;
    rows.retain(|r| r.xid < cut);
    if rows.is_empty() {
        return Err(fail::failed(format!(
            "more than {BATCH_MAX} rows of transaction {cut}: one poll cannot take them"
        )));
    }
    Ok((rows, cut))
}

/// `gap-relay`: one poll.
pub fn run(outbox: &str, receiver: &str, variant: Variant) -> Result<Poll> {
    let mut ob = pg::open(outbox, &OUTBOX, Session::Durable)?;
    let mut rx = pg::open(receiver, &RECEIVER, Session::Durable)?;
    pg::run(&mut ob, "BEGIN", &[])?;
    // First, before this transaction writes (and takes a transaction id of its own).
    let horizon = match variant {
        Variant::XidHorizon => pg::value(
            &mut ob,
            "HORIZON",
            "",
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
        )?,
        _ => 0,
    };
    let relay = [Val::Text(RELAY)];
    pg::run(
        &mut ob,
        "INSERT INTO relay_state(relay, last_id, horizon, polls) VALUES ($1, 0, 0, 0) ON CONFLICT (relay) DO NOTHING",
        &relay,
    )?;
    let at = pg::run(
        &mut ob,
        "SELECT last_id, horizon, polls FROM relay_state WHERE relay = $1",
        &relay,
    )?;
    let at = match at.rows.first() {
        Some(r) => Position {
            last_id: pg::int(r, 0)?,
            horizon: pg::int(r, 1)?,
            polls: pg::int(r, 2)?,
        },
        None => unreachable!("the row was just made sure of"),
    };
    let mut rows: Vec<Row> = Vec::new();
    for r in pg::run(&mut ob, &select(variant, at, horizon), &[])?.rows {
        rows.push(Row {
            id: pg::int(&r, 0)?,
            body: r.get(1).cloned().flatten().unwrap_or_default(),
            xid: pg::int(&r, 2)?,
        });
    }
    let (rows, horizon) = bound(variant, rows, horizon)?;
    let read: Vec<i64> = rows.iter().map(|r| r.id).collect();
    out::line(&format!("READ {} {}", read.len(), ids(&read)));
    let poll = at.polls + 1;
    let (published, already) = publish(&mut rx, &rows, poll)?;
    crash::point(points::RELAY_AFTER_PUBLISH);
    let (sql, advanced) = match variant {
        Variant::LastId => {
            let last = read.iter().copied().max().unwrap_or(at.last_id);
            (
                format!("UPDATE relay_state SET last_id = {last}, polls = $2 WHERE relay = $1"),
                format!("last-id {last}"),
            )
        }
        Variant::PendingStatus => {
            if !read.is_empty() {
                pg::run(
                    &mut ob,
                    &format!(
                        "UPDATE outbox SET status = 'published' WHERE id IN ({})",
                        read.iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &[],
                )?;
            }
            (
                "UPDATE relay_state SET polls = $2 WHERE relay = $1".to_string(),
                format!("marked {}", read.len()),
            )
        }
        Variant::XidHorizon => (
            format!("UPDATE relay_state SET horizon = {horizon}, polls = $2 WHERE relay = $1"),
            format!("horizon {horizon}"),
        ),
    };
    pg::run(&mut ob, &sql, &[Val::Text(RELAY), Val::Int(poll)])?;
    pg::run(&mut ob, "COMMIT", &[])?;
    out::committed(OUTBOX.db, &format!("advance of poll {poll}: {advanced}"));
    crash::point(points::RELAY_AFTER_ADVANCE);
    Ok(Poll {
        read,
        published,
        already,
    })
}

/// The rows into the receiver, in one commit; an id already there is not published again.
fn publish(rx: &mut Pg, rows: &[Row], poll: i64) -> Result<(Vec<i64>, Vec<i64>)> {
    let (mut published, mut already) = (Vec::new(), Vec::new());
    if rows.is_empty() {
        return Ok((published, already));
    }
    pg::run(rx, "BEGIN", &[])?;
    for row in rows {
        let n = pg::run(
            rx,
            "INSERT INTO published(id, body, poll) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
            &[Val::Int(row.id), Val::Text(&row.body), Val::Int(poll)],
        )?;
        match n.changed {
            1 => published.push(row.id),
            _ => already.push(row.id),
        }
    }
    pg::run(rx, "COMMIT", &[])?;
    out::committed(
        RECEIVER.db,
        &format!("publish of poll {poll}: messages {}", ids(&published)),
    );
    for id in &published {
        out::line(&format!("PUBLISHED message {id}"));
        events::emit(&Event::Applied {
            item: id.to_string(),
        });
    }
    for id in &already {
        out::line(&format!("ALREADY message {id}: published before"));
        events::emit(&Event::Duplicate {
            item: id.to_string(),
        });
    }
    Ok((published, already))
}

/// `7,8`, or `-` for none.
pub fn ids(ids: &[i64]) -> String {
    match ids.is_empty() {
        true => "-".to_string(),
        false => ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, xid: i64) -> Row {
        Row {
            id,
            body: String::new(),
            xid,
        }
    }

    #[test]
    fn each_design_reads_its_own_window_and_a_full_batch_never_splits_a_transaction() {
        let at = Position {
            last_id: 8,
            horizon: 740,
            polls: 1,
        };
        assert!(select(Variant::LastId, at, 0).contains("WHERE id > 8 ORDER BY id"));
        assert!(select(Variant::PendingStatus, at, 0).contains("status = 'pending'"));
        assert!(select(Variant::XidHorizon, at, 750).contains("xid >= 740 AND xid < 750"));
        let small = vec![row(7, 745), row(8, 746)];
        assert_eq!(
            bound(Variant::XidHorizon, small.clone(), 750).unwrap(),
            (small, 750)
        );
        let full: Vec<Row> = (0..=BATCH_MAX as i64)
            .map(|i| row(i, 100 + i / 2))
            .collect();
        let (rows, horizon) = bound(Variant::XidHorizon, full.clone(), 9_999).unwrap();
        assert_eq!(horizon, full[BATCH_MAX - 1].xid);
        assert!(rows.iter().all(|r| r.xid < horizon));
        let (rows, horizon) = bound(Variant::LastId, full, 0).unwrap();
        assert_eq!((rows.len(), horizon), (BATCH_MAX, 0));
        let one_xid: Vec<Row> = (0..=BATCH_MAX as i64).map(|i| row(i, 5)).collect();
        assert!(bound(Variant::XidHorizon, one_xid, 9).is_err());
        assert_eq!(ids(&[7, 8]), "7,8");
        assert_eq!(ids(&[]), "-");
    }
}
