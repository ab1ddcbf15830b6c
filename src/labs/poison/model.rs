//! Lab f2's pure rules: the two designs of the consumer, the producer's list of amounts, the
//! message ids, and every bound of the roles.

use serde::Serialize;

/// How the consumer treats a message the receiver refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Bounded retries, then the message is parked in the dead-letter table and the queue
    /// moves on (the lab's design).
    RetryThenSkip,
    /// Retry the head of the queue until it succeeds: every later message waits. The lab
    /// bounds "forever" by `--attempts-max` per run and records the wait.
    RetryForever,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::RetryThenSkip, Variant::RetryForever];

    pub fn name(self) -> &'static str {
        match self {
            Variant::RetryThenSkip => "retry-then-skip",
            Variant::RetryForever => "retry-forever",
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// The most messages one producer run writes.
pub const MESSAGES_MAX: usize = 1_000;
/// The amounts the queue accepts (the receiver accepts far fewer: `schema::AMOUNT_LIMIT`).
pub const AMOUNT_ABS_MAX: i64 = 1_000_000_000;
/// Bounds of `--attempts-max` and `--backoff-ms`.
pub const ATTEMPTS_MAX_MAX: u32 = 100;
pub const BACKOFF_MS_MAX: u64 = 10_000;
/// Default bound on failed attempts (per message for retry-then-skip, per run for
/// retry-forever) and pause between two attempts.
pub const ATTEMPTS_MAX_DEFAULT: u32 = 3;
pub const BACKOFF_MS_DEFAULT: u64 = 5;

/// The id of the `n`-th message a producer writes (from 1): `M1`, `M2`, …
pub fn message_id(n: usize) -> String {
    assert!(n >= 1, "messages count from 1");
    format!("M{n}")
}

/// The producer's amounts (an alias: clap reads a `Vec` field as repeated values, this is one).
pub type Amounts = Vec<i64>;

/// `25,5000,30`: the amounts of M1, M2, M3, in queue order.
pub fn parse_amounts(text: &str) -> Result<Amounts, String> {
    let words: Vec<&str> = text.split(',').map(str::trim).collect();
    if words.len() > MESSAGES_MAX {
        return Err(format!(
            "{} amounts, more than the {MESSAGES_MAX} one run writes",
            words.len()
        ));
    }
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let digits = w.strip_prefix('-').unwrap_or(w);
            let whole = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            let amount: i64 = w.parse().map_err(|_| match whole {
                // A whole number too long for i64 is out of range, not malformed.
                true => format!(
                    "amount {} ({w}) is out of range (-{AMOUNT_ABS_MAX} to {AMOUNT_ABS_MAX})",
                    i + 1
                ),
                false => format!("amount {} '{w}' is not a whole number", i + 1),
            })?;
            if amount.abs() > AMOUNT_ABS_MAX {
                return Err(format!(
                    "amount {} ({amount}) is out of range (-{AMOUNT_ABS_MAX} to {AMOUNT_ABS_MAX})",
                    i + 1
                ));
            }
            Ok(amount)
        })
        .collect()
}

/// One corrected amount (`poison-replay --amount`), in the queue's range.
pub fn parse_amount(text: &str) -> Result<i64, String> {
    match parse_amounts(text).as_deref() {
        Ok([one]) => Ok(*one),
        _ => Err(format!(
            "'{text}' is not one whole number from -{AMOUNT_ABS_MAX} to {AMOUNT_ABS_MAX}"
        )),
    }
}

/// A message id the replay names: `M` and a number from 1 (what the producer writes).
pub fn parse_message(text: &str) -> Result<String, String> {
    let n = text
        .strip_prefix('M')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=MESSAGES_MAX).contains(n) && text == message_id(*n));
    match n {
        Some(_) => Ok(text.to_string()),
        None => Err(format!(
            "'{text}' is not a message id (M1 to M{MESSAGES_MAX})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_in_order_and_bad_ones_are_named() {
        assert_eq!(parse_amounts("25,5000, 30,-4"), Ok(vec![25, 5000, 30, -4]));
        let e = parse_amounts("25,x").unwrap_err();
        assert!(e.contains("amount 2 'x'"), "{e}");
        assert!(parse_amounts("").is_err());
        assert!(parse_amounts("1,,2").is_err());
        assert!(parse_amounts(&format!("{}", AMOUNT_ABS_MAX + 1))
            .unwrap_err()
            .contains("out of range"));
        for huge in ["99999999999999999999999", "-99999999999999999999999"] {
            let e = parse_amounts(huge).unwrap_err();
            assert!(e.contains("out of range"), "{e}");
        }
        let many = vec!["1"; MESSAGES_MAX + 1].join(",");
        assert!(parse_amounts(&many).unwrap_err().contains("more than"));
        assert_eq!(parse_amount("500"), Ok(500));
        assert!(parse_amount("1,2").is_err());
    }

    #[test]
    fn message_ids_are_the_producers() {
        assert_eq!(message_id(2), "M2");
        assert_eq!(parse_message("M2"), Ok("M2".to_string()));
        for bad in ["M0", "M02", "m2", "X", "M", "M1001", "M2 "] {
            assert!(parse_message(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn variants_round_trip_by_name() {
        for v in Variant::ALL {
            assert_eq!(Variant::from_name(v.name()), Some(v));
        }
        assert_eq!(Variant::from_name("retry"), None);
    }
}
