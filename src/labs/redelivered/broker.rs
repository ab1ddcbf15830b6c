//! The consumer's transport on the servers: a RabbitMQ queue with manual acks, reached with a
//! short heartbeat sent from a thread of its own (`store::amqp::Broker::with_heartbeat`), and
//! the consumers' PostgreSQL database, where each delivery is recorded before its call and
//! each reply after its ack. A stopped consumer sends no heartbeat, so the broker closes its
//! connection and requeues the message, flagged `redelivered`, for another consumer.

use anyhow::Result;

use super::consumer::{acked_line, Reply, Taken, Transport};
use super::schema::CONSUMER;
use crate::labs::http_dispatch::model::shown_key;
use crate::out;
use crate::store::amqp::{Broker, Got};
use crate::store::pg::{self, Pg, Session, Val};

/// `redeliver-enqueue` on the broker (its id and body checked): one persistent publish,
/// confirmed.
pub fn enqueue(queue: &str, id: &str, body: &str) -> Result<()> {
    let mut broker = Broker::open(queue, true, true)?;
    // One publish per message and queue: its id is the message's own, so that two runs of a
    // scenario print the same trace (`audit --rerun`).
    let sent = broker.publish(id, &format!("{id}-1"), body, true)?;
    broker.confirm(sent)?;
    broker.close()?;
    out::line(&format!("ENQUEUED message {}", shown_key(id)));
    Ok(())
}

/// The broker's queue and the consumers' database, as one consumer's transport.
pub struct Deliveries {
    queue: String,
    db: Pg,
    consumer: String,
    heartbeat_s: u16,
    wait_ms: u64,
    /// Connected on the first take, once the receiver's port is known.
    broker: Option<Broker>,
    got: Option<Got>,
}

impl Deliveries {
    pub fn open(
        queue: &str,
        db: &str,
        consumer: &str,
        heartbeat_s: u16,
        wait_ms: u64,
    ) -> Result<Deliveries> {
        Ok(Deliveries {
            queue: queue.to_string(),
            db: pg::open(db, &CONSUMER, Session::Durable, true)?,
            consumer: consumer.to_string(),
            heartbeat_s,
            wait_ms,
            broker: None,
            got: None,
        })
    }
}

impl Transport for Deliveries {
    /// The next delivery (asking again for up to the wait), recorded before the call.
    fn take(&mut self) -> Result<Option<Taken>> {
        let broker = match &mut self.broker {
            Some(broker) => broker,
            None => self
                .broker
                .insert(Broker::with_heartbeat(&self.queue, self.heartbeat_s)?),
        };
        let Some(got) = broker.get_waiting(self.wait_ms)? else {
            return Ok(None);
        };
        record(
            &mut self.db,
            "INSERT INTO deliveries(message, consumer, tag, redelivered, taken_ms) VALUES ($1, $2, $3, $4, $5)",
            &[
                Val::Text(&got.message),
                Val::Text(&self.consumer),
                Val::Int(got.tag as i64),
                Val::Int(i64::from(got.redelivered)),
                Val::Int(crate::common::now_ms()),
            ],
            &format!(
                "delivery of message {} to {}{}",
                got.message,
                self.consumer,
                if got.redelivered { " redelivered" } else { "" }
            ),
        )?;
        let taken = Taken {
            id: got.message.clone(),
            body: got.payload.clone(),
            count: ("tag", got.tag as i64),
        };
        self.got = Some(got);
        Ok(Some(taken))
    }

    /// Ack (proved by a round trip on the channel), say how it went, record the reply.
    fn settle(&mut self, taken: &Taken, reply: Reply) -> Result<bool> {
        let (Some(broker), Some(got)) = (&mut self.broker, &self.got) else {
            unreachable!("settled after a take");
        };
        let consumer = self.consumer.as_str();
        // The client's own words vary with who saw the closed socket first (the client before
        // the ack: "invalid channel state"; the ack itself: "connection reset"); the line says
        // what both mean, so two runs print the same trace.
        let acked = broker.ack_settled(got).is_ok();
        out::line(&match acked {
            true => acked_line(&taken.id, consumer),
            false => format!(
                "CHANNEL-LOST message {} tag {}: the broker closed the channel and requeued the message, the ack did nothing; the call ran all the same",
                shown_key(&taken.id),
                got.tag
            ),
        });
        record(
            &mut self.db,
            "INSERT INTO replies(message, consumer, status, replayed, acked, at_ms) VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                Val::Text(&got.message),
                Val::Text(consumer),
                Val::Int(i64::from(reply.status)),
                Val::Int(i64::from(reply.replayed)),
                Val::Int(i64::from(acked)),
                Val::Int(crate::common::now_ms()),
            ],
            &format!(
                "reply of message {} to {consumer} {}",
                got.message,
                if acked { "acked" } else { "ack lost" }
            ),
        )?;
        Ok(acked)
    }

    fn unreplied(&self) -> &'static str {
        "not acked, the broker will deliver it again"
    }

    /// Close the connection; one the broker closed (the ack did nothing) has nothing to close.
    fn close(self: Box<Self>, acked: bool) -> Result<()> {
        match self.broker {
            Some(broker) if acked => broker.close(),
            _ => Ok(()),
        }
    }
}

/// One statement in its own transaction, reported once committed.
fn record(db: &mut Pg, sql: &str, args: &[Val<'_>], what: &str) -> Result<()> {
    let done = (|| {
        db.run("BEGIN", &[])?;
        db.run(sql, args)?;
        db.run("COMMIT", &[])
    })();
    if let Err(e) = done {
        db.rollback();
        return Err(db.explain(e));
    }
    out::committed(db.db, what);
    Ok(())
}
