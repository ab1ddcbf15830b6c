//! The plain-insert ceiling of lab 14's bench: the rows each stage writes (contracts and
//! Outbox rows; deliveries; Inbox rows and credits), written by plain batched inserts in
//! this process into fresh files with the same schema and pragmas (WAL, synchronous=FULL),
//! no trace, one transaction per batch; one stage at a time, so the bench can measure each
//! right beside the stage it bounds. What the roles do beyond that is the design's cost.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use rusqlite::params;

use super::super::model::{now_ms, Payload};
use super::super::schema::{QUEUE, RECEIVER, SENDER};
use crate::engine::load::profile::Shape;
use crate::store::{self, Access};

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1000.0
}

/// Wall ms of stage `stage` (0 outbox writes, 1 publish, 2 consume) for `shape.messages`
/// rows, into a fresh file in `dir`.
pub fn ceiling(dir: &Path, shape: &Shape, stage: usize) -> Result<f64> {
    let (messages, batch) = (shape.messages, shape.batch as usize);
    assert!(batch >= 1);
    let amounts = crate::rng::amounts(shape.seed, messages);
    let rows: Vec<Payload> = (0..messages)
        .map(|i| {
            Payload::new(
                &format!("M{:06}", i + 1),
                &format!("C{:06}", i + 1),
                amounts[i],
            )
        })
        .collect();
    let e = |e: rusqlite::Error| anyhow::Error::new(e).context("ceiling inserts");
    match stage {
        0 => outbox(dir, &rows, batch, e),
        1 => publish(dir, &rows, batch, e),
        2 => consume(dir, &rows, batch, e),
        _ => panic!("lab 14 has three bench stages, not {}", stage + 1),
    }
}

type OnError = fn(rusqlite::Error) -> anyhow::Error;

fn outbox(dir: &Path, rows: &[Payload], batch: usize, e: OnError) -> Result<f64> {
    let sender = store::open_traced(&dir.join("s.db"), &SENDER, Access::WriteCreate, false)?;
    let started = Instant::now();
    for chunk in rows.chunks(batch) {
        sender.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        for p in chunk {
            sender
                .conn
                .prepare_cached("INSERT INTO contracts(contract_id, amount) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![p.contract, p.amount]))
                .map_err(e)?;
            sender
                .conn
                .prepare_cached("INSERT INTO outbox(message_id, contract_id, amount, status) VALUES (?1, ?2, ?3, 'pending')")
                .and_then(|mut s| s.execute(params![p.message, p.contract, p.amount]))
                .map_err(e)?;
        }
        sender.conn.execute_batch("COMMIT").map_err(e)?;
    }
    Ok(ms(started.elapsed()))
}

fn publish(dir: &Path, rows: &[Payload], batch: usize, e: OnError) -> Result<f64> {
    let queue = store::open_traced(&dir.join("q.db"), &QUEUE, Access::WriteCreate, false)?;
    let started = Instant::now();
    for chunk in rows.chunks(batch) {
        queue.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        let now = now_ms();
        for p in chunk {
            queue
                .conn
                .prepare_cached("INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES (?1, ?2, 'pending', ?3)")
                .and_then(|mut s| s.execute(params![p.message, p.canonical(), now]))
                .map_err(e)?;
        }
        queue.conn.execute_batch("COMMIT").map_err(e)?;
    }
    Ok(ms(started.elapsed()))
}

fn consume(dir: &Path, rows: &[Payload], batch: usize, e: OnError) -> Result<f64> {
    let receiver = store::open_traced(&dir.join("r.db"), &RECEIVER, Access::WriteCreate, false)?;
    let started = Instant::now();
    for (n, chunk) in rows.chunks(batch).enumerate() {
        receiver.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        let now = now_ms();
        for (i, p) in chunk.iter().enumerate() {
            receiver
                .conn
                .prepare_cached("INSERT INTO inbox(message_id, digest, contract_id, amount, delivery_id, applied_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .and_then(|mut s| s.execute(params![p.message, p.digest(), p.contract, p.amount, (n * batch + i + 1) as i64, now]))
                .map_err(e)?;
            receiver
                .conn
                .prepare_cached(
                    "INSERT INTO ledger(contract_id, balance, credits) VALUES (?1, ?2, 1)",
                )
                .and_then(|mut s| s.execute(params![p.contract, p.amount]))
                .map_err(e)?;
        }
        receiver.conn.execute_batch("COMMIT").map_err(e)?;
    }
    Ok(ms(started.elapsed()))
}
