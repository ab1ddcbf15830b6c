//! The receiver's SQLite side: a fixed pool of workers, each with its own connection, leased
//! one request at a time. The pool's size is `--workers`: the bound on requests that touch
//! the database at once.

use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, OptionalExtension};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Answer, Mode};
use crate::common::now_ms;
use crate::crash;
use crate::fail;
use crate::labs::http_dispatch::model::{body_sha256, key_problem, shown_key};
use crate::labs::http_dispatch::points;
use crate::out;
use crate::store::{self, Db};

pub(super) struct Worker {
    pub db: Db,
    pub shown: String,
    pub mode: Mode,
    pub key_ttl_ms: Option<i64>,
    pub delay_ms: u64,
}

/// Idle workers and one permit per worker: a permit holder always finds an idle worker.
pub(super) struct Pool {
    idle: Mutex<Vec<Worker>>,
    free: Arc<Semaphore>,
    size: usize,
}

/// One worker, out of the pool until dropped (also when the request panics).
pub(super) struct Lease {
    pool: Arc<Pool>,
    worker: Option<Worker>,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    pub fn new(workers: Vec<Worker>) -> Arc<Pool> {
        assert!(!workers.is_empty());
        let size = workers.len();
        Arc::new(Pool {
            idle: Mutex::new(workers),
            free: Arc::new(Semaphore::new(size)),
            size,
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free worker, waiting at most `wait`; None when none came free in time.
    pub async fn lease(self: &Arc<Pool>, wait: Duration) -> Option<Lease> {
        let permit = tokio::time::timeout(wait, Arc::clone(&self.free).acquire_owned())
            .await
            .ok()?
            .expect("the pool's semaphore is never closed");
        let worker = self.idle().pop();
        assert!(worker.is_some(), "a permit guarantees an idle worker");
        Some(Lease {
            pool: Arc::clone(self),
            worker,
            _permit: permit,
        })
    }

    /// Wait at most `wait` for every worker to be idle, then close their connections (the
    /// last close checkpoints the WAL). Workers still busy then are left to the exit.
    pub async fn close(&self, wait: Duration) {
        let all = u32::try_from(self.size).expect("at most WORKERS_MAX workers");
        let _all = tokio::time::timeout(wait, self.free.acquire_many(all)).await;
        let workers: Vec<Worker> = self.idle().drain(..).collect();
        drop(workers);
    }
}

impl Deref for Lease {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker
            .as_ref()
            .expect("a lease holds its worker until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Back in the pool before the permit (a field, dropped after this) is released.
        if let Some(worker) = self.worker.take() {
            self.pool.idle().push(worker);
        }
    }
}

impl Worker {
    /// `POST /effect` with a checked key and a whole UTF-8 body: wait `--delay-ms`, apply.
    pub fn post(&self, key: Option<&str>, body: &str) -> Answer {
        debug_assert!(key.is_none_or(|k| key_problem(k).is_none()));
        if self.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.delay_ms));
        }
        match self.apply(key, body) {
            Ok(answer) => answer,
            Err(e) => {
                let e = store::explain(e, "receiver", &self.shown);
                Answer::problem(503, "storage unavailable", fail::one_line(&e))
            }
        }
    }

    /// Apply one request in one transaction; an error rolls it back, so this worker's
    /// long-lived connection never keeps a transaction open into its next request.
    fn apply(&self, key: Option<&str>, body: &str) -> rusqlite::Result<Answer> {
        let result = self.apply_in_tx(key, body);
        if result.is_err() && !self.db.conn.is_autocommit() {
            let _ = self.db.conn.execute_batch("ROLLBACK");
        }
        result
    }

    fn apply_in_tx(&self, key: Option<&str>, body: &str) -> rusqlite::Result<Answer> {
        let conn = &self.db.conn;
        let now = now_ms();
        let digest = body_sha256(body);
        conn.execute_batch("BEGIN IMMEDIATE")?;
        if let (Mode::Keyed, Some(key)) = (self.mode, key) {
            if let Some(ttl) = self.key_ttl_ms {
                let expired = conn
                    .prepare_cached("DELETE FROM idempotency WHERE key = ?1 AND stored_ms < ?2")?
                    .execute(params![key, now.saturating_sub(ttl)])?;
                if expired > 0 {
                    out::line(&format!(
                        "EXPIRED key {}: older than the {ttl} ms retention, forgotten",
                        shown_key(key)
                    ));
                }
            }
            let stored: Option<(String, i64, String)> = conn
                .prepare_cached(
                    "SELECT body_sha256, status, response FROM idempotency WHERE key = ?1",
                )?
                .query_row([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            if let Some((stored_digest, status, response)) = stored {
                conn.execute_batch("ROLLBACK")?;
                if stored_digest == digest {
                    crate::events::emit(&crate::events::Event::Duplicate {
                        item: shown_key(key),
                    });
                    return Ok(Answer {
                        status: u16::try_from(status).unwrap_or(500),
                        body: response,
                        problem: false,
                        replayed: true,
                        note: "replayed, nothing applied".to_string(),
                    });
                }
                crate::events::emit(&crate::events::Event::Rejected {
                    item: shown_key(key),
                    reason: "payload conflict".to_string(),
                });
                return Ok(Answer::problem(
                    409,
                    "idempotency key reused",
                    format!(
                        "payload conflict: key {} was used with another body (sha256 {stored_digest}), nothing applied",
                        shown_key(key)
                    ),
                ));
            }
        }
        conn.prepare_cached("INSERT INTO effects(key, body, applied_ms) VALUES (?1, ?2, ?3)")?
            .execute(params![key, body, now])?;
        let effect = conn.last_insert_rowid();
        let response = json!({"effect": effect, "key": key, "status": "applied"}).to_string();
        if let (Mode::Keyed, Some(key)) = (self.mode, key) {
            conn.prepare_cached(
                "INSERT INTO idempotency(key, body_sha256, status, response, stored_ms)
                 VALUES (?1, ?2, 200, ?3, ?4)",
            )?
            .execute(params![key, digest, response, now])?;
        }
        crash::point(points::RECEIVER_BEFORE_EFFECT_COMMIT);
        conn.execute_batch("COMMIT")?;
        out::committed(
            "receiver",
            &format!("effect {effect} key {}", key.map_or("-".into(), shown_key)),
        );
        crate::events::emit(&crate::events::Event::Applied {
            item: key.map_or("-".into(), shown_key),
        });
        crash::point(points::RECEIVER_AFTER_EFFECT_COMMIT);
        Ok(Answer::json(response, format!("applied effect {effect}")))
    }

    /// `GET /effect/<key>` with a checked key: did an effect with this key run, and how often.
    pub fn lookup(&self, key: &str) -> Answer {
        debug_assert!(key_problem(key).is_none());
        let count: rusqlite::Result<i64> = self
            .db
            .conn
            .prepare_cached("SELECT count(*) FROM effects WHERE key = ?1")
            .and_then(|mut s| s.query_row([key], |r| r.get(0)));
        match count {
            Ok(n) => Answer::json(
                json!({"key": key, "effects": n, "ran": n > 0}).to_string(),
                format!("{n} effects"),
            ),
            Err(e) => {
                let e = store::explain(e, "receiver", &self.shown);
                Answer::problem(503, "storage unavailable", fail::one_line(&e))
            }
        }
    }
}
