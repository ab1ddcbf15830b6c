//! The consumer: the head of the queue (lowest `seq` still pending) is credited at the
//! receiver and acked; a refusal is recorded as a failed attempt in the queue (durable, so a
//! restart counts on). `retry-then-skip` parks the head in the dead-letter table once its
//! recorded failures reach `--attempts-max` and moves on; `retry-forever` retries it, every
//! later message waiting, until this run has made `--attempts-max` attempts, and reports the
//! stall with how long it waited.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::apply::{self, Applied};
use super::model::Variant;
use super::points;
use super::schema::{QUEUE, RECEIVER};
use crate::crash;
use crate::out;
use crate::store::{self, Access, Db};

pub struct Options<'a> {
    pub queue: &'a Path,
    pub receiver: &'a Path,
    pub variant: Variant,
    pub attempts_max: u32,
    pub backoff_ms: u64,
}

/// Steps of one run at most: each acks, parks or records a failure, so a queue of
/// `MESSAGES_MAX` messages with `ATTEMPTS_MAX_MAX` failures each fits.
const STEPS_MAX: usize = super::model::MESSAGES_MAX * (super::model::ATTEMPTS_MAX_MAX as usize + 2);

/// The head of the queue.
struct Head {
    seq: i64,
    message: String,
    amount: i64,
    failures: i64,
}

/// What one run did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Done {
    pub applied: u32,
    pub duplicates: u32,
    pub parked: u32,
    pub failed_attempts: u32,
    /// retry-forever: the run stopped at its bound with this message at the head.
    pub stalled: Option<String>,
}

fn head(queue: &Db) -> rusqlite::Result<Option<Head>> {
    queue
        .conn
        .prepare_cached(
            "SELECT seq, message_id, amount, failures FROM messages
             WHERE status = 'pending' ORDER BY seq LIMIT 1",
        )?
        .query_row([], |r| {
            Ok(Head {
                seq: r.get(0)?,
                message: r.get(1)?,
                amount: r.get(2)?,
                failures: r.get(3)?,
            })
        })
        .optional()
}

fn ack(queue: &Db, h: &Head) -> rusqlite::Result<()> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    let n = queue
        .conn
        .prepare_cached(
            "UPDATE messages SET status = 'done', done_ms = ?2 WHERE seq = ?1 AND status = 'pending'",
        )?
        .execute(params![h.seq, crate::common::now_ms()])?;
    assert_eq!(n, 1, "the head is pending until this run acks it");
    queue.conn.execute_batch("COMMIT")?;
    out::committed("queue", &format!("ack of message {}", h.message));
    crash::point(points::CONSUME_AFTER_ACK_COMMIT);
    Ok(())
}

/// Record one failed attempt; returns the failures now recorded for the message.
fn record_failure(queue: &Db, h: &Head, reason: &str) -> rusqlite::Result<i64> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    queue
        .conn
        .prepare_cached(
            "UPDATE messages SET failures = failures + 1, last_error = ?2,
             first_failed_ms = coalesce(first_failed_ms, ?3) WHERE seq = ?1 AND status = 'pending'",
        )?
        .execute(params![h.seq, reason, crate::common::now_ms()])?;
    let failures: i64 = queue
        .conn
        .prepare_cached("SELECT failures FROM messages WHERE seq = ?1")?
        .query_row([h.seq], |r| r.get(0))?;
    crash::point(points::CONSUME_BEFORE_ATTEMPT_COMMIT);
    queue.conn.execute_batch("COMMIT")?;
    out::committed(
        "queue",
        &format!("failed attempt {failures} of message {}", h.message),
    );
    crash::point(points::CONSUME_AFTER_ATTEMPT_COMMIT);
    Ok(failures)
}

/// Move the head into the dead-letter table, with its last reason and its attempts.
fn park(queue: &Db, h: &Head) -> rusqlite::Result<()> {
    queue.conn.execute_batch("BEGIN IMMEDIATE")?;
    queue
        .conn
        .prepare_cached(
            "INSERT INTO dead_letters(message_id, seq, amount, reason, attempts, status, parked_ms)
             SELECT message_id, seq, amount, coalesce(last_error, 'refused'), failures, 'parked', ?2
             FROM messages WHERE seq = ?1 AND status = 'pending'",
        )?
        .execute(params![h.seq, crate::common::now_ms()])?;
    queue
        .conn
        .prepare_cached(
            "UPDATE messages SET status = 'parked' WHERE seq = ?1 AND status = 'pending'",
        )?
        .execute([h.seq])?;
    crash::point(points::CONSUME_BEFORE_PARK_COMMIT);
    queue.conn.execute_batch("COMMIT")?;
    out::committed(
        "queue",
        &format!(
            "park of message {} after {} failed attempts",
            h.message, h.failures
        ),
    );
    crash::point(points::CONSUME_AFTER_PARK_COMMIT);
    Ok(())
}

/// Messages still pending behind the head.
fn waiting_behind(queue: &Db, h: &Head) -> rusqlite::Result<i64> {
    queue
        .conn
        .prepare_cached("SELECT count(*) FROM messages WHERE status = 'pending' AND seq > ?1")?
        .query_row([h.seq], |r| r.get(0))
}

pub fn run(o: &Options<'_>) -> Result<Done> {
    assert!(
        o.attempts_max >= 1,
        "the command line bounds --attempts-max from 1"
    );
    let queue = store::open(o.queue, &QUEUE, Access::Write)?;
    let receiver = store::open(o.receiver, &RECEIVER, Access::WriteCreate)?;
    let q_shown = o.queue.display().to_string();
    let r_shown = o.receiver.display().to_string();
    let on_queue = |e| store::explain(e, "queue", &q_shown);
    let on_receiver = |e| store::explain(e, "receiver", &r_shown);
    let mut done = Done::default();
    // The head this run is on, and the attempts this run made at it.
    let mut current: Option<i64> = None;
    let mut attempts_here: u32 = 0;
    let mut since = Instant::now();
    for _ in 0..STEPS_MAX {
        let Some(h) = head(&queue).map_err(on_queue)? else {
            break;
        };
        if current != Some(h.seq) {
            current = Some(h.seq);
            attempts_here = 0;
            since = Instant::now();
        }
        if o.variant == Variant::RetryThenSkip && h.failures >= i64::from(o.attempts_max) {
            park(&queue, &h).map_err(on_queue)?;
            done.parked += 1;
            continue;
        }
        if o.variant == Variant::RetryForever && attempts_here >= o.attempts_max {
            let behind = waiting_behind(&queue, &h).map_err(on_queue)?;
            out::line(&format!(
                "STALLED message {} at the head: {} in this run over {} ms (bound --attempts-max {}), {} recorded, {} waiting behind it",
                h.message,
                out::plural(attempts_here, "failed attempt", "failed attempts"),
                since.elapsed().as_millis(),
                o.attempts_max,
                h.failures,
                out::plural(behind, "message", "messages"),
            ));
            done.stalled = Some(h.message.clone());
            break;
        }
        match apply::credit(
            &receiver,
            &h.message,
            h.amount,
            points::CONSUME_AFTER_APPLY_COMMIT,
        )
        .map_err(on_receiver)?
        {
            Applied::Credited => {
                done.applied += 1;
                ack(&queue, &h).map_err(on_queue)?;
            }
            Applied::Already => {
                done.duplicates += 1;
                ack(&queue, &h).map_err(on_queue)?;
            }
            Applied::Refused(reason) => {
                record_failure(&queue, &h, &reason).map_err(on_queue)?;
                done.failed_attempts += 1;
                attempts_here += 1;
                // Bounded pause before the next attempt (the head is tried again at once
                // after it, or parked).
                std::thread::sleep(Duration::from_millis(o.backoff_ms));
            }
        }
    }
    out::line(&format!(
        "CONSUMED applied={} duplicates={} parked={} failed_attempts={}",
        done.applied, done.duplicates, done.parked, done.failed_attempts
    ));
    Ok(done)
}
