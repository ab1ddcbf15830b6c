//! The receiver's HTTP side: accept on 127.0.0.1 under a cap on connections, serve each with
//! hyper under the header limits and timeouts, stop on SIGTERM, SIGINT or the lifetime.

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::request::{respond, Shared};
use super::worker::Pool;
use super::{Mode, CONNECTIONS_MAX, HEADERS_MAX, HEADER_BYTES_MAX, HEADER_READ_MS, STOP_GRACE_MS};
use crate::out;

/// After a failed accept (out of file descriptors, say), wait this long before the next.
const ACCEPT_BACKOFF_MS: u64 = 50;

/// Why the receiver stopped.
pub(super) enum Why {
    Signal,
    Lifetime,
}

impl Why {
    pub fn name(&self) -> &'static str {
        match self {
            Why::Signal => "signal",
            Why::Lifetime => "lifetime over",
        }
    }
}

/// SIGTERM and SIGINT, caught from the moment they are installed.
pub(super) struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Needs the runtime's context (`Runtime::enter`).
    pub fn install() -> Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("catching SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("catching SIGINT")?,
        })
    }

    async fn until_stop(mut self, deadline: Instant) -> Why {
        tokio::select! {
            _ = self.term.recv() => Why::Signal,
            _ = self.int.recv() => Why::Signal,
            _ = tokio::time::sleep_until(deadline.into()) => Why::Lifetime,
        }
    }
}

/// Serve until a signal or the deadline; then let in-flight requests finish (bounded) and
/// close the workers' connections.
pub(super) async fn serve(
    listener: std::net::TcpListener,
    pool: Arc<Pool>,
    mode: Mode,
    delay_ms: u64,
    deadline: Instant,
    signals: Signals,
) -> Result<Why> {
    let listener = TcpListener::from_std(listener).context("serving the listening socket")?;
    let shared = Arc::new(Shared {
        mode,
        delay_ms,
        pool: Arc::clone(&pool),
    });
    let connections = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    let (stopping, stop) = watch::channel(false);
    let mut until_stop = pin!(signals.until_stop(deadline));
    let why = loop {
        // A permit before the accept: at the cap, new connections wait in the backlog.
        let permit = tokio::select! {
            why = &mut until_stop => break why,
            permit = Arc::clone(&connections).acquire_owned() => {
                permit.expect("the connection semaphore is never closed")
            }
        };
        let stream = tokio::select! {
            why = &mut until_stop => break why,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    out::line(&format!("ACCEPT error: {e}"));
                    out::flush();
                    tokio::time::sleep(Duration::from_millis(ACCEPT_BACKOFF_MS)).await;
                    continue;
                }
            },
        };
        tokio::spawn(connection(
            stream,
            permit,
            Arc::clone(&shared),
            stop.clone(),
        ));
    };
    drop(listener);
    // Idle connections close now; a request in flight finishes and its connection closes.
    let _ = stopping.send(true);
    let grace = Duration::from_millis(STOP_GRACE_MS + delay_ms);
    let all = u32::try_from(CONNECTIONS_MAX).expect("a small cap");
    let _ended = tokio::time::timeout(grace, connections.acquire_many(all)).await;
    pool.close(grace).await;
    Ok(why)
}

/// One connection, under its permit, with hyper's HTTP/1.1 limits.
async fn connection(
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    // Replies are small and written whole: send them at once.
    let _ = stream.set_nodelay(true);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(HEADER_READ_MS))
        .max_buf_size(HEADER_BYTES_MAX)
        .max_header_size(HEADER_BYTES_MAX)
        .max_headers(HEADERS_MAX)
        .keep_alive(true);
    let service = service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(respond(&shared, request).await) }
    });
    let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), service));
    // A connection error (a malformed request hyper answered, a client gone, a timeout) ends
    // this connection only; there is nothing more to do for it.
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.wait_for(|stopping| *stopping) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}
