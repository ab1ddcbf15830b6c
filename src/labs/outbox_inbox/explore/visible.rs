//! Whether what a `commit` event of lab 14 claims (`<db> <what>`, the words of its
//! `COMMITTED` line) is in the stores, on either stack. Every shape the roles report is known
//! here; an unknown shape is an error, never a pass.

use super::super::state::State;

fn word<'a>(words: &[&'a str], at: usize) -> Result<&'a str, String> {
    words
        .get(at)
        .copied()
        .ok_or_else(|| "a line explore cannot parse (an unchecked claim is no pass)".to_string())
}

fn number(text: &str) -> Result<i64, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a number where explore expects one"))
}

/// Whether what a `COMMITTED <db> <what>` line claims is in the files. Every shape the phases
/// print is known here; an unknown shape is an error, never a pass.
pub fn visible(o: &State, rest: &str) -> Result<(), String> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let delivery = |id: i64| o.deliveries.iter().find(|d| d.id == id);
    let outbox = |m: &str| o.outbox.iter().find(|r| r.message == m);
    let ok = |holds: bool, missing: String| if holds { Ok(()) } else { Err(missing) };
    match (word(&w, 0)?, word(&w, 1)?) {
        // sender contract C message M amount A
        ("sender", "contract") => {
            let (c, m, a) = (word(&w, 2)?, word(&w, 4)?, number(word(&w, 6)?)?);
            ok(
                o.contracts.iter().any(|(k, v)| k == c && *v == a) && outbox(m).is_some(),
                format!("contract {c} amount {a} with Outbox row {m} not in the sender file"),
            )
        }
        // sender outbox sent for message M | for N messages through M
        ("sender", "outbox") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                outbox(m).is_some_and(|r| r.status == "sent"),
                format!("Outbox row {m} is not marked sent"),
            )
        }
        // sender N contracts through message M
        ("sender", _) => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                outbox(m).is_some(),
                format!("Outbox row {m} not in the sender file"),
            )
        }
        // queue delivery of message M | of N messages through M
        ("queue", "delivery") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                o.deliveries.iter().any(|d| d.message == m),
                format!("no delivery of {m} in the queue"),
            )
        }
        // queue raw delivery ID message M amount A
        ("queue", "raw") => {
            let (id, m) = (number(word(&w, 3)?)?, word(&w, 5)?);
            ok(
                delivery(id).is_some_and(|d| d.message == m),
                format!("no delivery {id} of {m} in the queue"),
            )
        }
        // queue claim of delivery ID message M by C | of N deliveries A..B by C
        ("queue", "claim") => {
            let by = word(&w, w.len().saturating_sub(1))?;
            let ids = ids(&w)?;
            ok(
                ids.clone()
                    .all(|id| delivery(id).is_some_and(|d| d.claimed_by.as_deref() == Some(by))),
                format!("deliveries {ids:?} are not all claimed by {by}"),
            )
        }
        // queue ack of delivery ID message M | of N deliveries A..B
        ("queue", "ack") => {
            let ids = ids(&w)?;
            ok(
                ids.clone()
                    .all(|id| delivery(id).is_some_and(|d| d.status != "pending")),
                format!("deliveries {ids:?} are not all acked or rejected"),
            )
        }
        // receiver inbox and ledger for message M (+A to C)[, M2 (+A2 to C2)…] | N messages
        // receiver ledger for … (memory-inbox, split-inbox-tx: the credit alone)
        ("receiver", "inbox") | ("receiver", "ledger")
            if w[1] == "ledger" || word(&w, 2)? == "and" =>
        {
            let with_inbox = w[1] == "inbox";
            let mut checked = 0;
            for (i, token) in w.iter().enumerate() {
                let Some(amount) = token.strip_prefix("(+") else {
                    continue;
                };
                let m = word(&w, i.wrapping_sub(1))?.trim_end_matches(',');
                let a = number(amount)?;
                let c = word(&w, i + 2)?.trim_end_matches([')', ',']);
                let credited = o.ledger.iter().any(|(k, _, n)| k == c && *n >= 1);
                let inboxed = o
                    .inbox
                    .iter()
                    .any(|r| r.message == m && r.contract == c && r.amount == a);
                if !credited || (with_inbox && !inboxed) {
                    return Err(format!(
                        "the credit of {m} (+{a} to {c}){} is not in the receiver file",
                        if with_inbox { " or its Inbox row" } else { "" }
                    ));
                }
                checked += 1;
            }
            if checked == 0 {
                // `N messages`: at least N credits (and N Inbox rows).
                let n = number(word(&w, w.len().saturating_sub(2))?)?;
                let credits: i64 = o.ledger.iter().map(|(_, _, k)| k).sum();
                return ok(
                    credits >= n && (!with_inbox || o.inbox.len() as i64 >= n),
                    format!("fewer than {n} credits or Inbox rows"),
                );
            }
            Ok(())
        }
        // receiver receipt of OUTCOME delivery TAG message M (the broker's stack)
        ("receiver", "receipt") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            ok(
                o.receipts.iter().any(|r| r.message == m),
                format!("no receipt of {m} in the receiver"),
            )
        }
        // receiver inbox retention deleted N rows: a deletion, nothing to find.
        ("receiver", "inbox") if word(&w, 2)? == "retention" => Ok(()),
        // receiver inbox of delivery ID message M | of N deliveries A..B (split-inbox-tx)
        ("receiver", "inbox") => {
            let m = word(&w, w.len().saturating_sub(1))?;
            if word(&w, 3)? == "delivery" {
                return ok(
                    o.inbox.iter().any(|r| r.message == m),
                    format!("no Inbox row {m}"),
                );
            }
            let ids = ids(&w)?;
            ok(
                ids.clone().all(|id| {
                    o.deliveries
                        .iter()
                        .find(|d| d.id == id)
                        .is_some_and(|d| o.inbox.iter().any(|r| r.message == d.message))
                }),
                format!("deliveries {ids:?} lack their Inbox rows"),
            )
        }
        _ => Err("a line explore cannot parse (an unchecked claim is no pass)".to_string()),
    }
}

/// The delivery ids of `… delivery ID message M …` or `… N deliveries A..B …`.
pub fn ids(w: &[&str]) -> Result<std::ops::RangeInclusive<i64>, String> {
    let at = w
        .iter()
        .position(|t| *t == "delivery" || *t == "deliveries")
        .ok_or_else(|| "no delivery id in the line".to_string())?;
    let token = word(w, at + 1)?;
    match token.split_once("..") {
        Some((a, b)) => Ok(number(a)?..=number(b)?),
        None => {
            let id = number(token)?;
            Ok(id..=id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::tests::observed;
    use super::*;

    #[test]
    fn every_committed_shape_is_checked() {
        let o = observed();
        for line in [
            "sender contract C1 message M1 amount 25",
            "sender outbox sent for message M1",
            "queue delivery of message M1",
            "queue raw delivery 1 message M1 amount 25",
            "queue claim of delivery 1 message M1 by c1",
            "queue ack of delivery 1 message M1",
            "receiver inbox and ledger for message M1 (+25 to C1)",
            "receiver inbox of delivery 1 message M1",
            "receiver ledger for message M1 (+25 to C1)",
            "receiver inbox and ledger for 1 messages",
            "receiver inbox retention deleted 3 rows",
        ] {
            assert_eq!(visible(&o, line), Ok(()), "{line}");
        }
        for line in [
            "sender contract C2 message M2 amount 25",
            "queue claim of delivery 1 message M1 by c2",
            "queue ack of delivery 2 message M2",
            "receiver inbox and ledger for message M1 (+26 to C1)",
            "receiver ledger for message M2 (+25 to C2)",
            "receiver inbox and ledger for 4 messages",
            "queue something new",
            "receiver receipt of duplicate delivery 1 message M1",
        ] {
            assert!(visible(&o, line).is_err(), "{line}");
        }
        let mut o = o;
        o.receipts.push(crate::labs::outbox_inbox::state::Receipt {
            message: "M1".into(),
            outcome: "duplicate".into(),
            redelivered: true,
            handled: 1,
        });
        let line = "receiver receipt of duplicate delivery 1 message M1";
        assert_eq!(visible(&o, line), Ok(()));
    }
}
