//! The consumer's connection to the broker: a short heartbeat, asked for in the connection's
//! URL, and the client's I/O and heartbeat tasks on a thread of the consumer's own. A stopped
//! consumer (SIGSTOP) sends no heartbeat, so the broker closes its connection after about two
//! missed intervals and requeues what it had not acked, flagged `redelivered`. Every wait is
//! bounded; every operation is traced as the stack's other roles trace it (`AMQP …`).
//!
//! Why a thread: lapin runs its heartbeat as a task on the async runtime. A runtime driven only
//! while the role blocks on an operation would send nothing during the role's HTTP call or
//! its database work, and the broker would close a consumer that is merely busy. The driver
//! thread keeps the runtime running for the whole life of the process, as a real service's
//! runtime does; only stopping the process stops it.

use std::future::Future;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};
use tokio::runtime::Handle;

use crate::fail;
use crate::out;
use crate::store::amqp::{Got, CONNECT_TIMEOUT_MS, OPERATION_TIMEOUT_MS};

/// How often a waiting consumer asks the broker again (`basic.get`).
pub const POLL_MS: u64 = 50;
/// The largest heartbeat accepted (s); RabbitMQ's own default is 60.
pub const HEARTBEAT_S_MAX: u16 = 60;

pub struct Link {
    handle: Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    driver: Option<JoinHandle<()>>,
    connection: Connection,
    channel: Channel,
    queue: String,
    logical: String,
}

/// The URL with the heartbeat asked for (`heartbeat=N` in its query).
pub fn with_heartbeat(url: &str, heartbeat_s: u16) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}heartbeat={heartbeat_s}")
}

impl Link {
    /// Connect to the broker of `stack.json` (current directory) with `heartbeat_s`, open a
    /// channel and declare logical queue `name` (durable, as the stack made it).
    pub fn open(name: &str, heartbeat_s: u16) -> Result<Link> {
        assert!((1..=HEARTBEAT_S_MAX).contains(&heartbeat_s));
        let file = crate::stackfile::read(std::path::Path::new("."))?;
        let Some(url) = file.amqp_url.clone() else {
            return Err(fail::usage(format!(
                "{}: no amqp_url (stack {} has no broker)",
                crate::stackfile::NAME,
                file.stack
            )));
        };
        let Some(queue) = file.queues.get(name).cloned() else {
            return Err(fail::usage(format!(
                "{}: no queue named '{name}'",
                crate::stackfile::NAME
            )));
        };
        let (handle, stop, driver) = driver()?;
        let url = with_heartbeat(&url, heartbeat_s);
        let connection = bound(
            &handle,
            "connect",
            CONNECT_TIMEOUT_MS,
            Connection::connect(&url, ConnectionProperties::default()),
        )?;
        let channel = bound(
            &handle,
            "channel",
            OPERATION_TIMEOUT_MS,
            connection.create_channel(),
        )?;
        let negotiated = connection.configuration().heartbeat();
        out::line(&format!("CONNECTED queue {name} heartbeat_s {negotiated}"));
        let link = Link {
            handle,
            stop: Some(stop),
            driver: Some(driver),
            connection,
            channel,
            queue,
            logical: name.to_string(),
        };
        let options = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        bound(
            &link.handle,
            &format!("queue.declare {name}"),
            OPERATION_TIMEOUT_MS,
            link.channel
                .queue_declare(link.queue.as_str().into(), options, FieldTable::default()),
        )?;
        Ok(link)
    }

    /// Take the next message with manual ack, asking again every `POLL_MS` for up to
    /// `wait_ms` (0: ask once). None: nothing came within the wait.
    pub fn get(&self, wait_ms: u64) -> Result<Option<Got>> {
        let started = Instant::now();
        let mut said = false;
        loop {
            if let Some(got) = self.get_once()? {
                return Ok(Some(got));
            }
            let waited_ms = started.elapsed().as_millis() as u64;
            if waited_ms >= wait_ms {
                return Ok(None);
            }
            if !said {
                out::line(&format!(
                    "WAITING queue {} has nothing ready; asking again for up to {wait_ms} ms",
                    self.logical
                ));
                said = true;
            }
            let nap_ms = POLL_MS.min(wait_ms - waited_ms);
            // Inside the runtime: the timer is its driver's.
            self.handle.block_on(async {
                tokio::time::sleep(Duration::from_millis(nap_ms)).await;
            });
        }
    }

    fn get_once(&self) -> Result<Option<Got>> {
        let got = bound(
            &self.handle,
            &format!("basic.get {}", self.logical),
            OPERATION_TIMEOUT_MS,
            self.channel.basic_get(
                self.queue.as_str().into(),
                BasicGetOptions { no_ack: false },
            ),
        )?;
        let Some(got) = got else {
            return Ok(None);
        };
        let text = |v: &Option<lapin::types::ShortString>| {
            v.as_ref().map_or(String::new(), |s| s.as_str().to_string())
        };
        let got = Got {
            tag: got.delivery.delivery_tag,
            message: text(got.delivery.properties.message_id()),
            publish_id: text(got.delivery.properties.correlation_id()),
            payload: String::from_utf8_lossy(&got.delivery.data).into_owned(),
            redelivered: got.delivery.redelivered,
        };
        out::line(&format!(
            "AMQP deliver queue={} message={} publish={} tag={} redelivered={} auto_ack=false",
            self.logical, got.message, got.publish_id, got.tag, got.redelivered
        ));
        out::flush();
        Ok(Some(got))
    }

    /// `basic.ack`, then a round trip on the same channel (`basic.qos`, answered by
    /// `qos-ok`): the broker handles a channel's methods in order, so the answer proves the
    /// ack was taken. `Err(reason)`: the channel or its connection is gone (the broker closed
    /// it and requeued the delivery), the ack did nothing.
    pub fn ack(&self, got: &Got) -> Result<(), String> {
        let acked = bound(
            &self.handle,
            "basic.ack",
            OPERATION_TIMEOUT_MS,
            self.channel
                .basic_ack(got.tag, BasicAckOptions { multiple: false }),
        )
        .and_then(|_| {
            bound(
                &self.handle,
                "basic.qos after the ack",
                OPERATION_TIMEOUT_MS,
                self.channel.basic_qos(0, BasicQosOptions::default()),
            )
        });
        match acked {
            Ok(()) => {
                out::line(&format!("AMQP ack message={} tag={}", got.message, got.tag));
                out::flush();
                Ok(())
            }
            Err(e) => Err(e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")),
        }
    }

    /// Close the channel and the connection (bounded) when they are still up; a link the
    /// broker closed has nothing to close.
    pub fn close(mut self) -> Result<()> {
        if self.connection.status().connected() {
            if self.channel.status().connected() {
                bound(
                    &self.handle,
                    "channel.close",
                    OPERATION_TIMEOUT_MS,
                    self.channel.close(200, "done".into()),
                )?;
            }
            bound(
                &self.handle,
                "connection.close",
                OPERATION_TIMEOUT_MS,
                self.connection.close(200, "done".into()),
            )?;
        }
        self.shut();
        Ok(())
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(driver) = self.driver.take() {
            let _ = driver.join();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shut();
    }
}

/// A current-thread runtime driven by a thread of its own until `stop` is sent: its I/O,
/// timers and spawned tasks (lapin's heartbeat) run whatever the role's thread is doing.
fn driver() -> Result<(Handle, tokio::sync::oneshot::Sender<()>, JoinHandle<()>)> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("amqp-runtime".to_string())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    let _ = tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(async {
                        let _ = stopped.await;
                    });
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        })
        .map_err(|e| fail::failed(format!("starting the AMQP client's thread: {e}")))?;
    let handle = rx
        .recv_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .map_err(|e| fail::failed(format!("starting the AMQP client: {e}")))?
        .map_err(|e| fail::failed(format!("starting the AMQP client: {e}")))?;
    Ok((handle, stop, thread))
}

fn bound<T, E: std::fmt::Display>(
    handle: &Handle,
    what: &str,
    limit_ms: u64,
    future: impl Future<Output = Result<T, E>>,
) -> Result<T> {
    match handle
        .block_on(async { tokio::time::timeout(Duration::from_millis(limit_ms), future).await })
    {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(fail::unavailable(format!("RabbitMQ {what}: {e}"))),
        Err(_) => Err(fail::unavailable(format!(
            "RabbitMQ {what}: no answer within {limit_ms} ms"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_joins_the_query_of_the_url() {
        assert_eq!(
            with_heartbeat("amqp://u:p@127.0.0.1:5672/%2f", 1),
            "amqp://u:p@127.0.0.1:5672/%2f?heartbeat=1"
        );
        assert_eq!(
            with_heartbeat("amqp://h/%2f?frame_max=8192", 2),
            "amqp://h/%2f?frame_max=8192&heartbeat=2"
        );
    }
}
