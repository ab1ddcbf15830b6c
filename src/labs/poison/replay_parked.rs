//! The operator's replay of one parked message once the fix is in: its payload corrected in
//! the dead-letter table (`--amount`), or the message as it was when the receiver's rule has
//! changed. The credit goes through the receiver's key, so a replay that crashed after the
//! credit and runs again is absorbed: the message is applied once.

use std::path::Path;

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::apply::{self, Applied};
use super::points;
use super::schema::{QUEUE, RECEIVER};
use crate::crash;
use crate::fail;
use crate::out;
use crate::store::{self, Access, Db};

pub struct Options<'a> {
    pub queue: &'a Path,
    pub receiver: &'a Path,
    pub message: &'a str,
    /// The corrected amount (None: replay the payload as it is).
    pub amount: Option<i64>,
}

/// How a replay ended without an error.
#[derive(Debug, PartialEq, Eq)]
pub enum Replayed {
    Now,
    /// An earlier run replayed it.
    Before,
}

fn letter(queue: &Db, message: &str) -> rusqlite::Result<Option<(i64, String)>> {
    queue
        .conn
        .prepare_cached("SELECT amount, status FROM dead_letters WHERE message_id = ?1")?
        .query_row([message], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

fn status_of(queue: &Db, message: &str) -> rusqlite::Result<Option<String>> {
    queue
        .conn
        .prepare_cached("SELECT status FROM messages WHERE message_id = ?1")?
        .query_row([message], |r| r.get(0))
        .optional()
}

/// The amount the receiver credited for `message` (None: not credited).
fn credited_amount(receiver: &Db, message: &str) -> rusqlite::Result<Option<i64>> {
    receiver
        .conn
        .prepare_cached("SELECT amount FROM credits WHERE message_id = ?1")?
        .query_row([message], |r| r.get(0))
        .optional()
}

fn fix(queue: &Db, message: &str, amount: i64) -> rusqlite::Result<()> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    queue
        .conn
        .prepare_cached(
            "UPDATE dead_letters SET amount = ?2, fixed_ms = ?3 WHERE message_id = ?1 AND status = 'parked'",
        )?
        .execute(params![message, amount, crate::common::now_ms()])?;
    queue.conn.execute_batch("COMMIT")?;
    out::committed(
        "queue",
        &format!("corrected payload of message {message} amount {amount}"),
    );
    crash::point(points::REPLAY_AFTER_FIX_COMMIT);
    Ok(())
}

fn refused(queue: &Db, message: &str, reason: &str) -> rusqlite::Result<i64> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    queue
        .conn
        .prepare_cached(
            "UPDATE dead_letters SET attempts = attempts + 1, reason = ?2 WHERE message_id = ?1 AND status = 'parked'",
        )?
        .execute(params![message, reason])?;
    let attempts: i64 = queue
        .conn
        .prepare_cached("SELECT attempts FROM dead_letters WHERE message_id = ?1")?
        .query_row([message], |r| r.get(0))?;
    queue.conn.execute_batch("COMMIT")?;
    out::committed(
        "queue",
        &format!("failed replay of message {message}, attempt {attempts}"),
    );
    Ok(attempts)
}

fn mark_replayed(queue: &Db, message: &str) -> rusqlite::Result<()> {
    let now = crate::common::now_ms();
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    queue
        .conn
        .prepare_cached(
            "UPDATE dead_letters SET status = 'replayed', replayed_ms = ?2 WHERE message_id = ?1 AND status = 'parked'",
        )?
        .execute(params![message, now])?;
    queue
        .conn
        .prepare_cached(
            "UPDATE messages SET status = 'done', done_ms = ?2 WHERE message_id = ?1 AND status = 'parked'",
        )?
        .execute(params![message, now])?;
    crash::point(points::REPLAY_BEFORE_REPLAY_COMMIT);
    queue.conn.execute_batch("COMMIT")?;
    out::committed("queue", &format!("replay of message {message}"));
    crash::point(points::REPLAY_AFTER_REPLAY_COMMIT);
    Ok(())
}

pub fn run(o: &Options<'_>) -> Result<Replayed> {
    let queue = store::open(o.queue, &QUEUE, Access::Write)?;
    let q_shown = o.queue.display().to_string();
    let on_queue = |e| store::explain(e, "queue", &q_shown);
    let m = o.message;
    let Some((parked_amount, status)) = letter(&queue, m).map_err(on_queue)? else {
        return Err(match status_of(&queue, m).map_err(on_queue)? {
            Some(s) => fail::usage(format!(
                "message {m} in queue database {q_shown} is {s}, not parked: nothing to replay"
            )),
            None => fail::usage(format!("queue database {q_shown} holds no message {m}")),
        });
    };
    if status == "replayed" {
        out::line(&format!("ALREADY message {m} was replayed"));
        return Ok(Replayed::Before);
    }
    // The receiver is opened only once there is something to replay.
    let receiver = store::open(o.receiver, &RECEIVER, Access::WriteCreate)?;
    let r_shown = o.receiver.display().to_string();
    let on_receiver = |e| store::explain(e, "receiver", &r_shown);
    // An earlier replay that crashed after the receiver's commit already applied the message:
    // its amount is the one applied, and a different --amount now is neither written into
    // the dead letter nor claimed (the receiver's key absorbs the credit either way).
    let credited = credited_amount(&receiver, m).map_err(on_receiver)?;
    let amount = match (credited, o.amount) {
        (Some(c), _) => c,
        (None, Some(a)) if a != parked_amount => {
            fix(&queue, m, a).map_err(on_queue)?;
            a
        }
        (None, _) => parked_amount,
    };
    let applied = apply::credit(&receiver, m, amount, points::REPLAY_AFTER_APPLY_COMMIT)
        .map_err(on_receiver)?;
    if let Applied::Refused(reason) = applied {
        let attempts = refused(&queue, m, &reason).map_err(on_queue)?;
        return Err(fail::failed(format!(
            "message {m} still fails at the receiver ({reason}); it stays parked after {attempts} attempts"
        )));
    }
    mark_replayed(&queue, m).map_err(on_queue)?;
    let note = match o.amount {
        Some(a) if credited.is_some() && a != amount => {
            format!(" (credited by an earlier run; --amount {a} not applied)")
        }
        _ => String::new(),
    };
    out::line(&format!("REPLAYED message {m} amount {amount}{note}"));
    Ok(Replayed::Now)
}
