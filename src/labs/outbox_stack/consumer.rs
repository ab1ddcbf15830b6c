//! The consumer on the stack: take a delivery (manual ack), decide by the Inbox, apply Inbox
//! row + ledger credit + the delivery's receipt in one PostgreSQL transaction, commit, and only
//! then `basic.ack`. A crash before the ack leaves the delivery unacked: the broker delivers it
//! again with `redelivered` set, and the Inbox absorbs it.

use anyhow::Result;

use super::amqp::{Broker, Got};
use super::pg::{self, Pg, Session, Val};
use super::points;
use super::schema::RECEIVER;
use super::variant::Variant;
use crate::crash;
use crate::events::Event;
use crate::fail;
use crate::labs::outbox_inbox::model::{now_ms, Payload};
use crate::out;

/// Largest number of deliveries one consumer run handles.
pub const DELIVERIES_MAX: usize = 1_000_000;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub applied: usize,
    pub duplicates: usize,
    pub rejected: usize,
}

/// What one delivery comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Apply(Payload),
    Duplicate,
    Reject(String),
}

impl Decision {
    fn outcome(&self) -> &'static str {
        match self {
            Decision::Apply(_) => "applied",
            Decision::Duplicate => "duplicate",
            Decision::Reject(_) => "rejected",
        }
    }
}

pub fn run(queue: &str, receiver: &str, variant: Variant) -> Result<Outcome> {
    let session = match variant {
        Variant::AsyncCommit => Session::AsyncCommit,
        _ => Session::Durable,
    };
    let mut pg = pg::open(receiver, &RECEIVER, session, true)?;
    let mut broker = Broker::open(queue, false, true)?;
    let mut outcome = Outcome::default();
    let mut first_reject: Option<String> = None;
    for _ in 0..DELIVERIES_MAX {
        let Some(got) = broker.get(false)? else {
            break;
        };
        crash::point(points::CONSUMER_AFTER_DELIVER);
        if variant == Variant::AutoAck {
            // Broken on purpose: the broker forgets the delivery before anything is applied.
            broker.ack(&got)?;
            crash::point(points::CONSUMER_AFTER_ACK);
        }
        let decision = handle(&mut pg, &got)?;
        if variant != Variant::AutoAck {
            match decision {
                Decision::Reject(_) => broker.nack(&got)?,
                _ => broker.ack(&got)?,
            }
            crash::point(points::CONSUMER_AFTER_ACK);
        }
        let item = got.message.clone();
        let event = match &decision {
            Decision::Apply(_) => {
                outcome.applied += 1;
                Event::Applied { item }
            }
            Decision::Duplicate => {
                outcome.duplicates += 1;
                out::line(&format!(
                    "DUPLICATE delivery {} message {}: already in the Inbox, nothing applied",
                    got.tag, got.message
                ));
                Event::Duplicate { item }
            }
            Decision::Reject(reason) => {
                outcome.rejected += 1;
                first_reject.get_or_insert_with(|| reason.clone());
                out::line(&format!(
                    "REJECTED delivery {} message {}: {reason}",
                    got.tag, got.message
                ));
                Event::Rejected {
                    item,
                    reason: reason.clone(),
                }
            }
        };
        crate::events::emit(&event);
    }
    broker.close()?;
    out::line(&format!(
        "CONSUMED applied={} duplicates={} rejected={}",
        outcome.applied, outcome.duplicates, outcome.rejected
    ));
    if let Some(reason) = first_reject {
        let more = if outcome.rejected > 1 {
            format!(" ({} deliveries rejected in all)", outcome.rejected)
        } else {
            String::new()
        };
        return Err(fail::conflict(format!("{reason}{more}")));
    }
    Ok(outcome)
}

/// The payload of a delivery, checked against the message id it came under.
fn parse(got: &Got) -> Result<Payload, String> {
    let payload = Payload::parse(&got.payload)?;
    if payload.message != got.message {
        return Err(format!(
            "malformed payload: delivery names message {} but its payload names {}",
            got.message, payload.message
        ));
    }
    Ok(payload)
}

/// One receiver transaction for one delivery: the Inbox look-up, the Inbox row and the credit
/// when it is new, and its receipt (every delivery leaves one, so a redelivery is counted).
fn handle(pg: &mut Pg, got: &Got) -> Result<Decision> {
    let result = (|| -> Result<Decision, postgres::Error> {
        pg.run("BEGIN", &[])?;
        let mut decision = match parse(got) {
            Err(reason) => Decision::Reject(reason),
            Ok(payload) => {
                let applied = pg.run(
                    "SELECT digest, contract_id, amount FROM inbox WHERE message_id = $1",
                    &[Val::Text(&payload.message)],
                )?;
                match applied.rows.first() {
                    None => Decision::Apply(payload),
                    Some(row) => compare(&payload, row),
                }
            }
        };
        if let Decision::Apply(payload) = &decision {
            let inserted = pg.run(
                "INSERT INTO inbox(message_id, digest, contract_id, amount, publish_id, applied_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT(message_id) DO NOTHING",
                &[
                    Val::Text(&payload.message),
                    Val::Text(&payload.digest()),
                    Val::Text(&payload.contract),
                    Val::Int(payload.amount),
                    Val::Text(&got.publish_id),
                    Val::Int(now_ms()),
                ],
            )?;
            if inserted.changed == 1 {
                pg.run(
                    "INSERT INTO ledger(contract_id, balance, credits) VALUES ($1, $2, 1) ON CONFLICT(contract_id) DO UPDATE SET balance = ledger.balance + excluded.balance, credits = ledger.credits + 1",
                    &[Val::Text(&payload.contract), Val::Int(payload.amount)],
                )?;
            } else {
                // Another consumer committed this message since the look-up: nothing to apply.
                out::line(&format!(
                    "RACE delivery {} message {}: another consumer committed its Inbox row first",
                    got.tag, got.message
                ));
                decision = Decision::Duplicate;
            }
        }
        pg.run(
            "INSERT INTO receipts(publish_id, message_id, outcome, redelivered, handled) VALUES ($1, $2, $3, $4, 1) ON CONFLICT(publish_id) DO UPDATE SET handled = receipts.handled + 1, redelivered = excluded.redelivered",
            &[
                Val::Text(&receipt_id(got)),
                Val::Text(&got.message),
                Val::Text(decision.outcome()),
                Val::Int(i64::from(got.redelivered)),
            ],
        )?;
        crash::point(points::CONSUMER_BEFORE_RECEIVER_COMMIT);
        pg.run("COMMIT", &[])?;
        Ok(decision)
    })();
    let decision = match result {
        Ok(decision) => decision,
        Err(e) => {
            pg.rollback();
            return Err(pg.explain(e));
        }
    };
    let what = match &decision {
        Decision::Apply(p) => format!(
            "inbox and ledger for message {} (+{} to {})",
            p.message, p.amount, p.contract
        ),
        other => format!(
            "receipt of {} delivery {} message {}",
            other.outcome(),
            got.tag,
            got.message
        ),
    };
    out::committed("receiver", &what);
    crash::point(points::CONSUMER_AFTER_RECEIVER_COMMIT);
    Ok(decision)
}

/// The receipt's key: the publish id the message carries (a message without one is keyed by
/// its message id and tag, so it still leaves a receipt).
fn receipt_id(got: &Got) -> String {
    if got.publish_id.is_empty() {
        format!("untagged-{}-{}", got.message, got.tag)
    } else {
        got.publish_id.clone()
    }
}

/// Same message id already applied: the same payload is a duplicate, another is a conflict.
fn compare(payload: &Payload, row: &[Option<String>]) -> Decision {
    let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let (digest, contract, amount) = (text(0), text(1), text(2));
    if digest == payload.digest() {
        return Decision::Duplicate;
    }
    let reason = if amount != payload.amount.to_string() {
        format!(
            "payload conflict: message {} was applied with amount {amount}, this delivery has {}",
            payload.message, payload.amount
        )
    } else {
        format!(
            "payload conflict: message {} was applied to contract {contract}, this delivery names {}",
            payload.message, payload.contract
        )
    };
    Decision::Reject(reason)
}
