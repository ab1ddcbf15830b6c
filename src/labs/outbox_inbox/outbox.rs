//! The business store and its Outbox, written once for every stack: the sender's transaction
//! (contract + Outbox row, atomically), and the publisher's side of the Outbox (its pending
//! rows, and marking them sent). The statements are the same on SQLite and PostgreSQL but
//! for the Outbox's key: SQLite numbers its rows (`seq`), the servers' Outbox has natural
//! keys only (its message id; docs/lab-14-stack.md says why).

use anyhow::Result;

use super::model::{check_amount, check_id, now_ms, Payload};
use super::points;
use super::ports::describe_payloads;
use crate::crash;
use crate::fail;
use crate::out;
use crate::store::sql::{self, within, Sql, Val};

/// One business fact to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    pub contract: String,
    pub message: String,
    pub amount: i64,
}

/// Largest number of contracts one sender run writes.
pub const CONTRACTS_MAX: usize = 1_000_000;

/// Write `contracts` in transactions of `batch`, each holding the contracts and their Outbox
/// rows. Returns how many were written.
pub fn write(store: &mut dyn Sql, contracts: &[Contract], batch: usize) -> Result<usize> {
    assert!(batch >= 1, "batch size is at least 1");
    check(contracts)?;
    let mut written = 0;
    for chunk in contracts.chunks(batch) {
        within(store, |s| {
            for c in chunk {
                let inserted = s
                    .run(
                        "INSERT INTO contracts(contract_id, amount) VALUES ($1, $2)",
                        &[Val::Text(&c.contract), Val::Int(c.amount)],
                    )
                    .and_then(|_| s.run(
                        "INSERT INTO outbox(message_id, contract_id, amount, status) VALUES ($1, $2, $3, 'pending')",
                        &[Val::Text(&c.message), Val::Text(&c.contract), Val::Int(c.amount)],
                    ));
                if let Err(e) = inserted {
                    return Err(match sql::refused(&e) {
                        true => fail::usage(format!(
                            "contract {} or message {} already exists in sender database {}; nothing written",
                            c.contract, c.message, s.shown()
                        )),
                        false => e,
                    });
                }
            }
            Ok(())
        })?;
        crash::point(points::SENDER_BEFORE_COMMIT);
        store.commit()?;
        written += chunk.len();
        let what = match chunk {
            [one] => format!(
                "contract {} message {} amount {}",
                one.contract, one.message, one.amount
            ),
            _ => format!(
                "{} contracts through message {}",
                chunk.len(),
                chunk[chunk.len() - 1].message
            ),
        };
        out::committed("sender", &what);
        crash::point(points::SENDER_AFTER_COMMIT);
    }
    Ok(written)
}

/// Contracts are checked before any store is touched: bad input writes nothing.
pub fn check(contracts: &[Contract]) -> Result<()> {
    if contracts.len() > CONTRACTS_MAX {
        return Err(fail::usage(format!(
            "{} contracts exceed the bound of {CONTRACTS_MAX} per sender run",
            contracts.len()
        )));
    }
    for c in contracts {
        check_id("contract", &c.contract)?;
        check_id("message", &c.message)?;
        check_amount(c.amount)?;
    }
    Ok(())
}

/// N generated contracts `C000001…` with messages `M000001…` and amounts from the seed; on a
/// restart, those already in the store are skipped (they were written in order).
pub fn generated(store: &mut dyn Sql, count: usize, seed: u64) -> Result<Vec<Contract>> {
    let already = sql::count(store, "SELECT count(*) FROM contracts", &[])?;
    let already = usize::try_from(already).unwrap_or(0).min(count);
    let amounts = crate::rng::amounts(seed, count);
    Ok((already..count)
        .map(|i| Contract {
            contract: format!("C{:06}", i + 1),
            message: format!("M{:06}", i + 1),
            amount: amounts[i],
        })
        .collect())
}

/// The Outbox's statements where the stacks differ: its key.
pub struct OutboxSql {
    /// The next pending rows, `LIMIT $1`.
    pub pending: &'static str,
    /// The same after a key (`$1`), `LIMIT $2`.
    pub pending_after: &'static str,
    /// Mark one row sent (`$1` the time, `$2` its key).
    pub mark_sent: &'static str,
    /// The key is the first column of `pending`: SQLite's `seq`; else the message id.
    pub by_seq: bool,
}

pub static ON_SQLITE: OutboxSql = OutboxSql {
    pending: "SELECT seq, message_id, contract_id, amount FROM outbox WHERE status = 'pending' ORDER BY seq LIMIT $1",
    pending_after: "SELECT seq, message_id, contract_id, amount FROM outbox WHERE status = 'pending' AND seq > $1 ORDER BY seq LIMIT $2",
    mark_sent: "UPDATE outbox SET status = 'sent', sent_ms = $1 WHERE seq = $2 AND status = 'pending'",
    by_seq: true,
};

pub static ON_SERVERS: OutboxSql = OutboxSql {
    pending: "SELECT message_id, contract_id, amount FROM outbox WHERE status = 'pending' ORDER BY message_id LIMIT $1",
    pending_after: "SELECT message_id, contract_id, amount FROM outbox WHERE status = 'pending' AND message_id > $1 ORDER BY message_id LIMIT $2",
    mark_sent: "UPDATE outbox SET status = 'sent', sent_ms = $1 WHERE message_id = $2 AND status = 'pending'",
    by_seq: false,
};

/// A pending Outbox row: its payload, and its `seq` where the Outbox numbers its rows.
#[derive(Debug, Clone)]
pub struct Pending {
    pub seq: Option<i64>,
    pub payload: Payload,
}

impl Pending {
    fn key(&self) -> Val<'_> {
        match self.seq {
            Some(seq) => Val::Int(seq),
            None => Val::Text(&self.payload.message),
        }
    }
}

/// The business store as the publisher sees it: its Outbox.
pub struct Outbox {
    pub store: Box<dyn Sql>,
    pub sql: &'static OutboxSql,
}

impl Outbox {
    /// The next `batch` pending rows, after `after` (the last row this run already sent on).
    pub fn pending(&mut self, batch: usize, after: Option<&Pending>) -> Result<Vec<Pending>> {
        let by_seq = self.sql.by_seq;
        let limit = Val::Int(batch as i64);
        let (statement, args) = match after {
            // The statement of the contract's trace while no row waits for its mark.
            None => (self.sql.pending, vec![limit]),
            Some(row) => (self.sql.pending_after, vec![row.key(), limit]),
        };
        sql::rows(&mut *self.store, statement, &args, |r| {
            let (seq, r) = match by_seq {
                true => (Some(r[0].int()?), &r[1..]),
                false => (None, r),
            };
            Some(Pending {
                seq,
                payload: Payload {
                    message: r[0].text()?,
                    contract: r[1].text()?,
                    amount: r[2].int()?,
                },
            })
        })
    }

    /// Mark `rows` sent, in one transaction.
    pub fn mark_sent(&mut self, rows: &[Pending]) -> Result<()> {
        let now = now_ms();
        let mark = self.sql.mark_sent;
        within(&mut *self.store, |s| {
            for row in rows {
                // `AND status = 'pending'`: a second publisher may have marked it already.
                s.run(mark, &[Val::Int(now), row.key()])?;
            }
            Ok(())
        })?;
        crash::point(points::PUBLISHER_BEFORE_MARK_SENT);
        self.store.commit()?;
        let payloads: Vec<Payload> = rows.iter().map(|r| r.payload.clone()).collect();
        out::committed(
            "sender",
            &format!("outbox sent for {}", describe_payloads(&payloads)),
        );
        crash::point(points::PUBLISHER_AFTER_MARK_SENT);
        Ok(())
    }
}
