//! Whether what a `commit` event of lab 13 claims (`<db> <what>`, the words of its
//! `COMMITTED` line) is in the files. Every shape the roles report is known here; an unknown
//! shape is an error, never a pass.

use crate::labs::http_dispatch::readback::State;

pub fn visible(o: &State, rest: &str) -> Result<(), String> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let at = |i: usize| -> Result<&str, String> {
        w.get(i).copied().ok_or_else(|| {
            "a line explore cannot parse (an unchecked claim is no pass)".to_string()
        })
    };
    let number = |t: &str| -> Result<i64, String> {
        t.parse()
            .map_err(|_| format!("'{t}' is not a number where explore expects one"))
    };
    let ok = |holds: bool, missing: String| if holds { Ok(()) } else { Err(missing) };
    match (at(0)?, at(1)?) {
        // intents intent SEQ key K
        ("intents", "intent") => {
            let (seq, key) = (number(at(2)?)?, at(4)?);
            ok(
                o.intents.iter().any(|(s, k, _)| *s == seq && k == key),
                format!("intent {seq} key {key} not in the intents file"),
            )
        }
        // intents attempt ID key K
        ("intents", "attempt") => {
            let (id, key) = (number(at(2)?)?, at(4)?);
            ok(
                o.attempts.iter().any(|(a, k)| *a == id && k == key),
                format!("attempt {id} key {key} not in the intents file"),
            )
        }
        // intents key K marked unknown: …
        ("intents", "key") => {
            let key = at(2)?;
            ok(
                o.intents.iter().any(|(_, k, s)| k == key && s == "unknown"),
                format!("intent {key} is not marked unknown"),
            )
        }
        // receipts receipt key K
        ("receipts", "receipt") => {
            let key = at(3)?;
            ok(
                o.has_receipt(key),
                format!("no receipt for {key} in the receipts file"),
            )
        }
        // history history key K
        ("history", "history") => {
            let key = at(3)?;
            ok(
                o.history.iter().any(|k| k == key),
                format!("no history row for {key}"),
            )
        }
        // receiver effect ID key K (K is `-` without a key)
        ("receiver", "effect") => {
            let (id, key) = (number(at(2)?)?, at(4)?);
            let key = (key != "-").then_some(key);
            ok(
                o.effects
                    .iter()
                    .any(|(e, k)| *e == id && k.as_deref() == key),
                format!("effect {id} not in the receiver file"),
            )
        }
        _ => Err("a line explore cannot parse (an unchecked claim is no pass)".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::tests::observed;
    use super::*;

    #[test]
    fn every_committed_shape_of_lab_13_is_checked() {
        let o = observed();
        for line in [
            "intents intent 1 key K1",
            "intents attempt 1 key K1",
            "receipts receipt key K1",
            "history history key K1",
            "receiver effect 1 key K1",
        ] {
            assert_eq!(visible(&o, line), Ok(()), "{line}");
        }
        for line in [
            "intents intent 2 key K2",
            "intents attempt 2 key K1",
            "intents key K1 marked unknown: left for reconciliation, not resent",
            "receipts receipt key K2",
            "history history key K2",
            "receiver effect 2 key K1",
            "receiver something new",
        ] {
            assert!(visible(&o, line).is_err(), "{line}");
        }
    }
}
