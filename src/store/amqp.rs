//! A role's RabbitMQ queue on the stack: found by logical name in `stack.json`, reached with
//! bounded waits (every operation has a timeout), every operation traced as an `AMQP …` line
//! with the message id, the delivery tag and, for a delivery, the broker's `redelivered` flag.
//!
//! The roles are synchronous; lapin is async, so each role holds a small tokio runtime and
//! blocks on one operation at a time (`runtime.rs`). lapin's socket I/O runs on its own
//! thread, so a publish leaves for the broker while the role goes on with PostgreSQL. A
//! connection opened with a heartbeat (`Broker::with_heartbeat`) has its runtime driven by a
//! thread of its own, so its heartbeats go on while the role works and stop only with the
//! process.

mod message;
mod runtime;

use std::path::Path;

use anyhow::Result;
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Confirmation, Connection, ConnectionProperties};

use crate::fail;
use crate::out;
pub use message::{publish_id, Got, Sent};
use runtime::Runtime;

/// Bounds of the broker's answers.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;
pub const OPERATION_TIMEOUT_MS: u64 = 5_000;
/// How long a publisher waits for the broker's confirm of one message.
pub const CONFIRM_TIMEOUT_MS: u64 = 10_000;
/// How often a waiting consumer asks the broker again (`basic.get`).
pub const POLL_MS: u64 = 50;
/// The largest heartbeat accepted (s); RabbitMQ's own default is 60.
pub const HEARTBEAT_S_MAX: u16 = 60;

pub struct Broker {
    runtime: Runtime,
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
        let mut broker = Broker::connect(dir, name, confirms, None)?;
        if declare {
            broker.declare()?;
        }
        Ok(broker)
    }

    /// As `open` (declared, no confirms), asking the broker for a heartbeat of `heartbeat_s`
    /// and sending it from a thread of its own (`runtime.rs`): the broker closes the
    /// connection of a stopped process after about two missed intervals and requeues what it
    /// had not acked, flagged `redelivered`; a process that is only busy keeps it.
    pub fn with_heartbeat(name: &str, heartbeat_s: u16) -> Result<Broker> {
        assert!((1..=HEARTBEAT_S_MAX).contains(&heartbeat_s));
        let mut broker = Broker::connect(Path::new("."), name, false, Some(heartbeat_s))?;
        let negotiated = broker.connection.configuration().heartbeat();
        out::line(&format!("CONNECTED queue {name} heartbeat_s {negotiated}"));
        broker.declare()?;
        Ok(broker)
    }

    fn connect(dir: &Path, name: &str, confirms: bool, heartbeat_s: Option<u16>) -> Result<Broker> {
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
        let (url, runtime) = match heartbeat_s {
            Some(s) => (
                message::with_heartbeat(&url, s),
                Runtime::on_thread(CONNECT_TIMEOUT_MS)?,
            ),
            None => (url, Runtime::here()?),
        };
        let connection = runtime.bound(
            "connect",
            CONNECT_TIMEOUT_MS,
            Connection::connect(&url, ConnectionProperties::default()),
        )?;
        let channel =
            runtime.bound("channel", OPERATION_TIMEOUT_MS, connection.create_channel())?;
        if confirms {
            runtime.bound(
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
        Ok(Broker {
            runtime,
            connection,
            channel,
            queue,
            logical: name.to_string(),
            published: 0,
            queue_type: file.queue_type,
        })
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
        self.runtime.bound(
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
        let asked = self.runtime.bound(
            &format!("queue.declare {}", self.logical),
            OPERATION_TIMEOUT_MS,
            self.channel
                .queue_declare(self.queue.as_str().into(), options, FieldTable::default()),
        );
        match asked {
            Ok(queue) => Ok(Some(queue.message_count())),
            Err(e) if e.to_string().contains("NOT_FOUND") => Ok(None),
            Err(e) => Err(e),
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
        let properties = message::properties(message, publish_id, persistent);
        let confirm = self.runtime.bound(
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
        let answer = self.runtime.bound(
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
        let got = self.runtime.bound(
            &format!("basic.get {}", self.logical),
            OPERATION_TIMEOUT_MS,
            self.channel.basic_get(
                self.queue.as_str().into(),
                BasicGetOptions { no_ack: auto_ack },
            ),
        )?;
        let Some(got) = got.map(Got::of) else {
            return Ok(None);
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
        self.acked(got, false)
    }

    /// Take the next message with manual ack, asking again every `POLL_MS` for up to
    /// `wait_ms` (0: ask once). None: nothing came within the wait.
    pub fn get_waiting(&mut self, wait_ms: u64) -> Result<Option<Got>> {
        let started = std::time::Instant::now();
        for round in 0.. {
            if let Some(got) = self.get(false)? {
                return Ok(Some(got));
            }
            let waited_ms = started.elapsed().as_millis() as u64;
            if waited_ms >= wait_ms {
                break;
            }
            if round == 0 {
                out::line(&format!(
                    "WAITING queue {} has nothing ready; asking again for up to {wait_ms} ms",
                    self.logical
                ));
            }
            self.runtime.nap(POLL_MS.min(wait_ms - waited_ms));
        }
        Ok(None)
    }

    /// `basic.ack`, then a round trip on the same channel (`basic.qos`, answered by
    /// `qos-ok`): the broker handles a channel's methods in order, so the answer proves the
    /// ack was taken. An error: the channel or its connection is gone (the broker closed it
    /// and requeued the delivery), the ack did nothing.
    pub fn ack_settled(&mut self, got: &Got) -> Result<()> {
        self.acked(got, true)
    }

    fn acked(&mut self, got: &Got, proved: bool) -> Result<()> {
        self.runtime.bound(
            "basic.ack",
            OPERATION_TIMEOUT_MS,
            self.channel
                .basic_ack(got.tag, BasicAckOptions { multiple: false }),
        )?;
        if proved {
            self.runtime.bound(
                "basic.qos after the ack",
                OPERATION_TIMEOUT_MS,
                self.channel.basic_qos(0, BasicQosOptions::default()),
            )?;
        }
        out::line(&format!("AMQP ack message={} tag={}", got.message, got.tag));
        out::flush();
        Ok(())
    }

    /// `basic.nack` without requeue: the broker drops the delivery (a rejected payload).
    pub fn nack(&mut self, got: &Got) -> Result<()> {
        self.runtime.bound(
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
            self.runtime.bound(
                "channel.close",
                OPERATION_TIMEOUT_MS,
                self.channel.close(200, "done".into()),
            )?;
        }
        self.runtime.bound(
            "connection.close",
            OPERATION_TIMEOUT_MS,
            self.connection.close(200, "done".into()),
        )
    }
}
