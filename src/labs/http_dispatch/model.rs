//! Lab 13's data: idempotency keys, bodies, their digests and bounds.

use anyhow::Result;

use crate::common::sha256_hex;
use crate::fail;

/// Longest key: `[A-Za-z0-9_-]{1,64}`.
pub const KEY_LEN_MAX: usize = 64;
/// Largest request body the receiver accepts (larger: 413).
pub const BODY_BYTES_MAX: usize = 4096;

/// Why a key is refused, or None when it is valid.
pub fn key_problem(key: &str) -> Option<String> {
    key_bytes_problem(key.as_bytes())
}

/// As `key_problem`, for a key as it came off the wire (a header value need not be UTF-8).
/// Every byte of the key that the message shows is escaped with `escaped`.
pub fn key_bytes_problem(key: &[u8]) -> Option<String> {
    if key.is_empty() || key.len() > KEY_LEN_MAX {
        let count = std::str::from_utf8(key).map_or(key.len(), |k| k.chars().count());
        return Some(format!(
            "Idempotency-Key must have 1 to {KEY_LEN_MAX} characters (it has {count})"
        ));
    }
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    if let Some(b) = key.iter().find(|b| !allowed(b)) {
        let what = if b.is_ascii() {
            "the character"
        } else {
            "a byte outside ASCII"
        };
        return Some(format!(
            "Idempotency-Key has {what} '{}'; allowed are [A-Za-z0-9_-]",
            escaped(&[*b])
        ));
    }
    None
}

/// The one escaping of every key (and request target) a line of stdout or stderr shows:
/// printable ASCII other than space and backslash stays as it is, a backslash is doubled,
/// every other byte is `\xNN`. A valid key is shown unchanged; no key can end a line, add a
/// field (a space), or put a NUL or a control byte into the evidence, and the escaping can
/// be undone.
pub fn escaped(bytes: &[u8]) -> String {
    crate::common::escaped(bytes, false)
}

/// A key as lines show it (see `escaped`).
pub fn shown_key(key: &str) -> String {
    escaped(key.as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_key_is_shown_unchanged() {
        for key in ["K1", "a-b_C", &"z".repeat(KEY_LEN_MAX)] {
            assert_eq!(key_problem(key), None);
            assert_eq!(shown_key(key), key);
        }
    }

    #[test]
    fn escaping_leaves_no_space_control_or_non_ascii_byte() {
        assert_eq!(escaped(b"a\nb\0c"), "a\\x0ab\\x00c");
        assert_eq!(escaped(b"x y"), "x\\x20y");
        assert_eq!(escaped(b"back\\slash"), "back\\\\slash");
        assert_eq!(escaped("K\u{e9}".as_bytes()), "K\\xc3\\xa9");
        assert_eq!(escaped(b"\x7f\xff\t\r"), "\\x7f\\xff\\x09\\x0d");
        let every: Vec<u8> = (0..=255).collect();
        let shown = escaped(&every);
        assert!(shown.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{shown}");
    }

    #[test]
    fn key_problems_show_the_offending_byte_escaped() {
        let problem = key_bytes_problem(b"K\nCOMMITTED").unwrap();
        assert!(problem.contains("'\\x0a'"), "{problem}");
        assert!(!problem.contains('\n'));
        let problem = key_bytes_problem("K\u{e9}".as_bytes()).unwrap();
        assert!(problem.contains("outside ASCII '\\xc3'"), "{problem}");
        let problem = key_problem("K1;drop").unwrap();
        assert!(problem.contains("the character ';'"), "{problem}");
        assert!(key_bytes_problem(b"").unwrap().contains("it has 0"));
        assert!(key_bytes_problem(&[0xff; 65])
            .unwrap()
            .contains("it has 65"));
    }
}
