//! The receiver: an HTTP server on 127.0.0.1 that applies `POST /effect`.
//!
//! Keyed mode keeps an idempotency ledger: the key, the SHA-256 of the body, the status and
//! the response are committed in the same transaction as the effect, so a retry with the same
//! key and body gets the stored response back (`Idempotency-Replayed: true`) and applies
//! nothing, and the same key with another body is a 409 conflict. Unkeyed mode applies every
//! request as a new effect. A fixed pool of worker threads bounds the concurrent requests;
//! each worker has its own SQLite connection, and writes serialize on `BEGIN IMMEDIATE`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};
use serde_json::json;
use tiny_http::{Header, Method, Request, Response, Server};

use crate::crash;
use crate::dispatch::model::{body_sha256, key_problem, BODY_BYTES_MAX};
use crate::dispatch::schema::RECEIVER;
use crate::fail;
use crate::out;
use crate::outbox::model::now_ms;
use crate::store::{self, Access, Db};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Durable idempotency ledger: one effect per key
    Keyed,
    /// No ledger: every request is a new effect
    Unkeyed,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Keyed => "keyed",
            Mode::Unkeyed => "unkeyed",
        }
    }
}

pub const WORKERS_MAX: usize = 64;
pub const DELAY_MS_MAX: u64 = 60_000;
pub const LIFETIME_MS_MAX: u64 = 86_400_000;
/// How often an idle worker looks at the stop flag.
const POLL_MS: u64 = 50;

pub struct Options {
    pub db: PathBuf,
    pub mode: Mode,
    pub port: u16,
    pub port_file: Option<PathBuf>,
    pub workers: usize,
    pub key_ttl_ms: Option<i64>,
    pub delay_ms: u64,
    pub lifetime_ms: u64,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// One answer: status, JSON body, whether it is a replay.
struct Answer {
    status: u16,
    body: String,
    problem: bool,
    replayed: bool,
    note: String,
}

impl Answer {
    fn problem(status: u16, title: &str, detail: String) -> Answer {
        let body =
            json!({"type": "about:blank", "title": title, "status": status, "detail": detail})
                .to_string();
        Answer {
            status,
            body,
            problem: true,
            replayed: false,
            note: format!("{title}: {detail}"),
        }
    }
}

pub fn run(options: &Options) -> Result<()> {
    assert!((1..=WORKERS_MAX).contains(&options.workers));
    assert!(options.delay_ms <= DELAY_MS_MAX && options.lifetime_ms <= LIFETIME_MS_MAX);
    // Create (or check) the file before accepting anything: a foreign file fails here.
    drop(store::open(&options.db, &RECEIVER, Access::WriteCreate)?);
    let server = Server::http(("127.0.0.1", options.port)).map_err(|e| {
        fail::unavailable(format!(
            "receiver cannot listen on 127.0.0.1:{}: {e}",
            options.port
        ))
    })?;
    let port = server
        .server_addr()
        .to_ip()
        .map(|a| a.port())
        .context("the server has no IP address")?;
    if let Some(file) = &options.port_file {
        write_port_file(file, port)?;
    }
    // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    out::line(&format!(
        "READY {port} mode={} workers={} key_ttl_ms={}",
        options.mode.name(),
        options.workers,
        options
            .key_ttl_ms
            .map_or("forever".to_string(), |t| t.to_string())
    ));
    out::flush();
    let server = Arc::new(server);
    let deadline = Instant::now() + Duration::from_millis(options.lifetime_ms);
    let mut workers = Vec::with_capacity(options.workers);
    for _ in 0..options.workers {
        let server = Arc::clone(&server);
        let db = store::open(&options.db, &RECEIVER, Access::Write)?;
        let worker = Worker {
            db,
            shown: options.db.display().to_string(),
            mode: options.mode,
            key_ttl_ms: options.key_ttl_ms,
            delay_ms: options.delay_ms,
        };
        workers.push(std::thread::spawn(move || worker.serve(&server, deadline)));
    }
    for w in workers {
        let _ = w.join();
    }
    let why = if STOP.load(Ordering::SeqCst) {
        "signal"
    } else {
        "lifetime over"
    };
    out::line(&format!("STOPPED receiver ({why})"));
    Ok(())
}

fn write_port_file(file: &Path, port: u16) -> Result<()> {
    let tmp = file.with_extension("port-tmp");
    std::fs::write(&tmp, format!("{port}\n"))
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

struct Worker {
    db: Db,
    shown: String,
    mode: Mode,
    key_ttl_ms: Option<i64>,
    delay_ms: u64,
}

impl Worker {
    fn serve(&self, server: &Server, deadline: Instant) {
        while !STOP.load(Ordering::SeqCst) && Instant::now() < deadline {
            match server.recv_timeout(Duration::from_millis(POLL_MS)) {
                Ok(Some(request)) => self.handle(request),
                Ok(None) => {}
                Err(e) => {
                    out::line(&format!("ACCEPT error: {e}"));
                    out::flush();
                }
            }
        }
    }

    fn handle(&self, mut request: Request) {
        let method = request.method().clone();
        let url = request.url().to_string();
        let key = header(&request, "Idempotency-Key");
        let answer = match (&method, url.as_str()) {
            (Method::Post, "/effect") => self.post(&mut request, key.as_deref()),
            (Method::Get, "/health") => Answer {
                status: 200,
                body: json!({"mode": self.mode.name()}).to_string(),
                problem: false,
                replayed: false,
                note: "health".to_string(),
            },
            (Method::Get, path) if path.starts_with("/effect/") => {
                self.lookup(&path["/effect/".len()..])
            }
            (_, "/effect") | (_, "/health") => Answer::problem(
                405,
                "method not allowed",
                format!("{method} {url} is not served"),
            ),
            _ => Answer::problem(404, "not found", format!("{method} {url} is not served")),
        };
        let Answer {
            status,
            body,
            problem,
            replayed,
            note,
        } = answer;
        out::line(&format!(
            "REQUEST {method} {url} key={} -> {status} {note}",
            key.as_deref().unwrap_or("-")
        ));
        out::flush();
        let content_type = if problem {
            "application/problem+json"
        } else {
            "application/json"
        };
        let mut response = Response::from_string(body)
            .with_status_code(status)
            .with_header(Header::from_bytes("Content-Type", content_type).expect("a valid header"));
        if replayed {
            response.add_header(
                Header::from_bytes("Idempotency-Replayed", "true").expect("a valid header"),
            );
        }
        // A client that went away is its own problem; the effect, if any, is committed.
        let _ = request.respond(response);
    }

    fn post(&self, request: &mut Request, key: Option<&str>) -> Answer {
        if let Some(key) = key {
            if let Some(problem) = key_problem(key) {
                return Answer::problem(400, "invalid Idempotency-Key", problem);
            }
        }
        if self.mode == Mode::Keyed && key.is_none() {
            return Answer::problem(
                400,
                "missing Idempotency-Key",
                "this receiver is keyed: POST /effect needs an Idempotency-Key header".to_string(),
            );
        }
        if request.body_length().is_some_and(|n| n > BODY_BYTES_MAX) {
            return Answer::problem(
                413,
                "content too large",
                format!("the body may have at most {BODY_BYTES_MAX} bytes"),
            );
        }
        let mut bytes = Vec::with_capacity(BODY_BYTES_MAX.min(1024));
        let read = request
            .as_reader()
            .take(BODY_BYTES_MAX as u64 + 1)
            .read_to_end(&mut bytes);
        if let Err(e) = read {
            return Answer::problem(400, "unreadable body", e.to_string());
        }
        if bytes.len() > BODY_BYTES_MAX {
            return Answer::problem(
                413,
                "content too large",
                format!("the body may have at most {BODY_BYTES_MAX} bytes"),
            );
        }
        let Ok(body) = String::from_utf8(bytes) else {
            return Answer::problem(400, "body not UTF-8", "the body must be UTF-8 text".into());
        };
        if self.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.delay_ms));
        }
        match self.apply(key, &body) {
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
                        "EXPIRED key {key}: older than the {ttl} ms retention, forgotten"
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
                    return Ok(Answer {
                        status: status as u16,
                        body: response,
                        problem: false,
                        replayed: true,
                        note: "replayed, nothing applied".to_string(),
                    });
                }
                return Ok(Answer::problem(
                    409,
                    "idempotency key reused",
                    format!(
                        "payload conflict: key {key} was used with another body (sha256 {stored_digest}), nothing applied"
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
        crash::point("receiver.before-effect-commit");
        conn.execute_batch("COMMIT")?;
        out::committed(
            "receiver",
            &format!("effect {effect} key {}", key.unwrap_or("-")),
        );
        crash::point("receiver.after-effect-commit");
        Ok(Answer {
            status: 200,
            body: response,
            problem: false,
            replayed: false,
            note: format!("applied effect {effect}"),
        })
    }

    /// `GET /effect/<key>`: did an effect with this key run, and how often.
    fn lookup(&self, key: &str) -> Answer {
        if let Some(problem) = key_problem(key) {
            return Answer::problem(400, "invalid key", problem);
        }
        let count: rusqlite::Result<i64> = self
            .db
            .conn
            .prepare_cached("SELECT count(*) FROM effects WHERE key = ?1")
            .and_then(|mut s| s.query_row([key], |r| r.get(0)));
        match count {
            Ok(n) => Answer {
                status: 200,
                body: json!({"key": key, "effects": n, "ran": n > 0}).to_string(),
                problem: false,
                replayed: false,
                note: format!("{n} effects"),
            },
            Err(e) => {
                let e = store::explain(e, "receiver", &self.shown);
                Answer::problem(503, "storage unavailable", fail::one_line(&e))
            }
        }
    }
}

fn header(request: &Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}
