//! HTTP/1.1 messages: heads parsed by httparse (hyper's parser) within `HEADERS_MAX` lines,
//! how a body is framed, and one whole response read from a `wire::Reader`.

use super::records::{shown, Outcome, Response};
use super::wire::{Body, Framing, Reader, Stop, HEADERS_MAX};

/// Interim (1xx) responses skipped before the final one.
const INTERIM_MAX: usize = 4;

/// A response head: its status, its lines as a record shows them, how its body is framed.
pub struct Head {
    pub status: u16,
    pub lines: Vec<String>,
    pub framing: Framing,
}

/// Parse a response head. `no_body`: the request was HEAD, so no body follows any status.
pub fn response_head(bytes: &[u8], no_body: bool) -> Result<Head, Stop> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) | Err(_) => {
            return Err(Stop::new(
                Outcome::Malformed,
                format!(
                    "not an HTTP/1.x response head: '{}'",
                    shown(first_line(bytes))
                ),
            ))
        }
    }
    let status = parsed.code.unwrap_or(0);
    let mut lines = vec![shown(first_line(bytes))];
    lines.extend(
        parsed
            .headers
            .iter()
            .map(|h| format!("{}: {}", h.name, shown(h.value))),
    );
    let framing = if no_body || status < 200 || status == 204 || status == 304 {
        Framing::Length(0)
    } else {
        framing(parsed.headers)?
    };
    Ok(Head {
        status,
        lines,
        framing,
    })
}

/// A request head's body length (the probe's own requests have one `Content-Length`).
pub fn request_length(bytes: &[u8]) -> Result<u64, Stop> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => match framing(parsed.headers)? {
            Framing::Length(n) => Ok(n),
            _ => Ok(0),
        },
        _ => Err(Stop::new(
            Outcome::Malformed,
            "not an HTTP/1.1 request head",
        )),
    }
}

fn framing(headers: &[httparse::Header]) -> Result<Framing, Stop> {
    fn named<'h, 'b>(
        headers: &'h [httparse::Header<'b>],
        name: &'static str,
    ) -> impl Iterator<Item = &'h httparse::Header<'b>> {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
    }
    if let Some(te) = named(headers, "transfer-encoding").last() {
        let last = te.value.rsplit(|b| *b == b',').next().unwrap_or(&[]);
        return Ok(match last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
            true => Framing::Chunked,
            false => Framing::Close,
        });
    }
    let mut length = None;
    for h in named(headers, "content-length") {
        let n = std::str::from_utf8(h.value)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Stop::new(
                    Outcome::Malformed,
                    format!("Content-Length '{}'", shown(h.value)),
                )
            })?;
        if length.is_some_and(|m| m != n) {
            return Err(Stop::new(
                Outcome::Malformed,
                "two different Content-Length headers",
            ));
        }
        length = Some(n);
    }
    Ok(length.map_or(Framing::Close, Framing::Length))
}

fn first_line(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(bytes.len());
    &bytes[..end.min(512)]
}

/// One response as read: its record (when a head came), its body's kept bytes or why the
/// read stopped, and where its final head ended among the reader's kept bytes.
pub struct Reply {
    pub response: Option<Response>,
    pub ended: Result<Vec<u8>, Stop>,
    pub head_end: usize,
}

/// Read one whole response (interim 1xx responses skipped): its head and body, within the
/// reader's deadline and `cap` body bytes. On a stop after the head, the head is returned
/// with it (the record shows what came).
pub fn response(reader: &mut Reader, no_body: bool, cap: u64, keep: usize) -> Reply {
    let stopped = |stop: Stop| Reply {
        response: None,
        ended: Err(stop),
        head_end: 0,
    };
    let mut head = None;
    for _ in 0..=INTERIM_MAX {
        let bytes = match reader.head() {
            Ok(b) => b,
            Err(stop) => return stopped(stop),
        };
        match response_head(&bytes, no_body) {
            Ok(h) if (100..200).contains(&h.status) && h.status != 101 => continue,
            Ok(h) => {
                head = Some(h);
                break;
            }
            Err(stop) => return stopped(stop),
        }
    }
    let Some(head) = head else {
        return stopped(Stop::new(Outcome::Malformed, "only interim responses"));
    };
    let head_end = reader.consumed();
    let mut body = Body::new(keep);
    let read = reader.body(head.framing, cap, &mut body);
    let mut record = Response {
        status: head.status,
        head: head.lines,
        body_bytes: body.bytes,
        body_sha256: None,
        body_excerpt: shown(&body.excerpt),
    };
    let ended = match read {
        Ok(()) => {
            let kept = std::mem::take(&mut body.kept);
            record.body_sha256 = Some(body.sha256());
            Ok(kept)
        }
        Err(stop) => Err(stop),
    };
    Reply {
        response: Some(record),
        ended,
        head_end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::wire::HEAD_BYTES_MAX;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    /// Serve `bytes` once on loopback, then close; read it back as a response.
    fn read_back(bytes: &'static [u8], cap: u64) -> (Option<Response>, Result<Vec<u8>, Stop>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.write_all(bytes);
        });
        let stream = TcpStream::connect(addr).unwrap();
        let mut reader = Reader::new(&stream, Instant::now() + Duration::from_secs(5));
        let got = response(&mut reader, false, cap, 64);
        server.join().unwrap();
        (got.response, got.ended)
    }

    #[test]
    fn bodies_by_length_chunks_and_close_digest_the_same() {
        let want = crate::common::sha256_hex(b"hello world");
        for wire in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"[..],
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n",
            b"HTTP/1.0 200 OK\r\n\r\nhello world",
        ] {
            let (record, kept) = read_back(wire, 1024);
            let record = record.unwrap();
            assert_eq!(record.status, 200);
            assert_eq!(record.body_sha256.as_deref(), Some(want.as_str()));
            assert_eq!(kept.unwrap(), b"hello world");
        }
    }

    #[test]
    fn a_short_body_a_large_one_and_no_reply_each_say_what_happened() {
        let (record, got) = read_back(
            b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nabc",
            1024,
        );
        assert_eq!(got.unwrap_err().outcome, Outcome::Truncated);
        let record = record.unwrap();
        assert_eq!(
            (record.status, record.body_bytes, record.body_sha256),
            (201, 3, None)
        );
        let (_, got) = read_back(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n",
            1024,
        );
        let stop = got.unwrap_err();
        assert_eq!(stop.outcome, Outcome::TooLarge, "{}", stop.detail);
        let (record, got) = read_back(b"", 1024);
        assert!(record.is_none());
        assert_eq!(got.unwrap_err().outcome, Outcome::Closed);
        let (_, got) = read_back(b"SSH-2.0-OpenSSH\r\n\r\n", 1024);
        assert_eq!(got.unwrap_err().outcome, Outcome::Malformed);
        let (_, got) = read_back(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            1024,
        );
        assert_eq!(got.unwrap_err().outcome, Outcome::Malformed);
    }

    #[test]
    fn a_head_past_its_bound_is_refused_without_growing() {
        let long: &'static [u8] = Box::leak(
            [
                &b"HTTP/1.1 200 OK\r\nX: "[..],
                &vec![b'a'; HEAD_BYTES_MAX + 10],
                b"\r\n\r\n",
            ]
            .concat()
            .into_boxed_slice(),
        );
        let (_, got) = read_back(long, 1024);
        assert_eq!(got.unwrap_err().outcome, Outcome::Malformed);
    }
}
