//! The receiver: an HTTP/1.1 server on 127.0.0.1 that applies `POST /effect`.
//!
//! Keyed mode keeps an idempotency ledger: the key, the SHA-256 of the body, the status and
//! the response are committed in the same transaction as the effect, so a retry with the same
//! key and body gets the stored response back (`Idempotency-Replayed: true`) and applies
//! nothing, and the same key with another body is a 409 conflict. Unkeyed mode applies every
//! request as a new effect.
//!
//! The HTTP side is hyper on a single-threaded tokio runtime (`serve`), with explicit limits
//! on connections, header bytes and count, header and body read time, and body size (the
//! constants below). A fixed pool of `--workers` SQLite connections (`worker`) bounds the
//! requests that touch the database at once; each runs on a blocking thread, and writes
//! serialize on `BEGIN IMMEDIATE`. Reading and judging a request is `request`.

mod request;
mod serve;
mod worker;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::fail;
use crate::labs::http_dispatch::schema::RECEIVER;
use crate::out;
use crate::store::{self, Access};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
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

/// Connections served at once. Further ones wait in the kernel's listen backlog (itself
/// bounded) until one ends; each holds at most one read buffer of `HEADER_BYTES_MAX`.
pub const CONNECTIONS_MAX: usize = 64;
/// Largest request head (request line and headers) and the connection's read buffer: a
/// longer head is answered 431 by hyper and the connection closed. hyper's floor is 8192.
pub const HEADER_BYTES_MAX: usize = 16 * 1024;
/// Most header lines in one request (more: 431). The lab's clients send fewer than ten.
pub const HEADERS_MAX: usize = 64;
/// A request head (also the next one on a kept-alive connection) must arrive within this;
/// otherwise the connection is closed. On loopback a head takes microseconds.
pub const HEADER_READ_MS: u64 = 5_000;
/// A body must arrive whole within this after its head (else 408, nothing applied).
pub const BODY_READ_MS: u64 = 5_000;
/// How long a request waits for a free worker (beyond `--delay-ms`) before a 503.
pub const WORKER_WAIT_MS: u64 = 30_000;
/// After a stop, in-flight requests get this long (beyond `--delay-ms`) to finish.
pub const STOP_GRACE_MS: u64 = 10_000;

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
        assert!((400..600).contains(&status));
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

    fn json(body: String, note: String) -> Answer {
        Answer {
            status: 200,
            body,
            problem: false,
            replayed: false,
            note,
        }
    }
}

pub fn run(options: &Options) -> Result<()> {
    assert!((1..=WORKERS_MAX).contains(&options.workers));
    assert!(options.delay_ms <= DELAY_MS_MAX && options.lifetime_ms <= LIFETIME_MS_MAX);
    // Create (or check) the file before accepting anything: a foreign file fails here.
    drop(store::open(&options.db, &RECEIVER, Access::WriteCreate)?);
    let listener = std::net::TcpListener::bind(("127.0.0.1", options.port)).map_err(|e| {
        fail::unavailable(format!(
            "receiver cannot listen on 127.0.0.1:{}: {e}",
            options.port
        ))
    })?;
    let port = listener
        .local_addr()
        .context("the listening socket has no address")?
        .port();
    listener
        .set_nonblocking(true)
        .context("making the listening socket non-blocking")?;
    if let Some(file) = &options.port_file {
        write_port_file(file, port)?;
    }
    // One thread does all the HTTP work; the SQLite work runs on at most `workers` blocking
    // threads (the pool's permits), so the two never starve each other.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(WORKERS_MAX)
        .build()
        .context("starting the receiver's runtime")?;
    // SIGTERM and SIGINT are caught before READY, so a stop sent right after it is never lost.
    let signals = {
        let _inside = runtime.enter();
        serve::Signals::install()?
    };
    out::line(&format!(
        "READY {port} mode={} workers={} key_ttl_ms={}",
        options.mode.name(),
        options.workers,
        options
            .key_ttl_ms
            .map_or("forever".to_string(), |t| t.to_string())
    ));
    out::flush();
    crate::events::emit(&crate::events::Event::Ready { port });
    let shown = options.db.display().to_string();
    let mut workers = Vec::with_capacity(options.workers);
    for _ in 0..options.workers {
        workers.push(worker::Worker {
            db: store::open(&options.db, &RECEIVER, Access::Write)?,
            shown: shown.clone(),
            mode: options.mode,
            key_ttl_ms: options.key_ttl_ms,
            delay_ms: options.delay_ms,
        });
    }
    let deadline = Instant::now() + Duration::from_millis(options.lifetime_ms);
    let why = runtime.block_on(serve::serve(
        listener,
        worker::Pool::new(workers),
        options.mode,
        options.delay_ms,
        deadline,
        signals,
    ))?;
    // A request still running past the grace (a hung crash point) must not hold the exit.
    runtime.shutdown_background();
    out::line(&format!("STOPPED receiver ({})", why.name()));
    out::flush();
    crate::events::emit(&crate::events::Event::Stopped {
        why: why.name().to_string(),
    });
    Ok(())
}

fn write_port_file(file: &Path, port: u16) -> Result<()> {
    let tmp = file.with_extension("port-tmp");
    std::fs::write(&tmp, format!("{port}\n"))
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}
