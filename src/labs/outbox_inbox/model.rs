//! Lab 14's data: ids, amounts, the canonical payload and its digest.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::fail;

/// Longest id accepted (contract, message, consumer).
pub const ID_LEN_MAX: usize = 64;
/// Largest amount: small enough that a million of them sum without overflowing an i64.
pub const AMOUNT_MAX: i64 = 1_000_000_000;

/// Ids are short printable ASCII: letters, digits and `._:-`, 1 to 64 of them.
pub fn check_id(kind: &str, id: &str) -> Result<()> {
    if id.is_empty() || id.len() > ID_LEN_MAX {
        return Err(fail::usage(format!(
            "{kind} id '{}' must have 1 to {ID_LEN_MAX} characters (it has {})",
            id.chars().take(ID_LEN_MAX).collect::<String>(),
            id.chars().count()
        )));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(fail::usage(format!(
            "{kind} id '{id}' has the character {c:?}; allowed are letters, digits and . _ : -"
        )));
    }
    Ok(())
}

/// Amounts are integers from 1 to AMOUNT_MAX.
pub fn check_amount(amount: i64) -> Result<()> {
    if !(1..=AMOUNT_MAX).contains(&amount) {
        return Err(fail::usage(format!(
            "amount {amount} is out of range (1 to {AMOUNT_MAX})"
        )));
    }
    Ok(())
}

/// Parse an amount argument: an integer in range, with a message that says why not.
pub fn parse_amount(text: &str) -> Result<i64, String> {
    let amount: i64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not an integer from 1 to {AMOUNT_MAX}"))?;
    check_amount(amount).map_err(|e| e.to_string())?;
    Ok(amount)
}

/// What travels from Outbox to Inbox. Fields are declared in sorted order, so serde_json
/// writes the canonical form (sorted keys, no whitespace) directly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    pub amount: i64,
    pub contract: String,
    pub message: String,
}

impl Payload {
    pub fn new(message: &str, contract: &str, amount: i64) -> Payload {
        Payload {
            amount,
            contract: contract.to_string(),
            message: message.to_string(),
        }
    }

    /// Sorted keys, no whitespace: `{"amount":25,"contract":"R1","message":"M1"}`.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("a payload of integers and strings serializes")
    }

    /// SHA-256 of the canonical form, hex.
    pub fn digest(&self) -> String {
        sha256_hex(self.canonical().as_bytes())
    }

    /// Parse a payload as it lies in the queue; a faulty upstream may have written anything.
    pub fn parse(text: &str) -> Result<Payload, String> {
        let payload: Payload =
            serde_json::from_str(text).map_err(|e| format!("malformed payload: {e}"))?;
        check_id("message", &payload.message).map_err(|e| format!("malformed payload: {e}"))?;
        check_id("contract", &payload.contract).map_err(|e| format!("malformed payload: {e}"))?;
        check_amount(payload.amount).map_err(|e| format!("malformed payload: {e}"))?;
        Ok(payload)
    }
}

pub use crate::common::now_ms;
use crate::common::sha256_hex;

/// Busy handler for the roles that share a file under load (publisher, consumers): the same
/// bound as the pinned busy timeout (store::BUSY_TIMEOUT_MS), but short sleeps first.
/// SQLite's own handler sleeps 1, 2, 5, 10 … 100 ms between tries, so a writer waiting for a
/// commit that takes a fraction of a millisecond loses milliseconds each time. Returns false
/// (SQLITE_BUSY, which the roles turn into exit 75) once the bound is spent.
pub fn busy_wait(count: i32) -> bool {
    const SHORT_TRIES: i32 = 200;
    const SHORT_US: u64 = 50;
    let bound_ms = crate::store::BUSY_TIMEOUT_MS as i32;
    let long_tries = bound_ms.saturating_sub(SHORT_TRIES * SHORT_US as i32 / 1000);
    if count < SHORT_TRIES {
        std::thread::sleep(std::time::Duration::from_micros(SHORT_US));
        true
    } else if count < SHORT_TRIES + long_tries {
        std::thread::sleep(std::time::Duration::from_millis(1));
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_payload_has_sorted_keys_and_no_whitespace() {
        let p = Payload::new("M1", "R1", 25);
        assert_eq!(
            p.canonical(),
            r#"{"amount":25,"contract":"R1","message":"M1"}"#
        );
        let reordered = Payload::parse(r#"{ "message": "M1", "contract": "R1", "amount": 25 }"#)
            .expect("valid payload");
        assert_eq!(reordered.digest(), p.digest());
        assert_ne!(Payload::new("M1", "R1", 99).digest(), p.digest());
    }

    #[test]
    fn ids_and_amounts_are_bounded() {
        assert!(check_id("message", "M1").is_ok());
        assert!(check_id("message", "").is_err());
        assert!(check_id("message", &"x".repeat(ID_LEN_MAX + 1)).is_err());
        assert!(check_id("message", "M 1").is_err());
        assert!(parse_amount("0").is_err());
        assert!(parse_amount("-5").is_err());
        assert!(parse_amount("99999999999999999999").is_err());
        assert_eq!(parse_amount("25"), Ok(25));
    }
}
