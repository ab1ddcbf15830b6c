//! The dispatcher: under `dispatcher.lock`, send every intent that has no receipt, in order,
//! with its stable key and its unchanged body; on 200 commit the receipt, then append the
//! history in its own commit.
//!
//! Each attempt is committed before the request leaves. A recovery that finds an attempt
//! without a receipt does not know whether the receiver ran it: by default it sends again
//! (safe only against a keyed receiver), with `--unknown hold` it marks the intent `unknown`
//! and leaves it for reconciliation (`GET /effect/<key>`), never resending blindly.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use crate::common::now_ms;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::client::{self, NoReply, Reply};
use crate::labs::http_dispatch::model::shown_key;
use crate::labs::http_dispatch::points;
use crate::labs::http_dispatch::schema::{HISTORY, INTENTS, RECEIPTS};
use crate::out;
use crate::store::{self, Access, Db};

/// Largest number of intents one run handles.
pub const INTENTS_MAX: i64 = 100_000;
pub const LOCK_WAIT_MS_MAX: u64 = 600_000;
const LOCK_POLL_MS: u64 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unknown {
    /// Send again (the counterexample against an unkeyed receiver)
    Resend,
    /// Mark the intent `unknown` and leave it for reconciliation
    Hold,
}

pub struct Options<'a> {
    pub intents: &'a Path,
    pub receipts: &'a Path,
    pub history: &'a Path,
    pub lock: PathBuf,
    pub lock_wait_ms: u64,
    pub port: u16,
    pub timeout_ms: u64,
    pub unknown: Unknown,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub delivered: usize,
    pub replayed: usize,
    pub held: usize,
    pub repaired: usize,
}

/// Take the lock, waiting at most `wait_ms`; a lock still held then is exit 75.
fn lock(path: &Path, wait_ms: u64) -> Result<File> {
    assert!(wait_ms <= LOCK_WAIT_MS_MAX);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| {
            fail::usage(format!(
                "lock file {} cannot be opened: {e}",
                path.display()
            ))
        })?;
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    let mut waited = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(anyhow::Error::new(e).context(format!("locking {}", path.display())))
            }
        }
        if Instant::now() >= deadline {
            let after = if waited {
                format!(" after waiting {wait_ms} ms")
            } else {
                String::new()
            };
            return Err(fail::locked(format!(
                "{} is held by another dispatcher{after}; try later (or --lock-wait-ms)",
                path.display()
            )));
        }
        if !waited {
            out::line(&format!("WAITING for {}", path.display()));
            out::flush();
            waited = true;
        }
        std::thread::sleep(Duration::from_millis(LOCK_POLL_MS));
    }
}

struct Intent {
    key: String,
    body: String,
    status: String,
}

pub fn run(options: &Options<'_>) -> Result<Outcome> {
    // The intents file first: a missing or foreign one is refused before anything is written.
    let intents = store::open(options.intents, &INTENTS, Access::Write)?;
    let _lock = lock(&options.lock, options.lock_wait_ms)?;
    out::line(&format!("LOCKED {}", options.lock.display()));
    out::flush();
    crate::events::emit(&crate::events::Event::LockHeld {
        lock: options.lock.display().to_string(),
    });
    let i_shown = options.intents.display().to_string();
    let on_intents = |e| store::explain(e, "intents", &i_shown);
    let agent = client::agent(options.timeout_ms);
    // Reachability first: an unreachable receiver costs nothing written.
    match client::get(&agent, options.port, "/health") {
        Ok(Reply {
            status: 200, body, ..
        }) => out::line(&format!("RECEIVER {body}")),
        Ok(reply) => out::line(&format!("RECEIVER /health answered {}", reply.status)),
        Err(NoReply::Connect(e)) | Err(NoReply::Lost(e)) => {
            return Err(fail::unavailable(format!(
                "receiver at 127.0.0.1:{} not reachable: {e}; nothing written",
                options.port
            )))
        }
    }
    let receipts = store::open(options.receipts, &RECEIPTS, Access::WriteCreate)?;
    let history = store::open(options.history, &HISTORY, Access::WriteCreate)?;
    let r_shown = options.receipts.display().to_string();
    let h_shown = options.history.display().to_string();
    let on_receipts = |e| store::explain(e, "receipts", &r_shown);
    let on_history = |e| store::explain(e, "history", &h_shown);

    let mut outcome = Outcome {
        repaired: repair_history(&receipts, &r_shown, &history, &h_shown)?,
        ..Outcome::default()
    };
    let all = pending(&intents).map_err(on_intents)?;
    for intent in all {
        let shown = shown_key(&intent.key);
        if has_receipt(&receipts, &intent.key).map_err(on_receipts)? {
            continue;
        }
        if intent.status == "unknown" {
            out::line(&format!(
                "HELD key {shown}: result unknown, left for reconciliation (GET /effect/{shown})"
            ));
            outcome.held += 1;
            continue;
        }
        let earlier = attempts(&intents, &intent.key).map_err(on_intents)?;
        if earlier > 0 {
            out::line(&format!(
                "UNKNOWN key {shown}: {earlier} earlier attempts without a receipt; the receiver may have run it"
            ));
            if options.unknown == Unknown::Hold {
                mark_unknown(&intents, &intent.key).map_err(on_intents)?;
                outcome.held += 1;
                continue;
            }
            out::line(&format!("RESEND key {shown} with the same body"));
        }
        record_attempt(&intents, &intent.key).map_err(on_intents)?;
        let reply = match client::post(&agent, options.port, Some(&intent.key), &intent.body) {
            Ok(reply) => reply,
            Err(NoReply::Connect(e)) => {
                return Err(fail::unavailable(format!(
                    "receiver at 127.0.0.1:{} not reachable for key {shown}: {e}; attempt recorded, no receipt",
                    options.port
                )))
            }
            Err(NoReply::Lost(e)) => {
                return Err(fail::unavailable(format!(
                    "no reply from 127.0.0.1:{} for key {shown}: {e}; the receiver may have run it; attempt recorded, no receipt",
                    options.port
                )))
            }
        };
        out::line(&format!(
            "RESPONSE key {shown} status {}{} {}",
            reply.status,
            if reply.replayed { " replayed" } else { "" },
            reply.body
        ));
        out::flush();
        crate::events::emit(&crate::events::Event::Response {
            item: shown.clone(),
            status: reply.status,
        });
        match reply.status {
            200 => {}
            409 => {
                return Err(fail::conflict(format!(
                    "payload conflict: the receiver holds key {shown} with another body (409); no receipt, no history"
                )))
            }
            503 => {
                return Err(fail::unavailable(format!(
                    "receiver answered 503 for key {shown}: {}",
                    reply.body
                )))
            }
            other => {
                return Err(fail::failed(format!(
                    "receiver answered {other} for key {shown}: {}",
                    reply.body
                )))
            }
        }
        crash::point(points::DISPATCHER_AFTER_RESPONSE);
        write_receipt(&receipts, &intent.key, &reply).map_err(on_receipts)?;
        append_history(&history, &intent.key, &reply).map_err(on_history)?;
        outcome.delivered += 1;
        if reply.replayed {
            outcome.replayed += 1;
        }
    }
    out::line(&format!(
        "DISPATCHED delivered={} replayed={} held={} repaired_history={}",
        outcome.delivered, outcome.replayed, outcome.held, outcome.repaired
    ));
    Ok(outcome)
}

fn pending(intents: &Db) -> rusqlite::Result<Vec<Intent>> {
    let mut stmt = intents
        .conn
        .prepare("SELECT key, body, status FROM intents ORDER BY seq LIMIT ?1")?;
    let rows = stmt
        .query_map([INTENTS_MAX], |r| {
            Ok(Intent {
                key: r.get(0)?,
                body: r.get(1)?,
                status: r.get(2)?,
            })
        })?
        .collect();
    rows
}

fn has_receipt(receipts: &Db, key: &str) -> rusqlite::Result<bool> {
    receipts
        .conn
        .prepare_cached("SELECT 1 FROM receipts WHERE key = ?1")?
        .query_row([key], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

fn attempts(intents: &Db, key: &str) -> rusqlite::Result<i64> {
    intents
        .conn
        .prepare_cached("SELECT count(*) FROM attempts WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
}

fn record_attempt(intents: &Db, key: &str) -> rusqlite::Result<()> {
    intents.conn.execute_batch("BEGIN IMMEDIATE")?;
    intents
        .conn
        .prepare_cached("INSERT INTO attempts(key, started_ms) VALUES (?1, ?2)")?
        .execute(params![key, now_ms()])?;
    let id = intents.conn.last_insert_rowid();
    crash::point(points::DISPATCHER_BEFORE_ATTEMPT_COMMIT);
    intents.conn.execute_batch("COMMIT")?;
    out::committed("intents", &format!("attempt {id} key {}", shown_key(key)));
    crash::point(points::DISPATCHER_AFTER_ATTEMPT_COMMIT);
    Ok(())
}

fn mark_unknown(intents: &Db, key: &str) -> rusqlite::Result<()> {
    intents.conn.execute_batch("BEGIN IMMEDIATE")?;
    intents
        .conn
        .prepare_cached("UPDATE intents SET status = 'unknown' WHERE key = ?1")?
        .execute([key])?;
    crash::point(points::DISPATCHER_BEFORE_UNKNOWN_COMMIT);
    intents.conn.execute_batch("COMMIT")?;
    out::committed(
        "intents",
        &format!(
            "key {} marked unknown: left for reconciliation, not resent",
            shown_key(key)
        ),
    );
    crash::point(points::DISPATCHER_AFTER_UNKNOWN_COMMIT);
    Ok(())
}

fn write_receipt(receipts: &Db, key: &str, reply: &Reply) -> rusqlite::Result<()> {
    receipts.conn.execute_batch("BEGIN IMMEDIATE")?;
    receipts
        .conn
        .prepare_cached(
            "INSERT INTO receipts(key, status, response, replayed, received_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![key, reply.status, reply.body, reply.replayed, now_ms()])?;
    crash::point(points::DISPATCHER_BEFORE_RECEIPT_COMMIT);
    receipts.conn.execute_batch("COMMIT")?;
    out::committed("receipts", &format!("receipt key {}", shown_key(key)));
    crash::point(points::DISPATCHER_AFTER_RECEIPT_COMMIT);
    Ok(())
}

fn append_history(history: &Db, key: &str, reply: &Reply) -> rusqlite::Result<()> {
    let event = if reply.replayed {
        "delivered (replayed)"
    } else {
        "delivered"
    };
    history.conn.execute_batch("BEGIN IMMEDIATE")?;
    history
        .conn
        .prepare_cached(
            "INSERT INTO history(key, event, at_ms) VALUES (?1, ?2, ?3) ON CONFLICT(key) DO NOTHING",
        )?
        .execute(params![key, event, now_ms()])?;
    crash::point(points::DISPATCHER_BEFORE_HISTORY_COMMIT);
    history.conn.execute_batch("COMMIT")?;
    out::committed("history", &format!("history key {}", shown_key(key)));
    crash::point(points::DISPATCHER_AFTER_HISTORY_COMMIT);
    Ok(())
}

/// Receipts whose history row is missing (a crash between the two commits): append it.
/// It reads one file and writes the other, so each error names the file it came from.
fn repair_history(receipts: &Db, r_shown: &str, history: &Db, h_shown: &str) -> Result<usize> {
    let rows = all_receipts(receipts).map_err(|e| store::explain(e, "receipts", r_shown))?;
    let on_history = |e| store::explain(e, "history", h_shown);
    let mut repaired = 0;
    for (key, reply) in rows {
        let present = history
            .conn
            .prepare_cached("SELECT 1 FROM history WHERE key = ?1")
            .and_then(|mut s| s.query_row([&key], |_| Ok(())).optional())
            .map_err(on_history)?
            .is_some();
        if !present {
            out::line(&format!(
                "REPAIR key {}: receipt without history",
                shown_key(&key)
            ));
            append_history(history, &key, &reply).map_err(on_history)?;
            repaired += 1;
        }
    }
    Ok(repaired)
}

fn all_receipts(receipts: &Db) -> rusqlite::Result<Vec<(String, Reply)>> {
    let mut stmt = receipts
        .conn
        .prepare("SELECT key, status, response, replayed FROM receipts ORDER BY key LIMIT ?1")?;
    let rows = stmt
        .query_map([INTENTS_MAX], |r| {
            Ok((
                r.get(0)?,
                Reply {
                    status: r.get(1)?,
                    body: r.get(2)?,
                    replayed: r.get(3)?,
                },
            ))
        })?
        .collect();
    rows
}

/// The lock file beside the intents file.
pub fn default_lock(intents: &Path) -> PathBuf {
    intents
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(
            || PathBuf::from("dispatcher.lock"),
            |p| p.join("dispatcher.lock"),
        )
}

#[cfg(test)]
mod tests;
