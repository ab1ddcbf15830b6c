//! One request, from hyper's parsed head to the response: route it, judge its headers, read
//! its body within the limits, hand it to a worker, print the `REQUEST` line.
//!
//! What reaches this code has passed hyper's parser: a well-formed head within the header
//! limits, and one unambiguous body length (hyper answers malformed, negative, overflowing or
//! conflicting `Content-Length` itself, with 400). The checks here are the lab's own.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body, Bytes, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;

use super::worker::{Lease, Pool};
use super::{Answer, Mode, BODY_READ_MS, WORKER_WAIT_MS};
use crate::labs::http_dispatch::model::{escaped, key_bytes_problem, key_problem, BODY_BYTES_MAX};
use crate::out;

/// What every request needs: the receiver's settings and its workers.
pub(super) struct Shared {
    pub mode: Mode,
    pub delay_ms: u64,
    pub pool: Arc<Pool>,
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Answer one request (never an error: every problem is an HTTP answer).
pub(super) async fn respond(shared: &Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (head, body) = request.into_parts();
    let url = head.uri.to_string();
    let keys: Vec<&[u8]> = head
        .headers
        .get_all(IDEMPOTENCY_KEY)
        .iter()
        .map(HeaderValue::as_bytes)
        .collect();
    let mut body = Received {
        incoming: body,
        whole: false,
    };
    let answer = route(shared, &head.method, &url, &keys, &mut body).await;
    // A body left unread (refused before reading, or cut short) ends the connection: its
    // bytes must never be taken for the next request.
    let unread = !(body.whole || body.incoming.is_end_stream());
    let Answer {
        status,
        body: text,
        problem,
        replayed,
        note,
    } = answer;
    out::line(&format!(
        "REQUEST {} {} key={} -> {status} {note}",
        head.method,
        escaped(url.as_bytes()),
        keys.first().map_or("-".to_string(), |k| escaped(k))
    ));
    out::flush();
    let content_type = if problem {
        "application/problem+json"
    } else {
        "application/json"
    };
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if replayed {
        headers.insert("idempotency-replayed", HeaderValue::from_static("true"));
    }
    if unread {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request's body and whether it was read to its end.
struct Received {
    incoming: Incoming,
    whole: bool,
}

async fn route(
    shared: &Shared,
    method: &Method,
    url: &str,
    keys: &[&[u8]],
    body: &mut Received,
) -> Answer {
    let declared = body.incoming.size_hint().lower();
    if *method == Method::POST && url == "/effect" {
        return post(shared, keys, body).await;
    }
    // No other route reads a body; one declared too large is refused before anything else.
    if declared > BODY_BYTES_MAX as u64 {
        return too_large();
    }
    match (method, url) {
        (&Method::GET, "/health") => Answer::json(
            json!({"mode": shared.mode.name()}).to_string(),
            "health".to_string(),
        ),
        (&Method::GET, path) if path.starts_with("/effect/") => {
            let key = &path["/effect/".len()..];
            if let Some(problem) = key_problem(key) {
                return Answer::problem(400, "invalid key", problem);
            }
            let key = key.to_string();
            with_worker(shared, move |worker| worker.lookup(&key)).await
        }
        (_, "/effect") | (_, "/health") => Answer::problem(
            405,
            "method not allowed",
            format!("{method} {} is not served", escaped(url.as_bytes())),
        ),
        _ => Answer::problem(
            404,
            "not found",
            format!("{method} {} is not served", escaped(url.as_bytes())),
        ),
    }
}

async fn post(shared: &Shared, keys: &[&[u8]], body: &mut Received) -> Answer {
    if keys.len() > 1 {
        return Answer::problem(
            400,
            "invalid Idempotency-Key",
            format!(
                "the request has {} Idempotency-Key headers; exactly one is allowed",
                keys.len()
            ),
        );
    }
    if let Some(problem) = keys.first().and_then(|k| key_bytes_problem(k)) {
        return Answer::problem(400, "invalid Idempotency-Key", problem);
    }
    // Checked above: the key is ASCII.
    let key = keys
        .first()
        .map(|k| String::from_utf8(k.to_vec()).expect("a valid key is ASCII"));
    if shared.mode == Mode::Keyed && key.is_none() {
        return Answer::problem(
            400,
            "missing Idempotency-Key",
            "this receiver is keyed: POST /effect needs an Idempotency-Key header".to_string(),
        );
    }
    // The declared length first: a body that cannot fit is refused without reading a byte.
    if body.incoming.size_hint().lower() > BODY_BYTES_MAX as u64 {
        return too_large();
    }
    // Read through the limiter: a chunked body is refused as soon as it passes the bound.
    let limited = Limited::new(&mut body.incoming, BODY_BYTES_MAX);
    let read = tokio::time::timeout(Duration::from_millis(BODY_READ_MS), limited.collect()).await;
    let bytes = match read {
        Err(_) => {
            return Answer::problem(
                408,
                "request timeout",
                format!("the body did not arrive within {BODY_READ_MS} ms; nothing applied"),
            )
        }
        Ok(Err(e)) if e.is::<LengthLimitError>() => return too_large(),
        // A body cut short (the connection closed mid-chunk or before Content-Length bytes)
        // lands here: never applied.
        Ok(Err(e)) => {
            return Answer::problem(
                400,
                "unreadable body",
                format!("{}; nothing applied", causes(e.as_ref())),
            )
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    body.whole = true;
    assert!(bytes.len() <= BODY_BYTES_MAX);
    let Ok(text) = String::from_utf8(bytes.to_vec()) else {
        return Answer::problem(400, "body not UTF-8", "the body must be UTF-8 text".into());
    };
    with_worker(shared, move |worker| worker.post(key.as_deref(), &text)).await
}

/// An error and its sources on one line (hyper's own text is terse: "error reading a body
/// from connection"; the source says why). At most a few levels, as a chain may be long.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    for _ in 0..4 {
        let Some(e) = source else { break };
        text.push_str(&format!(": {e}"));
        source = e.source();
    }
    text
}

fn too_large() -> Answer {
    Answer::problem(
        413,
        "content too large",
        format!("the body may have at most {BODY_BYTES_MAX} bytes"),
    )
}

/// Run `work` on a leased worker, on a blocking thread (SQLite and `--delay-ms` block).
async fn with_worker(
    shared: &Shared,
    work: impl FnOnce(&Lease) -> Answer + Send + 'static,
) -> Answer {
    let wait_ms = WORKER_WAIT_MS + shared.delay_ms;
    let Some(lease) = shared.pool.lease(Duration::from_millis(wait_ms)).await else {
        return Answer::problem(
            503,
            "receiver busy",
            format!("no worker came free within {wait_ms} ms; nothing applied"),
        );
    };
    match tokio::task::spawn_blocking(move || work(&lease)).await {
        Ok(answer) => answer,
        Err(e) => Answer::problem(500, "internal error", format!("the worker failed: {e}")),
    }
}
