//! The consumer, written once for every stack: take deliveries, decide each by the Inbox,
//! apply Inbox row and ledger credit in one receiver transaction, and only then ack. Several
//! consumers may share one queue (the SQL queue's claims are leases; the broker hands each
//! message to one consumer at a time); two that apply the same message at once meet at the
//! Inbox's primary key.

use anyhow::Result;

use super::inbox::Inbox;
use super::ports::{Decision, Transport};
use super::variant::Variant;
use crate::events::Event;
use crate::fail;
use crate::out;

/// Largest number of deliveries one consumer run handles.
pub const DELIVERIES_MAX: usize = 1_000_000;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub applied: usize,
    pub duplicates: usize,
    pub rejected: usize,
}

/// Consume until nothing is left for this consumer (or DELIVERIES_MAX), then let go of the
/// transport and say what came of it; a refused payload ends the run with exit 65.
pub fn run(
    inbox: &mut Inbox,
    mut transport: Box<dyn Transport>,
    batch: usize,
    variant: Variant,
) -> Result<Outcome> {
    assert!(batch >= 1, "batch size is at least 1");
    let mut outcome = Outcome::default();
    let mut first_reject: Option<String> = None;
    // The correct design with batches acks batch k and takes batch k+1 at once (queue.rs).
    let with_ack = variant == Variant::Correct && batch > 1;
    let mut next = None;
    for _ in 0..DELIVERIES_MAX.div_ceil(batch) {
        let taken = match next.take() {
            Some(taken) => taken,
            None => transport.take()?,
        };
        if taken.is_empty() {
            break;
        }
        if variant == Variant::AutoAck {
            // Broken on purpose: the broker forgets the delivery before anything is applied.
            transport.ack(&taken, None)?;
        }
        let mut decisions = inbox.decide(&taken)?;
        match variant {
            Variant::AckBeforeApply => {
                transport.ack(&taken, Some(&decisions))?;
                inbox.apply(&taken, &mut decisions)?;
            }
            Variant::AutoAck => inbox.apply(&taken, &mut decisions)?,
            _ if with_ack => {
                inbox.apply(&taken, &mut decisions)?;
                next = Some(transport.ack_and_take(&taken, &decisions)?);
            }
            _ => {
                inbox.apply(&taken, &mut decisions)?;
                transport.ack(&taken, Some(&decisions))?;
            }
        }
        for (d, decision) in taken.iter().zip(&decisions) {
            let item = d.message.to_string();
            // What the delivery came to: a line for people (none for an applied one: its
            // commit line said it), and the event the harness reads.
            let (line, event) = match decision {
                Decision::Apply(..) => {
                    outcome.applied += 1;
                    (None, Event::Applied { item })
                }
                Decision::Duplicate => {
                    outcome.duplicates += 1;
                    let why = "already in the Inbox, nothing applied".to_string();
                    (Some(("DUPLICATE", why)), Event::Duplicate { item })
                }
                Decision::Reject(reason) => {
                    outcome.rejected += 1;
                    first_reject.get_or_insert_with(|| reason.clone());
                    let event = Event::Rejected {
                        item,
                        reason: reason.to_string(),
                    };
                    (Some(("REJECTED", reason.to_string())), event)
                }
            };
            if let Some((word, why)) = line {
                out::line(&format!(
                    "{word} delivery {} message {}: {why}",
                    d.id, d.message
                ));
            }
            crate::events::emit(&event);
        }
    }
    transport.close()?;
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
