//! What a probe records, as its evidence files hold it: every exchange (`exchanges.jsonl`),
//! every reading of the effects (`effects.jsonl`), each check's verdict and the run
//! (`probe.json`). The live probe judges from these records, and `crashlab audit` judges
//! again from the files: one set of types for both.
//!
//! Every record refuses a field it does not know, as the other evidence does: a field added
//! by hand would otherwise pass the audit unread.

use serde::{Deserialize, Serialize};

/// The evidence files of a probe run.
pub const PROBE: &str = "probe.json";
pub const EXCHANGES: &str = "exchanges.jsonl";
pub const EFFECTS: &str = "effects.jsonl";

/// How an exchange ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A whole response: its head and every byte of its body.
    Response,
    /// The connection ended before a byte of the response.
    Closed,
    /// The connection was reset (before or during the response).
    Reset,
    /// The connection ended inside the response: a head without its whole body.
    Truncated,
    /// Nothing more came within the time left.
    Timeout,
    /// The response is larger than `--response-bytes-max` (declared, or read past it).
    TooLarge,
    /// Bytes that are no HTTP/1.1 response.
    Malformed,
    /// No connection was made.
    ConnectFailed,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Response => "response",
            Outcome::Closed => "closed",
            Outcome::Reset => "reset",
            Outcome::Truncated => "truncated",
            Outcome::Timeout => "timeout",
            Outcome::TooLarge => "too-large",
            Outcome::Malformed => "malformed",
            Outcome::ConnectFailed => "connect-failed",
        }
    }
}

/// The request as sent (header values the user marked secret are recorded as `(redacted)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub method: String,
    pub target: String,
    /// The key header's value as sent; None when the request carries none.
    pub key: Option<String>,
    /// Every header line after the request line, in order.
    pub headers: Vec<String>,
    pub body_sha256: String,
    pub body_bytes: u64,
}

/// What came back: the head always, the body's digest only when the body came whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    pub status: u16,
    /// The status line and every header line, as received (bytes outside ASCII escaped).
    pub head: Vec<String>,
    /// Body bytes read (decoded from chunks).
    pub body_bytes: u64,
    /// SHA-256 of the whole body; None when it did not come whole.
    pub body_sha256: Option<String>,
    /// Its first bytes, printable ASCII kept and every other byte as `\xNN`.
    pub body_excerpt: String,
}

/// Where the loopback proxy cut the reply, after the upstream had answered whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cut {
    /// SO_LINGER 0 and close: the client gets a reset, no byte of the reply.
    Reset,
    /// A plain close: the client gets the end of the stream, no byte of the reply.
    Close,
    /// The reply's head is sent, then a close.
    AfterHead,
    /// The head and half the body's bytes are sent, then a close.
    MidBody,
}

impl Cut {
    pub fn word(self) -> &'static str {
        match self {
            Cut::Reset => "reset",
            Cut::Close => "close",
            Cut::AfterHead => "after-head",
            Cut::MidBody => "mid-body",
        }
    }
}

/// What the proxy did with one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proxied {
    pub cut: Cut,
    /// How the upstream's reply ended, as the proxy read it.
    pub upstream: Outcome,
    pub upstream_response: Option<Response>,
    /// Why the upstream's reply did not come whole, when it did not.
    pub upstream_detail: String,
    /// Milliseconds since the probe started when the upstream's reply was whole.
    pub upstream_done_ms: Option<f64>,
    /// Bytes of the reply the client was sent before the cut.
    pub sent_bytes: u64,
    /// Milliseconds since the probe started when the cut of the client's connection began
    /// (after `upstream_done_ms`, before the client can see it).
    pub cut_ms: f64,
}

/// One request and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// The check it belongs to (`retry`, …).
    pub check: String,
    /// Its part in the check (`first`, `retry`, `other-body`, `racer-3`, `lost`, …).
    pub step: String,
    pub request: Request,
    pub outcome: Outcome,
    /// The head (and the body's digest when whole), when a head came.
    pub response: Option<Response>,
    /// Why it did not end in a whole response (empty when it did).
    pub detail: String,
    /// Sent through the loopback proxy, and what it did; None when sent directly.
    pub proxy: Option<Proxied>,
    pub started_ms: f64,
    pub ended_ms: f64,
}

impl Exchange {
    /// The whole response, if one came.
    pub fn whole(&self) -> Option<&Response> {
        match self.outcome {
            Outcome::Response => self.response.as_ref(),
            _ => None,
        }
    }
}

/// One reading of the effects (`--effects-url` or `--effects-cmd`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reading {
    pub check: String,
    /// `before`, `after-lost` (a reply-lost check, before its retry) or `after`.
    pub at: String,
    /// The count read; None when it could not be read.
    pub count: Option<i64>,
    /// What the source printed or answered (its first bytes), or why nothing was read.
    pub detail: String,
    pub ms: f64,
}

/// PASS, FAIL, SKIP, or INFO (what was seen, never a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
    Skip,
    Info,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
            Verdict::Info => "INFO",
        }
    }
}

/// One check's verdict: derived from the records by `judge`, live and again by the audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdicted {
    pub check: String,
    /// The draft's section (draft-ietf-httpapi-idempotency-key-header-07).
    pub section: String,
    pub verdict: Verdict,
    pub expected: String,
    pub observed: String,
    /// Effects the check caused, when they were counted.
    pub effects: Option<i64>,
    /// In Jepsen's words: `duplicate` when one request took effect more than once.
    pub anomalies: Vec<String>,
}

/// `probe.json`: the run, what it was asked, and each check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeFile {
    pub url: String,
    /// The probe's own command line (`crashlab probe …`), credentials redacted.
    pub command: Vec<String>,
    pub crashlab_version: String,
    pub git: Option<crate::engine::evidence::Git>,
    pub template: super::template::Template,
    pub key_header: String,
    pub key_format: super::template::KeyFormat,
    pub settings: super::checks::Settings,
    /// The prefix of every key this run sent.
    pub run_id: String,
    /// Checks not begun: the probe's time ran out first.
    pub unrun: Vec<String>,
    pub checks: Vec<Verdicted>,
    pub ok: bool,
    pub wall_ms: f64,
    /// The probe's own peak resident memory.
    pub max_rss_kb: i64,
}

/// The escaping of every byte a record shows from the wire: printable ASCII (space
/// included) as it is, a backslash doubled, every other byte `\xNN`. No reply can put a
/// control byte into a table, a terminal or a JUnit report.
pub fn shown(bytes: &[u8]) -> String {
    crate::common::escaped(bytes, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_bytes_hold_no_control_byte() {
        assert_eq!(shown(b"ok {\"a\": 1}"), "ok {\"a\": 1}");
        assert_eq!(shown(b"\x1b[31m\r\n\\"), "\\x1b[31m\\x0d\\x0a\\\\");
        assert_eq!(shown("é".as_bytes()), "\\xc3\\xa9");
    }

    #[test]
    fn records_refuse_a_field_added_by_hand() {
        let reading = r#"{"check":"retry","at":"after","count":1,"detail":"1","ms":2.0}"#;
        assert!(serde_json::from_str::<Reading>(reading).is_ok());
        let added = r#"{"check":"retry","at":"after","count":1,"detail":"1","ms":2.0,"ok":true}"#;
        assert!(serde_json::from_str::<Reading>(added).is_err());
        let verdict: Verdict = serde_json::from_str("\"PASS\"").unwrap();
        assert_eq!(verdict, Verdict::Pass);
        assert_eq!(
            serde_json::to_string(&Outcome::TooLarge).unwrap(),
            "\"too-large\""
        );
        assert_eq!(
            serde_json::to_string(&Cut::MidBody).unwrap(),
            "\"mid-body\""
        );
    }
}
