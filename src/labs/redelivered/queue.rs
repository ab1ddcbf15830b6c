//! The queue with leases, the consumer's transport on SQLite: enqueue, claim (a lease that
//! expires) and ack (only by the consumer that holds the lease). Each is one transaction,
//! `BEGIN IMMEDIATE`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::consumer::{acked_line, Reply, Taken, Transport};
use super::schema::QUEUE;
use crate::common::now_ms;
use crate::fail;
use crate::labs::http_dispatch::model::shown_key;
use crate::out;
use crate::store::{self, Access, Db};

/// `redeliver-enqueue` (its id and body checked): one message, committed; the same id with
/// the same body again is `ALREADY` (nothing written), with another body a conflict (exit 65).
pub fn enqueue(path: &Path, id: &str, body: &str) -> Result<()> {
    let db = store::open(path, &QUEUE, Access::WriteCreate)?;
    let shown = path.display().to_string();
    let on_db = |e| store::explain(e, "queue", &shown);
    db.conn.execute_batch("BEGIN IMMEDIATE").map_err(on_db)?;
    let existing: Option<String> = db
        .conn
        .prepare_cached("SELECT body FROM messages WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .map_err(on_db)?;
    if let Some(old) = existing {
        db.conn.execute_batch("ROLLBACK").map_err(on_db)?;
        if old == body {
            out::line(&format!(
                "ALREADY message {}: same body, nothing written",
                shown_key(id)
            ));
            return Ok(());
        }
        return Err(fail::conflict(format!(
            "payload conflict: message {} is queued with another body",
            shown_key(id)
        )));
    }
    db.conn
        .prepare_cached(
            "INSERT INTO messages(id, body, deliveries, enqueued_ms) VALUES (?1, ?2, 0, ?3)",
        )
        .and_then(|mut s| s.execute(params![id, body, now_ms()]))
        .map_err(on_db)?;
    db.conn.execute_batch("COMMIT").map_err(on_db)?;
    out::committed("queue", &format!("enqueue of message {}", shown_key(id)));
    Ok(())
}

/// The message a consumer may take next: the first one not acked, with its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub id: String,
    pub body: String,
    pub owner: Option<String>,
    pub lease_until_ms: Option<i64>,
    pub deliveries: i64,
}

impl Head {
    /// How long another consumer's lease still holds at `now_ms` (0: free to claim).
    pub fn leased_for_ms(&self, now_ms: i64) -> i64 {
        match (&self.owner, self.lease_until_ms) {
            (Some(_), Some(until)) => (until - now_ms).max(0),
            _ => 0,
        }
    }
}

/// What one look at the queue found.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// Nothing left to consume.
    Empty,
    /// The head is leased to another consumer for this long still.
    Leased { head: Head, for_ms: i64 },
    /// Claimed: this delivery (1 for the first) of the message, with a lease until then.
    Claimed { head: Head, delivery: i64 },
}

fn on(db: &Db, path: &Path) -> impl Fn(rusqlite::Error) -> anyhow::Error {
    let shown = path.display().to_string();
    let name = db.db;
    move |e| store::explain(e, name, &shown)
}

/// One attempt to claim the head with a lease of `lease_ms`, in one transaction.
pub fn claim(db: &Db, path: &Path, consumer: &str, lease_ms: u64) -> Result<Claim> {
    let on_db = on(db, path);
    db.conn.execute_batch("BEGIN IMMEDIATE").map_err(&on_db)?;
    let head: Option<Head> = db
        .conn
        .prepare_cached(
            "SELECT id, body, owner, lease_until_ms, deliveries FROM messages
             WHERE acked_by IS NULL ORDER BY enqueued_ms, id LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row([], |r| {
                Ok(Head {
                    id: r.get(0)?,
                    body: r.get(1)?,
                    owner: r.get(2)?,
                    lease_until_ms: r.get(3)?,
                    deliveries: r.get(4)?,
                })
            })
            .optional()
        })
        .map_err(&on_db)?;
    let Some(head) = head else {
        db.conn.execute_batch("ROLLBACK").map_err(&on_db)?;
        return Ok(Claim::Empty);
    };
    let now = now_ms();
    let for_ms = head.leased_for_ms(now);
    if for_ms > 0 {
        db.conn.execute_batch("ROLLBACK").map_err(&on_db)?;
        return Ok(Claim::Leased { head, for_ms });
    }
    let until = now + lease_ms as i64;
    let changed = db
        .conn
        .prepare_cached(
            "UPDATE messages SET owner = ?1, lease_until_ms = ?2, deliveries = deliveries + 1
             WHERE id = ?3 AND acked_by IS NULL",
        )
        .and_then(|mut s| s.execute(params![consumer, until, head.id]))
        .map_err(&on_db)?;
    // Under BEGIN IMMEDIATE nobody else wrote since the SELECT.
    assert_eq!(changed, 1, "the head read in this transaction is claimable");
    db.conn.execute_batch("COMMIT").map_err(&on_db)?;
    let delivery = head.deliveries + 1;
    out::committed(
        "queue",
        &format!(
            "claim of delivery {delivery} message {} by {consumer}",
            shown_key(&head.id)
        ),
    );
    Ok(Claim::Claimed { head, delivery })
}

/// Record the reply and ack the message, in one transaction. The ack holds only while this
/// consumer still owns the lease: true when it did, false when the lease had passed on (the
/// reply is recorded all the same: the call ran).
pub fn ack(
    db: &Db,
    path: &Path,
    id: &str,
    consumer: &str,
    delivery: i64,
    reply: Reply,
) -> Result<bool> {
    let on_db = on(db, path);
    db.conn.execute_batch("BEGIN IMMEDIATE").map_err(&on_db)?;
    let acked = db
        .conn
        .prepare_cached(
            "UPDATE messages SET acked_by = ?1 WHERE id = ?2 AND owner = ?1 AND acked_by IS NULL",
        )
        .and_then(|mut s| s.execute(params![consumer, id]))
        .map_err(&on_db)?;
    db.conn
        .prepare_cached(
            "INSERT INTO replies(message, consumer, delivery, status, replayed, acked, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                consumer,
                delivery,
                reply.status,
                reply.replayed,
                acked as i64,
                now_ms()
            ])
        })
        .map_err(&on_db)?;
    db.conn.execute_batch("COMMIT").map_err(&on_db)?;
    let what = match acked {
        1 => format!("ack of message {} by {consumer}", shown_key(id)),
        _ => format!(
            "reply of message {} by {consumer}, ack refused",
            shown_key(id)
        ),
    };
    out::committed("queue", &what);
    Ok(acked == 1)
}

/// How a consumer takes from the lease queue.
#[derive(Debug, Clone, Copy)]
pub struct Taking {
    pub lease_ms: u64,
    /// How long it may wait for another consumer's lease to expire.
    pub wait_ms: u64,
}

/// The most claim attempts one run makes (each waits for a lease to end, within the wait).
const CLAIM_ROUNDS_MAX: u32 = 64;

/// The lease queue as one consumer's transport.
pub struct Leases {
    db: Db,
    path: PathBuf,
    consumer: String,
    taking: Taking,
}

impl Leases {
    /// The queue file, which must exist.
    pub fn open(path: &Path, consumer: &str, taking: Taking) -> Result<Leases> {
        Ok(Leases {
            db: store::open(path, &QUEUE, Access::Write)?,
            path: path.to_path_buf(),
            consumer: consumer.to_string(),
            taking,
        })
    }
}

impl Transport for Leases {
    /// Claim the head; while another consumer's lease holds it, wait that lease out (within
    /// the wait, else exit 75 at once).
    fn take(&mut self) -> Result<Option<Taken>> {
        let waited_since = std::time::Instant::now();
        let (db, path, consumer) = (&self.db, &self.path, self.consumer.as_str());
        for _ in 0..CLAIM_ROUNDS_MAX {
            match claim(db, path, consumer, self.taking.lease_ms)? {
                Claim::Empty => return Ok(None),
                Claim::Claimed { head, delivery } => {
                    return Ok(Some(Taken {
                        id: head.id,
                        body: head.body,
                        count: ("delivery", delivery),
                    }))
                }
                Claim::Leased { head, for_ms } => {
                    let wait_ms = self.taking.wait_ms;
                    let left_ms = wait_ms as i64 - waited_since.elapsed().as_millis() as i64;
                    let owner = head.owner.as_deref().unwrap_or("-");
                    let id = shown_key(&head.id);
                    if for_ms > left_ms {
                        return Err(fail::locked(format!(
                            "message {id} is leased by {owner} for {for_ms} ms more, past --wait-ms {wait_ms}"
                        )));
                    }
                    out::line(&format!("WAITING message {id} leased by {owner}"));
                    // One ms past the lease's end, so the next look finds it expired.
                    std::thread::sleep(Duration::from_millis(for_ms as u64 + 1));
                }
            }
        }
        Err(fail::locked(format!(
            "no claim after {CLAIM_ROUNDS_MAX} attempts: the head kept being leased again"
        )))
    }

    fn settle(&mut self, taken: &Taken, reply: Reply) -> Result<bool> {
        let consumer = self.consumer.as_str();
        let acked = ack(
            &self.db,
            &self.path,
            &taken.id,
            consumer,
            taken.count.1,
            reply,
        )?;
        out::line(&match acked {
            true => acked_line(&taken.id, consumer),
            false => format!(
                "LEASE-LOST message {}: the lease passed to another consumer, ack refused; the call ran all the same",
                shown_key(&taken.id)
            ),
        });
        Ok(acked)
    }

    fn unreplied(&self) -> &'static str {
        "the lease will expire and the message be delivered again"
    }

    fn close(self: Box<Self>, _acked: bool) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_holds_until_it_ends_and_only_its_owner_acks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.db");
        enqueue(&path, "M1", "{}").unwrap();
        let db = store::open(&path, &QUEUE, Access::Write).unwrap();
        let Claim::Claimed { delivery, .. } = claim(&db, &path, "A", 60_000).unwrap() else {
            panic!("a fresh message is claimable");
        };
        assert_eq!(delivery, 1);
        match claim(&db, &path, "B", 60_000).unwrap() {
            Claim::Leased { head, for_ms } => {
                assert_eq!(head.owner.as_deref(), Some("A"));
                assert!(for_ms > 0 && for_ms <= 60_000);
            }
            other => panic!("A's lease holds: {other:?}"),
        }
        // The lease ends: B takes the message, and A's ack is refused.
        db.conn
            .execute("UPDATE messages SET lease_until_ms = 0", [])
            .unwrap();
        let Claim::Claimed { delivery, .. } = claim(&db, &path, "B", 60_000).unwrap() else {
            panic!("an expired lease passes on");
        };
        assert_eq!(delivery, 2);
        let reply = Reply {
            status: 200,
            replayed: false,
        };
        assert!(!ack(&db, &path, "M1", "A", 1, reply).unwrap());
        assert!(ack(&db, &path, "M1", "B", 2, reply).unwrap());
        assert_eq!(claim(&db, &path, "C", 1).unwrap(), Claim::Empty);
    }
}
