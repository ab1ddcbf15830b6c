//! Where the AMQP client's async work runs. The roles are synchronous and lapin is async, so a
//! role blocks on one bounded operation at a time, on one of two runtimes:
//!
//! - `Here`: a current-thread runtime driven only while the role blocks on an operation (the
//!   default; lapin's socket I/O has a thread of its own anyway);
//! - `Thread`: the same runtime driven by a thread of its own for the whole life of the
//!   connection, so its timers and spawned tasks (lapin's heartbeat) run whatever the role is
//!   doing (an HTTP call, database work), as a real service's runtime does. Only stopping the
//!   process (SIGSTOP) stops them: then the broker closes the connection after about two
//!   missed heartbeats.

use std::future::Future;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::fail;

pub enum Runtime {
    Here(tokio::runtime::Runtime),
    Thread(Driven),
}

/// A runtime driven by its own thread until dropped.
pub struct Driven {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

fn build() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail::failed(format!("starting the AMQP client: {e}")))
}

impl Runtime {
    pub fn here() -> Result<Runtime> {
        Ok(Runtime::Here(build()?))
    }

    /// A runtime on a thread of its own, ready within `limit_ms`.
    pub fn on_thread(limit_ms: u64) -> Result<Runtime> {
        let (stop, stopped) = oneshot::channel::<()>();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("amqp-runtime".to_string())
            .spawn(move || match build() {
                Ok(runtime) => {
                    let _ = tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(async {
                        let _ = stopped.await;
                    });
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            })
            .map_err(|e| fail::failed(format!("starting the AMQP client's thread: {e}")))?;
        let handle = rx
            .recv_timeout(Duration::from_millis(limit_ms))
            .map_err(|e| fail::failed(format!("starting the AMQP client: {e}")))??;
        Ok(Runtime::Thread(Driven {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        }))
    }

    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self {
            Runtime::Here(runtime) => runtime.block_on(future),
            Runtime::Thread(driven) => driven.handle.block_on(future),
        }
    }

    /// One operation, answered within `limit_ms` or refused as unavailable (exit 69).
    pub fn bound<T, E: std::fmt::Display>(
        &self,
        what: &str,
        limit_ms: u64,
        future: impl Future<Output = Result<T, E>>,
    ) -> Result<T> {
        let limit = Duration::from_millis(limit_ms);
        match self.block_on(async { tokio::time::timeout(limit, future).await }) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(fail::unavailable(format!("RabbitMQ {what}: {e}"))),
            Err(_) => Err(fail::unavailable(format!(
                "RabbitMQ {what}: no answer within {limit_ms} ms"
            ))),
        }
    }

    /// Sleep `ms` inside the runtime (its timer is its driver's).
    pub fn nap(&self, ms: u64) {
        self.block_on(async { tokio::time::sleep(Duration::from_millis(ms)).await });
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
