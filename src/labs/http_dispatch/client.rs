//! The HTTP client side: one bounded POST or GET to the receiver on 127.0.0.1, with ureq.
//!
//! Connect and whole-request timeouts are bounded, redirects are not followed, a proxy from
//! the environment is never used (the receiver is loopback only), and the response body is
//! read up to a limit.

use std::time::Duration;

use anyhow::Result;

use crate::fail;
use crate::labs::http_dispatch::model::{check_key, url};
use crate::out;

/// Largest response body read.
pub const RESPONSE_BYTES_MAX: u64 = 16 * 1024;
pub const TIMEOUT_MS_MAX: u64 = 120_000;

/// What came back.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub replayed: bool,
    pub body: String,
}

/// How a request failed without a reply.
#[derive(Debug)]
pub enum NoReply {
    /// Nothing reached the receiver: refused, unreachable.
    Connect(String),
    /// The request may have reached it: reset, closed, timed out while waiting.
    Lost(String),
}

pub fn agent(timeout_ms: u64) -> ureq::Agent {
    assert!((1..=TIMEOUT_MS_MAX).contains(&timeout_ms));
    let timeout = Some(Duration::from_millis(timeout_ms));
    ureq::Agent::config_builder()
        .timeout_connect(timeout)
        .timeout_global(timeout)
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .into()
}

type Response = ureq::http::Response<ureq::Body>;

fn reply(result: Result<Response, ureq::Error>) -> Result<Reply, NoReply> {
    let mut response = result.map_err(classify)?;
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get("Idempotency-Replayed")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let body = response
        .body_mut()
        .with_config()
        .limit(RESPONSE_BYTES_MAX)
        .read_to_string()
        .map_err(|e| NoReply::Lost(format!("reading the reply body: {e}")))?;
    Ok(Reply {
        status,
        replayed,
        body,
    })
}

fn classify(error: ureq::Error) -> NoReply {
    match &error {
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
            NoReply::Connect(error.to_string())
        }
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            ) =>
        {
            NoReply::Connect(error.to_string())
        }
        ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => {
            NoReply::Connect(error.to_string())
        }
        _ => NoReply::Lost(error.to_string()),
    }
}

pub fn post(
    agent: &ureq::Agent,
    port: u16,
    key: Option<&str>,
    body: &str,
) -> Result<Reply, NoReply> {
    let mut request = agent
        .post(url(port, "/effect"))
        .content_type("application/json");
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    reply(request.send(body))
}

pub fn get(agent: &ureq::Agent, port: u16, path: &str) -> Result<Reply, NoReply> {
    reply(agent.get(url(port, path)).call())
}

/// `crashlab dispatch-post`: one request, printed as `STATUS <n>`, the replay header and the
/// body. Exit 0 whenever a reply came back (the status is the finding), 69 when none did.
pub fn post_command(
    port: u16,
    key: Option<&str>,
    body: &str,
    timeout_ms: u64,
    get_effect: bool,
) -> Result<u16> {
    if let Some(key) = key.filter(|_| get_effect) {
        check_key(key)?;
    }
    let agent = agent(timeout_ms);
    let result = match (get_effect, key) {
        (true, Some(key)) => get(&agent, port, &format!("/effect/{key}")),
        (true, None) => return Err(fail::usage("--get-effect needs --key")),
        (false, key) => post(&agent, port, key, body),
    };
    match result {
        Ok(reply) => {
            out::line(&format!("STATUS {}", reply.status));
            if reply.replayed {
                out::line("Idempotency-Replayed: true");
            }
            out::line(&reply.body);
            Ok(reply.status)
        }
        Err(NoReply::Connect(e)) | Err(NoReply::Lost(e)) => Err(fail::unavailable(format!(
            "receiver at 127.0.0.1:{port} gave no reply: {e}"
        ))),
    }
}
