//! The transport on RabbitMQ: a durable queue, persistent messages published on a channel
//! in confirm mode (the publisher waits for the broker's confirm before the Outbox row is
//! marked), deliveries taken one at a time with manual acks (the consumer acks after its
//! receiver commit). A crash before the ack leaves the delivery unacked: the broker delivers
//! it again with `redelivered` set.

use anyhow::Result;

use super::model::Payload;
use super::points;
use super::ports::{Decision, Delivery, Transport};
use super::variant::Variant;
use crate::crash;
use crate::store::amqp::{publish_id, Broker, Got};

pub struct Rabbit {
    broker: Broker,
    /// Publishes wait for the broker's confirm (no-confirm: the channel is not even in
    /// confirm mode; the broker never says whether it stored anything).
    confirms: bool,
    /// `delivery-mode` 2 (transient: 1, kept in memory only).
    persistent: bool,
    published: u64,
}

impl Rabbit {
    /// The queue `name` of `stack.json`, declared durable, for a role of design `variant`
    /// (a raw upstream publishes as the correct design does).
    pub fn open(name: &str, variant: Variant, publishes: bool) -> Result<Rabbit> {
        let confirms = publishes && variant != Variant::NoConfirm;
        Ok(Rabbit {
            broker: Broker::open(name, confirms, true)?,
            confirms,
            persistent: variant != Variant::Transient,
            published: 0,
        })
    }
}

fn got(d: &Delivery) -> Got {
    Got {
        tag: d.id as u64,
        message: d.message.clone(),
        publish_id: d.publish_id.clone(),
        payload: String::new(),
        redelivered: d.redelivered,
    }
}

impl Transport for Rabbit {
    fn publish(&mut self, payloads: &[Payload]) -> Result<()> {
        for p in payloads {
            self.published += 1;
            let id = publish_id(self.published);
            let sent = self
                .broker
                .publish(&p.message, &id, &p.canonical(), self.persistent)?;
            crash::point(points::PUBLISHER_AFTER_PUBLISH);
            if self.confirms {
                self.broker.confirm(sent)?;
                crash::point(points::PUBLISHER_AFTER_CONFIRM);
            }
        }
        Ok(())
    }

    fn take(&mut self) -> Result<Vec<Delivery>> {
        let Some(got) = self.broker.get(false)? else {
            return Ok(Vec::new());
        };
        crash::point(points::CONSUMER_AFTER_DELIVER);
        Ok(vec![Delivery {
            id: i64::try_from(got.tag).unwrap_or(i64::MAX),
            message: got.message,
            payload: got.payload,
            publish_id: got.publish_id,
            redelivered: got.redelivered,
        }])
    }

    /// `basic.ack` each; a refused payload `basic.nack` without requeue (the broker drops it,
    /// after its receipt was committed).
    fn ack(&mut self, taken: &[Delivery], decisions: Option<&[Decision]>) -> Result<()> {
        for (i, d) in taken.iter().enumerate() {
            match decisions.and_then(|all| all.get(i)) {
                Some(Decision::Reject(_)) => self.broker.nack(&got(d))?,
                _ => self.broker.ack(&got(d))?,
            }
            crash::point(points::CONSUMER_AFTER_ACK);
        }
        Ok(())
    }

    /// Persistent and confirmed: the upstream is not the lab's, and has no crash points.
    fn enqueue(&mut self, payload: &Payload) -> Result<String> {
        self.published += 1;
        let id = publish_id(self.published);
        let sent = self
            .broker
            .publish(&payload.message, &id, &payload.canonical(), true)?;
        self.broker.confirm(sent)?;
        Ok(format!("message {} publish {id}", payload.message))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.broker.close()
    }
}
