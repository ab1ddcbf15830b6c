//! The transport on SQLite: a durable SQL queue, `queue.db`. A publish is one queue
//! transaction; a consumer claims deliveries under a lease (`claimed_by`, `lease_until_ms`)
//! and acks them in another. A consumer restarted under the same id takes its own claims back
//! at once (it knows its previous life is over); another consumer waits for the lease to
//! expire.
//!
//! With batches of more than one delivery, the correct design acks batch k and claims batch
//! k+1 in one commit (one fsync instead of two). The order that makes the Inbox safe stays:
//! batch k is acked only after the receiver commit that applied it returned. A crash before
//! this commit leaves batch k unacked and k+1 unclaimed, exactly as a crash before the ack
//! does; after it, batch k+1 is claimed under this consumer's lease, exactly as after a claim.
//! Batch 1, the lab's own scenario and every explored case, keeps the two commits apart.

use std::path::Path;

use anyhow::Result;

use super::model::{busy_wait, now_ms, Payload};
use super::points;
use super::ports::{describe, describe_payloads, Decision, Delivery, Transport};
use super::schema::QUEUE;
use crate::crash;
use crate::out;
use crate::store::sql::{rows, within, Sql, Val};
use crate::store::{self, Access, Db};

const INSERT: &str = "INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES ($1, $2, 'pending', $3)";

/// The consumer a queue serves: its name, its lease, its batch.
#[derive(Debug, Clone)]
pub struct Claims {
    pub consumer_id: String,
    pub lease_ms: i64,
    pub batch: usize,
}

pub struct Queue {
    db: Db,
    claims: Option<Claims>,
}

impl Queue {
    /// Open the queue file: a publisher or an upstream creates it (`WriteCreate`), a consumer
    /// needs it (`Write`) and claims as `claims` says. The roles that share it under load
    /// wait for each other's commits with short sleeps first (`busy_wait`).
    pub fn open(path: &Path, access: Access, claims: Option<Claims>, busy: bool) -> Result<Queue> {
        let mut db = store::open(path, &QUEUE, access)?;
        if busy {
            db.conn
                .busy_handler(Some(busy_wait))
                .map_err(|e| store::explain(e, "queue", &db.shown))?;
        }
        Ok(Queue { db, claims })
    }

    fn claims(&self) -> &Claims {
        self.claims
            .as_ref()
            .expect("a consumer's queue knows its claims")
    }

    /// The claim's statement, inside the caller's transaction: the next deliveries this
    /// consumer may take, in delivery order.
    fn claim_rows(&mut self) -> Result<Vec<Delivery>> {
        let c = self.claims().clone();
        let now = now_ms();
        let mut claimed = rows(
            &mut self.db,
            "UPDATE deliveries SET claimed_by = $1, lease_until_ms = $2
             WHERE delivery_id IN (
               SELECT delivery_id FROM deliveries
               WHERE status = 'pending'
                 AND (claimed_by IS NULL OR claimed_by = $1 OR lease_until_ms < $3)
               ORDER BY delivery_id LIMIT $4)
             RETURNING delivery_id, message_id, payload",
            &[
                Val::Text(&c.consumer_id),
                Val::Int(now.saturating_add(c.lease_ms)),
                Val::Int(now),
                Val::Int(c.batch as i64),
            ],
            |r| {
                Some(Delivery {
                    id: r[0].int()?,
                    message: r[1].text()?,
                    payload: r[2].text()?,
                    publish_id: String::new(),
                    redelivered: false,
                })
            },
        )?;
        // RETURNING gives no order; the lab promises delivery order.
        claimed.sort_by_key(|d| d.id);
        Ok(claimed)
    }

    /// The ack's statements, inside the caller's transaction: a refused payload's delivery
    /// is `rejected` with its reason, every other `acked`. More than one delivery: the acks
    /// in one statement; a single delivery (batch 1) and every rejection keep their own.
    fn ack_rows(&mut self, taken: &[Delivery], decisions: &[Decision]) -> Result<()> {
        let now = now_ms();
        let batched = taken.len() > 1;
        if batched {
            let acked: Vec<i64> = taken
                .iter()
                .zip(decisions)
                .filter(|(_, decision)| !matches!(decision, Decision::Reject(_)))
                .map(|(d, _)| d.id)
                .collect();
            let list = serde_json::to_string(&acked).expect("a list of integers serializes");
            self.db.run(
                "UPDATE deliveries SET status = 'acked', reason = NULL, done_ms = $1
                 WHERE delivery_id IN (SELECT value FROM json_each($2)) AND status = 'pending'",
                &[Val::Int(now), Val::Text(&list)],
            )?;
        }
        for (d, decision) in taken.iter().zip(decisions) {
            let (status, reason) = match decision {
                Decision::Reject(reason) => ("rejected", Val::Text(reason)),
                _ if batched => continue,
                _ => ("acked", Val::Null),
            };
            // `AND status = 'pending'`: a consumer that took over an expired lease may be first.
            self.db.run(
                "UPDATE deliveries SET status = $1, reason = $2, done_ms = $3 WHERE delivery_id = $4 AND status = 'pending'",
                &[Val::Text(status), reason, Val::Int(now), Val::Int(d.id)],
            )?;
        }
        Ok(())
    }
}

impl Transport for Queue {
    fn publish(&mut self, payloads: &[Payload]) -> Result<()> {
        let now = now_ms();
        within(&mut self.db, |q| {
            for p in payloads {
                q.run(
                    INSERT,
                    &[
                        Val::Text(&p.message),
                        Val::Text(&p.canonical()),
                        Val::Int(now),
                    ],
                )?;
            }
            Ok(())
        })?;
        crash::point(points::PUBLISHER_BEFORE_QUEUE_COMMIT);
        self.db.commit()?;
        out::committed(
            "queue",
            &format!("delivery of {}", describe_payloads(payloads)),
        );
        crash::point(points::PUBLISHER_AFTER_QUEUE_COMMIT);
        Ok(())
    }

    fn take(&mut self) -> Result<Vec<Delivery>> {
        self.db.begin()?;
        let claimed = self.claim_rows().inspect_err(|_| self.db.rollback())?;
        if claimed.is_empty() {
            self.db.rollback();
            return Ok(claimed);
        }
        crash::point(points::CONSUMER_BEFORE_CLAIM_COMMIT);
        self.db.commit()?;
        let by = &self.claims().consumer_id;
        out::committed("queue", &format!("claim of {} by {by}", describe(&claimed)));
        crash::point(points::CONSUMER_AFTER_CLAIM_COMMIT);
        Ok(claimed)
    }

    fn ack(&mut self, taken: &[Delivery], decisions: Option<&[Decision]>) -> Result<()> {
        let decisions = decisions.expect("the SQL queue acks what the consumer decided");
        self.db.begin()?;
        self.ack_rows(taken, decisions)
            .inspect_err(|_| self.db.rollback())?;
        crash::point(points::CONSUMER_BEFORE_ACK);
        self.db.commit()?;
        out::committed("queue", &format!("ack of {}", describe(taken)));
        crash::point(points::CONSUMER_AFTER_ACK);
        Ok(())
    }

    /// One commit for the ack of `taken` and the claim of the next; the crash points of both
    /// commits are reached, the ack's first.
    fn ack_and_take(
        &mut self,
        taken: &[Delivery],
        decisions: &[Decision],
    ) -> Result<Vec<Delivery>> {
        self.db.begin()?;
        let next = self
            .ack_rows(taken, decisions)
            .and_then(|()| self.claim_rows())
            .inspect_err(|_| self.db.rollback())?;
        crash::point(points::CONSUMER_BEFORE_ACK);
        if !next.is_empty() {
            crash::point(points::CONSUMER_BEFORE_CLAIM_COMMIT);
        }
        self.db.commit()?;
        let what = match next.is_empty() {
            true => format!("ack of {}", describe(taken)),
            false => format!(
                "ack of {} and claim of {} by {}",
                describe(taken),
                describe(&next),
                self.claims().consumer_id
            ),
        };
        out::committed("queue", &what);
        crash::point(points::CONSUMER_AFTER_ACK);
        if !next.is_empty() {
            crash::point(points::CONSUMER_AFTER_CLAIM_COMMIT);
        }
        Ok(next)
    }

    fn enqueue(&mut self, payload: &Payload) -> Result<String> {
        let canonical = payload.canonical();
        let values = [
            Val::Text(&payload.message),
            Val::Text(&canonical),
            Val::Int(now_ms()),
        ];
        within(&mut self.db, |q| q.run(INSERT, &values))?;
        let id = self.db.conn.last_insert_rowid();
        crash::point(points::ENQUEUE_BEFORE_COMMIT);
        self.db.commit()?;
        out::committed(
            "queue",
            &format!(
                "raw delivery {id} message {} amount {}",
                payload.message, payload.amount
            ),
        );
        crash::point(points::ENQUEUE_AFTER_COMMIT);
        Ok(format!("delivery {id}"))
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
