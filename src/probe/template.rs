//! The request a probe sends: method, target, headers and a body template in which `{key}`
//! is the check's idempotency key and `{n}` a number of its own for each logical request,
//! from options (`--method`, `--header`, `--body`) or a small file (`--request FILE`):
//!
//! ```text
//! POST /orders
//! Content-Type: application/json
//!
//! {"order": "{n}", "amount": 25}
//! ```
//!
//! The probe sets `Host`, `Content-Length`, `Connection: close` and the key header itself.
//! Values of headers that carry credentials are recorded as `(redacted)`.

use std::path::Path;

use anyhow::Result;

use super::records::{shown, Request};
use crate::common::sha256_hex;
use crate::fail;

/// Largest body template, and request file.
pub const BODY_BYTES_MAX: usize = 64 * 1024;
/// Most headers a template adds.
const HEADERS_MAX: usize = 32;
/// The body sent when none is given: JSON, a distinct order per logical request.
pub const BODY_DEFAULT: &str = r#"{"order":"{n}","amount":25}"#;

/// Headers whose values are credentials: sent as given, recorded as `(redacted)`.
const SECRET: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
];

/// Does a header of this name carry credentials?
pub fn secret(name: &str) -> bool {
    SECRET.contains(&name.trim().to_ascii_lowercase().as_str())
}
/// Headers the probe writes itself.
const OWN: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// How the key header's value is written.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum KeyFormat {
    /// The draft's form (its section 2.1): a Structured Field String, `"key"`
    SfString,
    /// The key as it is, unquoted (what many services, and lab 13's receiver, take)
    Bare,
}

impl KeyFormat {
    /// The header value for a key made of printable ASCII other than `"` and `\`, or for
    /// any bytes (a malformed key) wrapped the same way.
    pub fn value(self, key: &[u8]) -> Vec<u8> {
        match self {
            KeyFormat::Bare => key.to_vec(),
            KeyFormat::SfString => [&b"\""[..], key, b"\""].concat(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    pub method: String,
    pub target: String,
    /// `(name, value)`, values may hold `{key}` and `{n}`.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// One request ready to send, and its record.
pub struct Rendered {
    pub bytes: Vec<u8>,
    pub record: Request,
}

impl Template {
    pub fn from_options(
        method: &str,
        target: &str,
        headers: &[String],
        body: &str,
        key_header: &str,
    ) -> Result<Template> {
        let mut parsed = Vec::with_capacity(headers.len());
        for h in headers {
            parsed.push(header(h, key_header, "--header")?);
        }
        let template = Template {
            method: method.to_string(),
            target: target.to_string(),
            headers: parsed,
            body: body.to_string(),
        };
        template.check("the options")?;
        Ok(template)
    }

    /// Read `--request FILE`: the request line `METHOD TARGET`, header lines, a blank line,
    /// the body (one final newline dropped). `url_target` is the URL's, which must be `/`
    /// when the file gives the target.
    pub fn from_file(path: &Path, url_target: &str, key_header: &str) -> Result<Template> {
        let shown_path = path.display();
        let bytes =
            std::fs::read(path).map_err(|e| fail::usage(format!("--request {shown_path}: {e}")))?;
        if bytes.len() > BODY_BYTES_MAX {
            return Err(fail::usage(format!(
                "--request {shown_path}: {} bytes; at most {BODY_BYTES_MAX}",
                bytes.len()
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| fail::usage(format!("--request {shown_path}: not UTF-8 text")))?;
        let text = text.replace("\r\n", "\n");
        let (head, body) = text.split_once("\n\n").unwrap_or((text.as_str(), ""));
        let mut lines = head.lines();
        let first = lines.next().unwrap_or("");
        let mut words = first.split_whitespace();
        let (Some(method), Some(target)) = (words.next(), words.next()) else {
            return Err(fail::usage(format!(
                "--request {shown_path}:1: the first line must be `METHOD /path`, not '{first}'"
            )));
        };
        if url_target != "/" {
            return Err(fail::usage(format!(
                "--request {shown_path} gives the path {target}; the URL must then name only the host (its path is {url_target})"
            )));
        }
        let mut headers = Vec::new();
        for (i, line) in lines.enumerate() {
            headers.push(header(
                line,
                key_header,
                &format!("--request {shown_path}:{}", i + 2),
            )?);
        }
        let template = Template {
            method: method.to_string(),
            target: target.to_string(),
            headers,
            body: body.strip_suffix('\n').unwrap_or(body).to_string(),
        };
        template.check(&format!("--request {shown_path}"))?;
        Ok(template)
    }

    fn check(&self, from: &str) -> Result<()> {
        if self.method.is_empty() || !self.method.bytes().all(is_token) {
            return Err(fail::usage(format!(
                "{from}: method '{}' is not an HTTP method",
                self.method
            )));
        }
        if !self.target.starts_with('/') || self.target.bytes().any(|b| !(0x21..=0x7e).contains(&b))
        {
            return Err(fail::usage(format!(
                "{from}: target '{}' must start with / and hold printable ASCII only",
                self.target
            )));
        }
        if self.headers.len() > HEADERS_MAX {
            return Err(fail::usage(format!(
                "{from}: more than {HEADERS_MAX} headers"
            )));
        }
        if self.body.len() > BODY_BYTES_MAX {
            return Err(fail::usage(format!(
                "{from}: the body has {} bytes; at most {BODY_BYTES_MAX}",
                self.body.len()
            )));
        }
        Ok(())
    }

    /// Does the body change with `{n}`? (Without it, no second body can differ.)
    pub fn varies(&self) -> bool {
        self.body.contains("{n}")
    }

    /// The request for logical request `n` of the check whose key is `key`, with the key
    /// header's value `key_value` (None: no key header).
    pub fn render(
        &self,
        authority: &str,
        key_header: &str,
        key_value: Option<&[u8]>,
        key: &str,
        n: u64,
    ) -> Rendered {
        let fill = |s: &str| s.replace("{key}", key).replace("{n}", &n.to_string());
        let body = fill(&self.body);
        let mut lines: Vec<(String, Vec<u8>, bool)> =
            vec![("Host".into(), authority.into(), false)];
        for (name, value) in &self.headers {
            lines.push((name.clone(), fill(value).into_bytes(), secret(name)));
        }
        let typed = self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        if !body.is_empty() && !typed {
            lines.push(("Content-Type".into(), b"application/json".to_vec(), false));
        }
        if let Some(value) = key_value {
            lines.push((key_header.to_string(), value.to_vec(), false));
        }
        if !body.is_empty() || !matches!(self.method.as_str(), "GET" | "HEAD") {
            lines.push((
                "Content-Length".into(),
                body.len().to_string().into_bytes(),
                false,
            ));
        }
        lines.push(("Connection".into(), b"close".to_vec(), false));
        let mut bytes = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        let mut recorded = Vec::with_capacity(lines.len());
        for (name, value, secret) in &lines {
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value);
            bytes.extend_from_slice(b"\r\n");
            recorded.push(match secret {
                true => format!("{name}: (redacted)"),
                false => format!("{name}: {}", shown(value)),
            });
        }
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(body.as_bytes());
        Rendered {
            bytes,
            record: Request {
                method: self.method.clone(),
                target: self.target.clone(),
                key: key_value.map(shown),
                headers: recorded,
                body_sha256: sha256_hex(body.as_bytes()),
                body_bytes: body.len() as u64,
            },
        }
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `Name: value` from an option or a file line.
fn header(line: &str, key_header: &str, from: &str) -> Result<(String, String)> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(fail::usage(format!(
            "{from}: '{line}' is not `Name: value`"
        )));
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || !name.bytes().all(is_token) {
        return Err(fail::usage(format!(
            "{from}: '{name}' is not a header name"
        )));
    }
    if value
        .bytes()
        .any(|b| !(0x20..=0x7e).contains(&b) && b != b'\t')
    {
        return Err(fail::usage(format!(
            "{from}: the value of {name} holds a control byte or a byte outside ASCII"
        )));
    }
    let lower = name.to_ascii_lowercase();
    if OWN.contains(&lower.as_str()) || lower == key_header.to_ascii_lowercase() {
        return Err(fail::usage(format!("{from}: the probe sets {name} itself")));
    }
    Ok((name.to_string(), value.to_string()))
}

/// `--key-header NAME`: a header name.
pub fn check_key_header(name: &str) -> Result<()> {
    if name.is_empty()
        || !name.bytes().all(is_token)
        || OWN.contains(&name.to_ascii_lowercase().as_str())
    {
        return Err(fail::usage(format!(
            "--key-header '{name}' is not a header the probe can set"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_rendered_with_its_key_and_number() {
        let t = Template::from_options(
            "POST",
            "/orders",
            &[
                "Authorization: Bearer s3cret".into(),
                "X-Order: {key}".into(),
            ],
            r#"{"n":{n}}"#,
            "Idempotency-Key",
        )
        .unwrap();
        let r = t.render(
            "h:8",
            "Idempotency-Key",
            Some(&KeyFormat::SfString.value(b"K1")),
            "K1",
            7,
        );
        let text = String::from_utf8(r.bytes).unwrap();
        assert!(
            text.starts_with("POST /orders HTTP/1.1\r\nHost: h:8\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nX-Order: K1\r\n"));
        assert!(text.contains("\r\nIdempotency-Key: \"K1\"\r\n"));
        assert!(text.ends_with("Content-Length: 7\r\nConnection: close\r\n\r\n{\"n\":7}"));
        assert!(r
            .record
            .headers
            .contains(&"Authorization: (redacted)".to_string()));
        assert!(!r.record.headers.iter().any(|h| h.contains("s3cret")));
        assert_eq!(r.record.key.as_deref(), Some("\"K1\""));
        let none = t.render("h", "Idempotency-Key", None, "K1", 7);
        assert!(!String::from_utf8(none.bytes)
            .unwrap()
            .contains("Idempotency-Key"));
        assert_eq!(none.record.body_sha256, r.record.body_sha256);
    }

    #[test]
    fn a_request_file_gives_method_target_headers_and_body() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("req.http");
        std::fs::write(&path, "PUT /a?b=1\r\nX-T: 1\r\n\r\nbody {n}\n").unwrap();
        let t = Template::from_file(&path, "/", "Idempotency-Key").unwrap();
        assert_eq!((t.method.as_str(), t.target.as_str()), ("PUT", "/a?b=1"));
        assert_eq!(t.headers, vec![("X-T".to_string(), "1".to_string())]);
        assert_eq!(t.body, "body {n}");
        assert!(t.varies());
        let e = Template::from_file(&path, "/other", "Idempotency-Key").unwrap_err();
        assert_eq!(fail::exit_code(&e), 2);
    }

    #[test]
    fn headers_the_probe_owns_or_cannot_send_are_refused() {
        for bad in [
            "Host: x",
            "content-length: 3",
            "Idempotency-Key: k",
            "no colon",
            "Bad Name: v",
            "X: a\u{1}b",
        ] {
            let e = Template::from_options("POST", "/", &[bad.into()], "", "Idempotency-Key")
                .unwrap_err();
            assert_eq!(fail::exit_code(&e), 2, "{bad}");
        }
        assert!(Template::from_options("PO ST", "/", &[], "", "K").is_err());
        assert!(check_key_header("Connection").is_err());
        assert!(check_key_header("X-Idempotency-Key").is_ok());
    }
}
