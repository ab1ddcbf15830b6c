//! What travels between a role and the broker: a message taken from the queue (`Got`), one
//! published and awaiting its confirm (`Sent`), a publish's properties and id, and the URL a
//! heartbeat is asked for in.

use lapin::message::BasicGetMessage;
use lapin::types::ShortString;
use lapin::{BasicProperties, PublisherConfirm};

/// AMQP `delivery-mode`: 2 is persistent (written to disk before the confirm), 1 transient.
const PERSISTENT: u8 = 2;
const TRANSIENT: u8 = 1;

/// A message taken from the queue, not yet acked (unless taken with auto-ack).
#[derive(Debug, Clone)]
pub struct Got {
    pub tag: u64,
    pub message: String,
    pub publish_id: String,
    pub payload: String,
    pub redelivered: bool,
}

impl Got {
    pub fn of(got: BasicGetMessage) -> Got {
        let text =
            |v: &Option<ShortString>| v.as_ref().map_or(String::new(), |s| s.as_str().to_string());
        Got {
            tag: got.delivery.delivery_tag,
            message: text(got.delivery.properties.message_id()),
            publish_id: text(got.delivery.properties.correlation_id()),
            payload: String::from_utf8_lossy(&got.delivery.data).into_owned(),
            redelivered: got.delivery.redelivered,
        }
    }
}

/// One published message whose confirm is still to come.
pub struct Sent {
    pub tag: u64,
    pub message: String,
    pub confirm: PublisherConfirm,
}

/// A publish's properties: its message id, this publish's id (correlation id), JSON, and
/// whether the broker writes it to disk.
pub fn properties(message: &str, publish_id: &str, persistent: bool) -> BasicProperties {
    BasicProperties::default()
        .with_message_id(message.into())
        .with_correlation_id(publish_id.into())
        .with_content_type("application/json".into())
        .with_delivery_mode(if persistent { PERSISTENT } else { TRANSIENT })
}

/// A publish id unique to this publish: the process and the wall clock, and a count.
pub fn publish_id(count: u64) -> String {
    format!(
        "p{}t{}n{count}",
        std::process::id(),
        crate::common::now_ms()
    )
}

/// The URL with the heartbeat asked for (`heartbeat=N` in its query).
pub fn with_heartbeat(url: &str, heartbeat_s: u16) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}heartbeat={heartbeat_s}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_heartbeat_joins_the_query_of_the_url() {
        assert_eq!(
            super::with_heartbeat("amqp://u:p@127.0.0.1:5672/%2f", 1),
            "amqp://u:p@127.0.0.1:5672/%2f?heartbeat=1"
        );
        assert_eq!(
            super::with_heartbeat("amqp://h/%2f?frame_max=8192", 2),
            "amqp://h/%2f?frame_max=8192&heartbeat=2"
        );
    }
}
