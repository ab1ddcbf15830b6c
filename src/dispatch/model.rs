//! Lab 13's data: idempotency keys, bodies, their digests and bounds.

use anyhow::Result;

use crate::fail;
use crate::outbox::model::sha256_hex;

/// Longest key: `[A-Za-z0-9_-]{1,64}`.
pub const KEY_LEN_MAX: usize = 64;
/// Largest request body the receiver accepts (larger: 413).
pub const BODY_BYTES_MAX: usize = 4096;

/// Why a key is refused, or None when it is valid.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() || key.len() > KEY_LEN_MAX {
        return Some(format!(
            "Idempotency-Key must have 1 to {KEY_LEN_MAX} characters (it has {})",
            key.chars().count()
        ));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        return Some(format!(
            "Idempotency-Key has the character {c:?}; allowed are [A-Za-z0-9_-]"
        ));
    }
    None
}

/// A key given on the command line: a usage error when invalid.
pub fn check_key(key: &str) -> Result<()> {
    match key_problem(key) {
        Some(problem) => Err(fail::usage(problem)),
        None => Ok(()),
    }
}

pub fn check_body(body: &str) -> Result<()> {
    if body.len() > BODY_BYTES_MAX {
        return Err(fail::usage(format!(
            "body has {} bytes; at most {BODY_BYTES_MAX}",
            body.len()
        )));
    }
    Ok(())
}

pub fn body_sha256(body: &str) -> String {
    sha256_hex(body.as_bytes())
}

/// The receiver's address: loopback only.
pub fn url(port: u16, path: &str) -> String {
    format!("http://127.0.0.1:{port}{path}")
}

/// Read a port file (written by the receiver) or take the port given.
pub fn resolve_port(port: Option<u16>, port_file: Option<&std::path::Path>) -> Result<u16> {
    match (port, port_file) {
        (Some(p), None) => Ok(p),
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                fail::unavailable(format!(
                    "receiver not reachable: port file {} cannot be read ({e}); no receiver announced itself",
                    file.display()
                ))
            })?;
            text.trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| {
                    fail::usage(format!(
                        "port file {} does not hold a port number",
                        file.display()
                    ))
                })
        }
        _ => Err(fail::usage("give --port N or --port-file FILE")),
    }
}
