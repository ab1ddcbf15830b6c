//! The Inbox store, written once for every stack: parse a delivery, look its message up in
//! the Inbox, decide (apply, duplicate, reject), and apply Inbox row and ledger credit in one
//! receiver transaction. Two consumers that apply the same message at once meet at the
//! Inbox's primary key: the second insert changes nothing, and its delivery is decided again
//! against the row that won.
//!
//! On the broker's stack every delivery also leaves a receipt in that transaction (how many
//! times it came, the broker's `redelivered` flag, what it came to), which then holds the
//! look-up too: the broker's deliveries are nowhere else to count. On SQLite the queue keeps
//! its own rows, and the receiver commits only what it applies.

use std::collections::HashMap;

use anyhow::Result;

use super::model::{now_ms, Payload};
use super::points;
use super::ports::{describe, Decision, Delivery};
use super::stack::Stack;
use super::variant::Variant;
use crate::crash;
use crate::out;
use crate::store::sql::{self, within, Cell, Sql, Val};

/// What the Inbox holds of an applied message: its digest, contract and amount.
type Applied = (String, String, i64);

const LOOKUP: &str = "SELECT digest, contract_id, amount FROM inbox WHERE message_id = $1";

fn applied(r: &[Cell]) -> Option<Applied> {
    Some((r[0].text()?, r[1].text()?, r[2].int()?))
}

pub struct Inbox {
    pub store: Box<dyn Sql>,
    stack: Stack,
    variant: Variant,
    /// memory-inbox: the only record of what was applied dies with the process.
    memory: HashMap<String, String>,
}

/// A delivery's payload, checked against the message id it came under.
fn parse(d: &Delivery) -> Result<Payload, String> {
    let payload = Payload::parse(&d.payload)?;
    if payload.message != d.message {
        return Err(format!(
            "malformed payload: delivery names message {} but its payload names {}",
            d.message, payload.message
        ));
    }
    Ok(payload)
}

/// Same message id already applied: the same payload is a duplicate, another a conflict.
fn compare(payload: &Payload, digest: &str, applied: &Applied) -> Decision {
    let (applied_digest, applied_contract, applied_amount) = applied;
    if applied_digest == digest {
        return Decision::Duplicate;
    }
    let reason = if applied_amount != &payload.amount {
        format!(
            "payload conflict: message {} was applied with amount {applied_amount}, this delivery has {}",
            payload.message, payload.amount
        )
    } else {
        format!(
            "payload conflict: message {} was applied to contract {applied_contract}, this delivery names {}",
            payload.message, payload.contract
        )
    };
    Decision::Reject(reason)
}

/// Decide one delivery given what the Inbox holds of its message (`find`).
fn decide_with(
    d: &Delivery,
    find: impl FnOnce(&str) -> Result<Option<Applied>>,
) -> Result<Decision> {
    let payload = match parse(d) {
        Ok(p) => p,
        Err(reason) => return Ok(Decision::Reject(reason)),
    };
    let digest = payload.digest();
    Ok(match find(&payload.message)? {
        None => Decision::Apply(payload, digest),
        Some(applied) => compare(&payload, &digest, &applied),
    })
}

impl Inbox {
    pub fn new(store: Box<dyn Sql>, stack: Stack, variant: Variant) -> Inbox {
        Inbox {
            store,
            stack,
            variant,
            memory: HashMap::new(),
        }
    }

    /// Delete Inbox rows applied more than `retention_ms` ago.
    pub fn expire(&mut self, retention_ms: i64) -> Result<()> {
        let cutoff = now_ms().saturating_sub(retention_ms);
        let deleted = within(&mut *self.store, |s| {
            s.run(
                "DELETE FROM inbox WHERE applied_ms < $1",
                &[Val::Int(cutoff)],
            )
        })?;
        self.store.commit()?;
        out::committed(
            "receiver",
            &format!("inbox retention deleted {} rows", deleted.changed),
        );
        Ok(())
    }

    /// What each delivery comes to. More than one delivery: one Inbox look-up for the batch
    /// (one statement, one snapshot); a single one (batch 1, the lab's default) its own.
    pub fn decide(&mut self, taken: &[Delivery]) -> Result<Vec<Decision>> {
        if self.variant == Variant::MemoryInbox {
            return Ok(taken.iter().map(|d| self.decide_memory(d)).collect());
        }
        if self.stack.receipts() {
            self.store.begin()?;
        }
        let decided = self.decide_stored(taken);
        if decided.is_err() {
            self.store.rollback();
        }
        decided
    }

    fn decide_stored(&mut self, taken: &[Delivery]) -> Result<Vec<Decision>> {
        let store = &mut *self.store;
        if taken.len() == 1 {
            let find = |m: &str| Ok(sql::rows(store, LOOKUP, &[Val::Text(m)], applied)?.pop());
            return Ok(vec![decide_with(&taken[0], find)?]);
        }
        let ids: Vec<&str> = taken.iter().map(|d| d.message.as_str()).collect();
        let list = serde_json::to_string(&ids).expect("a list of strings serializes");
        let known: HashMap<String, Applied> = sql::rows(
            store,
            "SELECT message_id, digest, contract_id, amount FROM inbox
             WHERE message_id IN (SELECT value FROM json_each($1))",
            &[Val::Text(&list)],
            |r| Some((r[0].text()?, applied(&r[1..])?)),
        )?
        .into_iter()
        .collect();
        taken
            .iter()
            .map(|d| decide_with(d, |m| Ok(known.get(m).cloned())))
            .collect()
    }

    fn decide_memory(&mut self, d: &Delivery) -> Decision {
        let payload = match parse(d) {
            Ok(p) => p,
            Err(reason) => return Decision::Reject(reason),
        };
        let digest = payload.digest();
        match self.memory.get(&payload.message) {
            None => {
                self.memory.insert(payload.message.clone(), digest.clone());
                Decision::Apply(payload, digest)
            }
            Some(known) if *known == digest => Decision::Duplicate,
            Some(_) => Decision::Reject(format!(
                "payload conflict: message {} seen with another payload",
                payload.message
            )),
        }
    }

    /// The Inbox row of an applied delivery, unless its message has one already (then
    /// false): keyed by the message, with the delivery that applied it.
    fn insert(&mut self, d: &Delivery, payload: &Payload, digest: &str, now: i64) -> Result<bool> {
        let (sql, by) = match self.stack {
            Stack::Sqlite => (
                "INSERT INTO inbox(message_id, digest, contract_id, amount, delivery_id, applied_ms)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT(message_id) DO NOTHING",
                Val::Int(d.id),
            ),
            Stack::Servers => (
                "INSERT INTO inbox(message_id, digest, contract_id, amount, publish_id, applied_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT(message_id) DO NOTHING",
                Val::Text(&d.publish_id),
            ),
        };
        let args = [
            Val::Text(&payload.message),
            Val::Text(digest),
            Val::Text(&payload.contract),
            Val::Int(payload.amount),
            by,
            Val::Int(now),
        ];
        Ok(self.store.run(sql, &args)?.changed == 1)
    }

    /// The decision of a delivery whose Inbox insert changed nothing: against the row that
    /// blocked it.
    fn decided_again(&mut self, payload: &Payload, digest: &str) -> Result<Decision> {
        let row = sql::rows(
            &mut *self.store,
            LOOKUP,
            &[Val::Text(&payload.message)],
            applied,
        )?
        .pop()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the Inbox row of {} that blocked its insert is gone",
                payload.message
            )
        })?;
        Ok(compare(payload, digest, &row))
    }

    /// Apply every `Apply` decision in one receiver transaction. An Inbox insert that finds
    /// the row already there (another consumer won the race since the look-up) turns its
    /// decision into a duplicate or a conflict.
    pub fn apply(&mut self, taken: &[Delivery], decisions: &mut [Decision]) -> Result<()> {
        let receipts = self.stack.receipts();
        if !receipts && !decisions.iter().any(|d| matches!(d, Decision::Apply(..))) {
            return Ok(());
        }
        let now = now_ms();
        if self.variant == Variant::SplitInboxTx {
            self.apply_inbox_alone(taken, decisions, now)?;
        }
        if !receipts {
            self.store.begin()?;
        }
        let credited = self.write(taken, decisions, now);
        let credited = credited.inspect_err(|_| self.store.rollback())?;
        if credited == 0 && !receipts {
            self.store.rollback();
            return Ok(());
        }
        crash::point(points::CONSUMER_BEFORE_RECEIVER_COMMIT);
        self.store.commit()?;
        // Report what this transaction holds: the broken variants commit the credit alone;
        // a receipt alone says what its delivery came to.
        let what = match (credited, self.variant) {
            (0, _) => format!("receipt of {} {}", decisions[0].outcome(), describe(taken)),
            (_, Variant::MemoryInbox | Variant::SplitInboxTx) => {
                format!("ledger for {}", describe_applied(taken, decisions))
            }
            _ => format!(
                "inbox and ledger for {}",
                describe_applied(taken, decisions)
            ),
        };
        out::committed("receiver", &what);
        crash::point(points::CONSUMER_AFTER_RECEIVER_COMMIT);
        Ok(())
    }

    /// split-inbox-tx, broken on purpose: the Inbox rows commit alone, the credits follow.
    fn apply_inbox_alone(
        &mut self,
        taken: &[Delivery],
        decisions: &mut [Decision],
        now: i64,
    ) -> Result<()> {
        self.store.begin()?;
        let inserted = (|| {
            for (d, decision) in taken.iter().zip(decisions.iter_mut()) {
                if let Decision::Apply(payload, digest) = decision {
                    if !self.insert(d, payload, digest, now)? {
                        *decision = self.decided_again(payload, digest)?;
                    }
                }
            }
            Ok(())
        })();
        inserted.inspect_err(|_: &anyhow::Error| self.store.rollback())?;
        crash::point(points::CONSUMER_BEFORE_INBOX_COMMIT);
        self.store.commit()?;
        out::committed("receiver", &format!("inbox of {}", describe(taken)));
        crash::point(points::CONSUMER_AFTER_INBOX_COMMIT);
        Ok(())
    }

    /// The receiver transaction's statements: Inbox rows and credits, and the receipts.
    fn write(&mut self, taken: &[Delivery], decisions: &mut [Decision], now: i64) -> Result<usize> {
        let mut credited = 0;
        for (d, decision) in taken.iter().zip(decisions.iter_mut()) {
            let Decision::Apply(payload, digest) = decision else {
                continue;
            };
            let inboxed = matches!(self.variant, Variant::MemoryInbox | Variant::SplitInboxTx);
            if !inboxed && !self.insert(d, payload, digest, now)? {
                out::line(&format!(
                    "RACE delivery {} message {}: another consumer committed its Inbox row first",
                    d.id, payload.message
                ));
                *decision = self.decided_again(payload, digest)?;
                continue;
            }
            self.store.run(
                "INSERT INTO ledger(contract_id, balance, credits) VALUES ($1, $2, 1) ON CONFLICT(contract_id) DO UPDATE SET balance = ledger.balance + excluded.balance, credits = ledger.credits + 1",
                &[Val::Text(&payload.contract), Val::Int(payload.amount)],
            )?;
            credited += 1;
        }
        if self.stack.receipts() {
            for (d, decision) in taken.iter().zip(decisions.iter()) {
                self.store.run(
                    "INSERT INTO receipts(publish_id, message_id, outcome, redelivered, handled) VALUES ($1, $2, $3, $4, 1) ON CONFLICT(publish_id) DO UPDATE SET handled = receipts.handled + 1, redelivered = excluded.redelivered",
                    &[
                        Val::Text(&receipt_id(d)),
                        Val::Text(&d.message),
                        Val::Text(decision.outcome()),
                        Val::Int(i64::from(d.redelivered)),
                    ],
                )?;
            }
        }
        Ok(credited)
    }
}

/// The receipt's key: the publish id the message carries (a message without one is keyed by
/// its message id and tag, so it still leaves a receipt).
fn receipt_id(d: &Delivery) -> String {
    if d.publish_id.is_empty() {
        format!("untagged-{}-{}", d.message, d.id)
    } else {
        d.publish_id.clone()
    }
}

/// `message M1 (+25 to R1), M2 (+40 to R2)`, or `5 messages`.
fn describe_applied(taken: &[Delivery], decisions: &[Decision]) -> String {
    let applied: Vec<String> = taken
        .iter()
        .zip(decisions)
        .filter_map(|(d, decision)| match decision {
            Decision::Apply(p, _) => {
                Some(format!("{} (+{} to {})", d.message, p.amount, p.contract))
            }
            _ => None,
        })
        .collect();
    if applied.len() <= 3 {
        format!("message {}", applied.join(", "))
    } else {
        format!("{} messages", applied.len())
    }
}
