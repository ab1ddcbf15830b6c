//! The queues crashlab makes for a run on a broker: declared with the lab's arguments, purged,
//! looked for, deleted. Every call is one connection, each of its steps bounded.

use anyhow::{Context, Result};
use lapin::options::{QueueDeclareOptions, QueueDeleteOptions, QueuePurgeOptions};
use lapin::types::{AMQPValue, FieldTable};

use super::rabbitmq::{block_on, connect};
use crate::engine::stack::QueueType;
use crate::fail;

/// The arguments every declare of a lab's queue carries: `x-queue-type`. The broker refuses
/// (406) a declare whose arguments differ from the queue's, so the roles and `prepare` build
/// them here alike.
pub fn arguments(queue_type: QueueType) -> FieldTable {
    let mut table = FieldTable::default();
    table.insert(
        "x-queue-type".into(),
        AMQPValue::LongString(queue_type.name().into()),
    );
    table
}

/// The options of a lab queue's declare: durable (a quorum queue can only be durable), shared,
/// kept when its consumers go; `passive`: only look.
pub fn options(passive: bool) -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        passive,
        ..QueueDeclareOptions::default()
    }
}

fn unreachable(url: &str, e: &anyhow::Error) -> anyhow::Error {
    fail::unavailable(format!(
        "cannot reach RabbitMQ at {}: {}",
        super::postgres::redact(url),
        fail::one_line(e)
    ))
}

fn check_ours(names: &[&str]) {
    for name in names {
        assert!(
            super::names::ours(name),
            "crashlab touches only its own names: {name}"
        );
    }
}

/// What `each` does to a queue.
#[derive(Clone, Copy)]
enum Op {
    /// Declare it (durable, of this type).
    Declare(QueueType),
    /// Drop every ready message (the processes that held deliveries are gone, so the broker
    /// has put theirs back).
    Purge,
    /// Delete it, with whatever it holds.
    Delete,
}

/// How long one broker call of `each` may take.
const CALL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A broker call bounded by CALL_WAIT: a broker that does not answer is unavailable (69).
async fn bounded<T>(
    what: &str,
    call: impl std::future::Future<Output = lapin::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(CALL_WAIT, call).await {
        Ok(done) => done.with_context(|| what.to_string()),
        Err(_) => Err(fail::unavailable(format!(
            "{what}: no answer within {} s",
            CALL_WAIT.as_secs()
        ))),
    }
}

/// `op` on each of queues `names`, over one connection, each call bounded. Every queue is
/// tried; the first error is returned (one delete that fails leaves the others done).
fn each(url: &str, names: &[&str], op: Op) -> Result<()> {
    check_ours(names);
    if names.is_empty() {
        return Ok(());
    }
    block_on(async {
        let connection = connect(url).await.map_err(|e| unreachable(url, &e))?;
        let mut first = Ok(());
        for name in names {
            // A refused operation closes its channel: each queue on one of its own.
            let done = async {
                let channel = bounded("opening a channel", connection.create_channel()).await?;
                let queue = (*name).into();
                match op {
                    Op::Declare(queue_type) => bounded(
                        &format!("declaring queue {name}"),
                        channel.queue_declare(queue, options(false), arguments(queue_type)),
                    )
                    .await
                    .map(drop),
                    Op::Purge => bounded(
                        &format!("purging queue {name}"),
                        channel.queue_purge(queue, QueuePurgeOptions::default()),
                    )
                    .await
                    .map(drop),
                    Op::Delete => bounded(
                        &format!("deleting queue {name}"),
                        channel.queue_delete(queue, QueueDeleteOptions::default()),
                    )
                    .await
                    .map(drop),
                }
            }
            .await;
            if let (Err(e), true) = (done, first.is_ok()) {
                first = Err(e);
            }
        }
        let _ =
            tokio::time::timeout(CALL_WAIT, connection.close(200, "crashlab: done".into())).await;
        first
    })?
}

/// Declare queues `names` (durable, of `queue_type`).
pub fn declare(url: &str, names: &[&str], queue_type: QueueType) -> Result<()> {
    each(url, names, Op::Declare(queue_type))
}

/// Drop every ready message of queues `names`.
pub fn purge(url: &str, names: &[&str]) -> Result<()> {
    each(url, names, Op::Purge)
}

/// Delete queues `names` (each a `crashlab_` name) if they exist.
pub fn delete(url: &str, names: &[&str]) -> Result<()> {
    each(url, names, Op::Delete)
}

/// How long one queue may take to answer a look or a purge in `usable`.
pub const USABLE_WAIT_MS: u64 = 5_000;

/// Whether every queue of `names` is there and works: found by a passive declare and purged,
/// each within `USABLE_WAIT_MS`. A queue that is missing (NOT_FOUND), refuses (a quorum
/// queue whose Raft member never came back: INTERNAL_ERROR after the broker's own 30 s) or
/// does not answer in time is not. Only an unreachable broker is an error.
pub fn usable(url: &str, names: &[&str]) -> Result<bool> {
    check_ours(names);
    block_on(async {
        let connection = connect(url).await.map_err(|e| unreachable(url, &e))?;
        let limit = std::time::Duration::from_millis(USABLE_WAIT_MS);
        let mut usable = true;
        for name in names {
            // A refused operation closes the channel (or the connection): each its own.
            let Ok(channel) = connection.create_channel().await else {
                usable = false;
                break;
            };
            let looked = tokio::time::timeout(limit, async {
                channel
                    .queue_declare((*name).into(), options(true), FieldTable::default())
                    .await?;
                channel
                    .queue_purge((*name).into(), QueuePurgeOptions::default())
                    .await
            })
            .await;
            if !matches!(looked, Ok(Ok(_))) {
                usable = false;
                break;
            }
            let _ = channel.close(200, "crashlab: looked".into()).await;
        }
        let _ = connection.close(200, "crashlab: done".into()).await;
        Ok(usable)
    })?
}
