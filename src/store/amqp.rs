//! A role's RabbitMQ queue on the stack: found by logical name in `stack.json`, reached with
//! bounded waits (every operation has a timeout), every operation traced as an `AMQP …` line
//! with the message id, the delivery tag and, for a delivery, the broker's `redelivered` flag.
//!
//! The roles are synchronous; lapin is async, so each role holds a small tokio runtime and
//! blocks on one operation at a time. lapin's socket I/O runs on its own thread, so a publish
//! leaves for the broker while the role goes on with PostgreSQL.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use lapin::{Confirmation, PublisherConfirm};

use crate::fail;
use crate::out;

/// Bounds of the broker's answers.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;
pub const OPERATION_TIMEOUT_MS: u64 = 5_000;
/// How long a publisher waits for the broker's confirm of one message.
pub const CONFIRM_TIMEOUT_MS: u64 = 10_000;

/// AMQP `delivery-mode`: 2 is persistent (written to disk before the confirm), 1 transient.
const PERSISTENT: u8 = 2;
const TRANSIENT: u8 = 1;

pub struct Broker {
    runtime: tokio::runtime::Runtime,
    connection: Connection,
    channel: Channel,
    /// The broker's name of the queue (`crashlab_…_messages`).
    queue: String,
    /// Its logical name (`messages`), the one traces use.
    logical: String,
    /// Publishes on this channel so far: in confirm mode the broker tags them 1, 2, …
    published: u64,
    /// The queue's type, from `stack.json`: every declare carries it.
    queue_type: crate::engine::stack::QueueType,
}

/// A message taken from the queue, not yet acked (unless taken with auto-ack).
#[derive(Debug, Clone)]
pub struct Got {
    pub tag: u64,
    pub message: String,
    pub publish_id: String,
    pub payload: String,
    pub redelivered: bool,
}

/// One published message whose confirm is still to come.
pub struct Sent {
    pub tag: u64,
    pub message: String,
    confirm: PublisherConfirm,
}

fn bound<T, E: std::fmt::Display>(
    runtime: &tokio::runtime::Runtime,
    what: &str,
    limit_ms: u64,
    future: impl Future<Output = Result<T, E>>,
) -> Result<T> {
    match runtime
        .block_on(async { tokio::time::timeout(Duration::from_millis(limit_ms), future).await })
    {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(fail::unavailable(format!("RabbitMQ {what}: {e}"))),
        Err(_) => Err(fail::unavailable(format!(
            "RabbitMQ {what}: no answer within {limit_ms} ms"
        ))),
    }
}

impl Broker {
    /// Connect to the broker of `stack.json`, open a channel and declare logical queue
    /// `name` (durable, as `crashlab servers` made it; a declare of an existing queue with the
    /// same arguments changes nothing), or only look for it (`declare` false: a readback).
    /// `confirms`: put the channel in confirm mode.
    pub fn open(name: &str, confirms: bool, declare: bool) -> Result<Broker> {
        Broker::open_in(Path::new("."), name, confirms, declare)
    }

    /// As `open`, with `stack.json` in `dir`.
    pub fn open_in(dir: &Path, name: &str, confirms: bool, declare: bool) -> Result<Broker> {
        let file = crate::stackfile::read(dir)?;
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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail::failed(format!("starting the AMQP client: {e}")))?;
        let connection = bound(
            &runtime,
            "connect",
            CONNECT_TIMEOUT_MS,
            Connection::connect(&url, ConnectionProperties::default()),
        )?;
        let channel = bound(
            &runtime,
            "channel",
            OPERATION_TIMEOUT_MS,
            connection.create_channel(),
        )?;
        if confirms {
            bound(
                &runtime,
                "confirm.select",
                OPERATION_TIMEOUT_MS,
                channel.confirm_select(ConfirmSelectOptions::default()),
            )?;
            // Said in the trace so the audit knows this channel owes a confirm for every
            // publish, even when a confirm line is missing (the no-confirm variant's channel
            // is not in confirm mode and writes no such line).
            out::line(&format!("AMQP confirm-select queue={name}"));
            out::flush();
        }
        let mut broker = Broker {
            runtime,
            connection,
            channel,
            queue,
            logical: name.to_string(),
            published: 0,
            queue_type: file.queue_type,
        };
        if declare {
            broker.declare()?;
        }
        Ok(broker)
    }

    /// Declare the queue: durable, `x-queue-type` from `stack.json` (the arguments
    /// `crashlab servers` and the engine declare it with too), and say so in the trace.
    fn declare(&mut self) -> Result<()> {
        self.declare_unsaid()?;
        out::line(&format!(
            "DECLARED queue={} durable=true type={}",
            self.logical,
            self.queue_type.name()
        ));
        out::flush();
        Ok(())
    }

    /// As `declare`, without the trace line: for the engine, whose stdout is its report
    /// (one JSON document under `--json`), not a role's trace.
    pub fn declare_unsaid(&mut self) -> Result<()> {
        bound(
            &self.runtime,
            &format!("queue.declare {}", self.logical),
            OPERATION_TIMEOUT_MS,
            self.channel.queue_declare(
                self.queue.as_str().into(),
                crate::servers::queues::options(false),
                crate::servers::queues::arguments(self.queue_type),
            ),
        )?;
        Ok(())
    }

    /// Messages ready in the queue (those a consumer holds unacked are not counted), by a
    /// passive declare, which changes nothing; None when the queue does not exist yet (no
    /// role has declared it). The broker closes the channel on that answer.
    pub fn ready(&mut self) -> Result<Option<u32>> {
        let options = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let future =
            self.channel
                .queue_declare(self.queue.as_str().into(), options, FieldTable::default());
        let limit = Duration::from_millis(OPERATION_TIMEOUT_MS);
        match self
            .runtime
            .block_on(async { tokio::time::timeout(limit, future).await })
        {
            Ok(Ok(queue)) => Ok(Some(queue.message_count())),
            Ok(Err(e)) if e.to_string().contains("NOT_FOUND") => Ok(None),
            Ok(Err(e)) => Err(fail::unavailable(format!(
                "RabbitMQ queue.declare {}: {e}",
                self.logical
            ))),
            Err(_) => Err(fail::unavailable(format!(
                "RabbitMQ queue.declare {}: no answer within {OPERATION_TIMEOUT_MS} ms",
                self.logical
            ))),
        }
    }

    /// Publish one message with its message id and this publish's id (correlation id).
    pub fn publish(
        &mut self,
        message: &str,
        publish_id: &str,
        payload: &str,
        persistent: bool,
    ) -> Result<Sent> {
        let properties = BasicProperties::default()
            .with_message_id(message.into())
            .with_correlation_id(publish_id.into())
            .with_content_type("application/json".into())
            .with_delivery_mode(if persistent { PERSISTENT } else { TRANSIENT });
        let confirm = bound(
            &self.runtime,
            "basic.publish",
            OPERATION_TIMEOUT_MS,
            self.channel.basic_publish(
                "".into(),
                self.queue.as_str().into(),
                BasicPublishOptions::default(),
                payload.as_bytes(),
                properties,
            ),
        )?;
        self.published += 1;
        out::line(&format!(
            "AMQP publish queue={} message={message} publish={publish_id} tag={} persistent={persistent}",
            self.logical, self.published
        ));
        out::flush();
        Ok(Sent {
            tag: self.published,
            message: message.to_string(),
            confirm,
        })
    }

    /// Wait (bounded) for the broker's confirm of `sent`: Ok on ack; a nack or no answer is
    /// an error, and the Outbox row stays pending.
    pub fn confirm(&mut self, sent: Sent) -> Result<()> {
        let answer = bound(
            &self.runtime,
            &format!("confirm of message {}", sent.message),
            CONFIRM_TIMEOUT_MS,
            sent.confirm,
        )?;
        let word = match answer {
            Confirmation::Ack(_) => "ack",
            Confirmation::Nack(_) => "nack",
            Confirmation::NotRequested => "not-requested",
        };
        out::line(&format!(
            "AMQP confirm message={} tag={} {word}",
            sent.message, sent.tag
        ));
        out::flush();
        match word {
            "ack" => Ok(()),
            _ => Err(fail::unavailable(format!(
                "RabbitMQ answered {word} to message {}: it is not stored; the Outbox row stays pending",
                sent.message
            ))),
        }
    }

    /// Take the next message (`basic.get`), or None when the queue has none ready.
    /// `auto_ack`: the broker forgets it as it hands it over.
    pub fn get(&mut self, auto_ack: bool) -> Result<Option<Got>> {
        let got = bound(
            &self.runtime,
            &format!("basic.get {}", self.logical),
            OPERATION_TIMEOUT_MS,
            self.channel.basic_get(
                self.queue.as_str().into(),
                BasicGetOptions { no_ack: auto_ack },
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
            "AMQP deliver queue={} message={} publish={} tag={} redelivered={} auto_ack={auto_ack}",
            self.logical, got.message, got.publish_id, got.tag, got.redelivered
        ));
        out::flush();
        Ok(Some(got))
    }

    /// `basic.ack` of one delivery.
    pub fn ack(&mut self, got: &Got) -> Result<()> {
        bound(
            &self.runtime,
            "basic.ack",
            OPERATION_TIMEOUT_MS,
            self.channel
                .basic_ack(got.tag, BasicAckOptions { multiple: false }),
        )?;
        out::line(&format!("AMQP ack message={} tag={}", got.message, got.tag));
        out::flush();
        Ok(())
    }

    /// `basic.nack` without requeue: the broker drops the delivery (a rejected payload).
    pub fn nack(&mut self, got: &Got) -> Result<()> {
        bound(
            &self.runtime,
            "basic.nack",
            OPERATION_TIMEOUT_MS,
            self.channel.basic_nack(
                got.tag,
                BasicNackOptions {
                    multiple: false,
                    requeue: false,
                },
            ),
        )?;
        out::line(&format!(
            "AMQP nack message={} tag={} requeue=false",
            got.message, got.tag
        ));
        out::flush();
        Ok(())
    }

    /// Close the channel and the connection (bounded): acks reach the broker before the
    /// process ends.
    pub fn close(self) -> Result<()> {
        // A channel the broker closed (a passive declare of a missing queue) has nothing to
        // close; the connection still has.
        if self.channel.status().connected() {
            bound(
                &self.runtime,
                "channel.close",
                OPERATION_TIMEOUT_MS,
                self.channel.close(200, "done".into()),
            )?;
        }
        bound(
            &self.runtime,
            "connection.close",
            OPERATION_TIMEOUT_MS,
            self.connection.close(200, "done".into()),
        )
    }
}

/// A publish id unique to this publish: the process and the wall clock, and a count.
pub fn publish_id(count: u64) -> String {
    format!(
        "p{}t{}n{count}",
        std::process::id(),
        crate::common::now_ms()
    )
}
