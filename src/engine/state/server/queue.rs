//! A RabbitMQ queue as a store: its state is its ready messages. The logical digest is the
//! count a passive declare reports (reading the messages would change their redelivered
//! flag); the kept copy lists them, taken with `basic.get` and returned unacked: a built-in
//! lab's at the end of a scenario when nothing else runs, a lab file's queue store at each
//! check step too (`labfile::queue`).

use std::time::Duration;

use anyhow::{Context, Result};
use lapin::options::{BasicGetOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Every broker call has this bound.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Messages kept per queue: a lab's queue holds a handful.
pub const KEPT_MAX: u32 = 10_000;

/// The first line of a kept queue (JSON lines follow, one per message).
pub const HEADER: &str = "# crashlab queue";

/// The logical digest of a queue holding `count` ready messages.
pub fn digest_of_count(count: u32) -> String {
    format!("{:x}", Sha256::digest(format!("queue messages={count}")))
}

/// One kept message.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Kept {
    pub message_id: Option<String>,
    pub redelivered: bool,
    pub body: String,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the AMQP client's runtime")
}

async fn bounded<T>(
    what: &str,
    f: impl std::future::Future<Output = lapin::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(r) => r.with_context(|| what.to_string()),
        // A broker that does not answer is a peer unavailable (69), not a broken design.
        Err(_) => Err(crate::fail::unavailable(format!(
            "{what}: no answer within {} s",
            CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// A connection to the broker at `url` and a channel on it, each step bounded.
async fn open(url: &str) -> Result<(Connection, lapin::Channel)> {
    let conn = bounded(
        "connecting to the broker",
        Connection::connect(url, ConnectionProperties::default()),
    )
    .await?;
    let channel = bounded("opening a channel", conn.create_channel()).await?;
    Ok((conn, channel))
}

/// What a passive declare reports of `queue`, or None when it does not exist.
#[derive(Debug, Clone, Copy)]
pub struct Looked {
    /// Its ready messages (not those delivered and not yet acked).
    pub ready: u32,
    pub consumers: u32,
}

/// The ready messages of `queue`, or None when it does not exist.
pub fn count(url: &str, queue: &str) -> Result<Option<u32>> {
    Ok(look(url, queue)?.map(|l| l.ready))
}

/// Look at `queue` without touching its messages, or None when it does not exist.
pub fn look(url: &str, queue: &str) -> Result<Option<Looked>> {
    runtime()?.block_on(async {
        let (conn, channel) = open(url).await?;
        let options = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let declared = tokio::time::timeout(
            CALL_TIMEOUT,
            channel.queue_declare(queue.into(), options, FieldTable::default()),
        )
        .await;
        let found = match declared {
            Ok(Ok(q)) => Some(Looked {
                ready: q.message_count(),
                consumers: q.consumer_count(),
            }),
            // A passive declare of a missing queue closes the channel with 404.
            Ok(Err(e)) if e.to_string().contains("NOT_FOUND") || e.to_string().contains("404") => {
                None
            }
            Ok(Err(e)) => {
                return Err(
                    anyhow::Error::from(e).context(format!("declaring queue {queue} passively"))
                )
            }
            Err(_) => anyhow::bail!("declaring queue {queue}: no answer"),
        };
        let _ = tokio::time::timeout(CALL_TIMEOUT, conn.close(200, "done".into())).await;
        Ok(found)
    })
}

/// Every ready message of `queue` (at most KEPT_MAX), left in it: taken unacked, then the
/// channel is closed, which returns them.
pub fn messages(url: &str, queue: &str) -> Result<Vec<Kept>> {
    runtime()?.block_on(async {
        let (conn, channel) = open(url).await?;
        let mut kept = Vec::new();
        for _ in 0..KEPT_MAX {
            let got = bounded(
                "basic.get",
                channel.basic_get(queue.into(), BasicGetOptions { no_ack: false }),
            )
            .await?;
            let Some(message) = got else { break };
            let d = message.delivery;
            kept.push(Kept {
                message_id: d.properties.message_id().as_ref().map(|s| s.to_string()),
                redelivered: d.redelivered,
                body: String::from_utf8_lossy(&d.data).into_owned(),
            });
        }
        let _ = tokio::time::timeout(CALL_TIMEOUT, conn.close(200, "done".into())).await;
        Ok(kept)
    })
}

/// The kept file of a queue: the header with its count, then one JSON line per message.
pub fn write(queue: &str, kept: &[Kept]) -> Result<String> {
    let mut text = format!("{HEADER} {queue}: {} messages\n", kept.len());
    for m in kept {
        text.push_str(&serde_json::to_string(m)?);
        text.push('\n');
    }
    Ok(text)
}

/// Whether kept bytes are a queue's, and then its logical digest (its message count, checked
/// against the lines that follow the header).
pub fn kept_digest(bytes: &[u8]) -> Option<Result<String>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix(HEADER)?;
    Some((|| {
        let mut lines = rest.lines();
        let head = lines.next().unwrap_or_default();
        let said: u32 = head
            .rsplit(": ")
            .next()
            .and_then(|t| t.strip_suffix(" messages"))
            .and_then(|n| n.parse().ok())
            .context("a kept queue's first line names its count")?;
        let mut n = 0u32;
        for line in lines {
            serde_json::from_str::<Kept>(line).context("a kept message is one JSON line")?;
            n += 1;
        }
        anyhow::ensure!(n == said, "a kept queue says {said} messages and lists {n}");
        Ok(digest_of_count(n))
    })())
}
