//! The queues crashlab makes for a run on a broker: declared with the lab's arguments, purged,
//! looked for. Every call is one bounded connection.

use anyhow::{Context, Result};
use lapin::options::{QueueDeclareOptions, QueuePurgeOptions};
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

/// Declare queues `names` (durable, of `queue_type`).
pub fn declare(url: &str, names: &[&str], queue_type: QueueType) -> Result<()> {
    check_ours(names);
    block_on(async {
        let connection = connect(url).await.map_err(|e| unreachable(url, &e))?;
        let channel = connection.create_channel().await?;
        for name in names {
            channel
                .queue_declare((*name).into(), options(false), arguments(queue_type))
                .await
                .with_context(|| format!("declaring queue {name}"))?;
        }
        let _ = connection.close(200, "crashlab: done".into()).await;
        Ok(())
    })?
}

/// Drop every message of queues `names` (ready ones: the processes that held deliveries are
/// gone, so the broker has put theirs back).
pub fn purge(url: &str, names: &[&str]) -> Result<()> {
    check_ours(names);
    block_on(async {
        let connection = connect(url).await.map_err(|e| unreachable(url, &e))?;
        let channel = connection.create_channel().await?;
        for name in names {
            channel
                .queue_purge((*name).into(), QueuePurgeOptions::default())
                .await
                .with_context(|| format!("purging queue {name}"))?;
        }
        let _ = connection.close(200, "crashlab: done".into()).await;
        Ok(())
    })?
}

/// Whether the broker has every queue of `names` (a passive declare each, which changes
/// nothing; a missing queue closes the channel, so each look has its own).
pub fn all_present(url: &str, names: &[&str], queue_type: QueueType) -> Result<bool> {
    block_on(async {
        let connection = connect(url).await.map_err(|e| unreachable(url, &e))?;
        let mut present = true;
        for name in names {
            let channel = connection.create_channel().await?;
            let looked = channel
                .queue_declare((*name).into(), options(true), arguments(queue_type))
                .await;
            match looked {
                Ok(_) => {
                    let _ = channel.close(200, "crashlab: looked".into()).await;
                }
                Err(e) if e.to_string().contains("NOT_FOUND") => {
                    present = false;
                    break;
                }
                Err(e) => return Err(anyhow::Error::new(e).context(format!("looking for {name}"))),
            }
        }
        let _ = connection.close(200, "crashlab: done".into()).await;
        Ok(present)
    })?
}
