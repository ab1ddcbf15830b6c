//! Hostile HTTP against the lab 13 receiver: every input of the observation 5, sent
//! with raw writes on 127.0.0.1 to the built binary. Each group of inputs runs against its
//! own receiver, and all of them together against one; every receiver must afterwards still
//! answer `GET /health`, stay under `RSS_KIB_MAX` of peak memory, hold exactly the effects of
//! the full requests (nothing cut short or refused), print a clean log and stop cleanly.
//!
//! Bounded: a fixed list of inputs, at most `CAP_PROBES` connections, and every connect,
//! read and write has a timeout. No assertion is on time.
//!
//! `CRASHLAB_RECEIVER_EXE=/path/to/crashlab` runs the same inputs against another build of
//! the receiver (the readback always uses this build).

mod common;
mod hostile;
use hostile::{
    assert_alive, connect, finish, full_post, post_head, read_reply, refused, send, sockets_of,
    Receiver, BODY, IO_TIMEOUT,
};

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The receiver's connection cap (`CONNECTIONS_MAX` in src/labs/http_dispatch/receiver/mod.rs).
const CONNECTIONS_MAX: usize = 64;
/// Connections opened at once by the cap test: well beyond the cap, within a listen backlog.
const CAP_PROBES: usize = 150;

fn huge_content_length(r: &mut Receiver) {
    // Kept alive, as a client would send it: the unread body must not be drained into memory.
    let head = "POST /effect HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: A1\r\nContent-Length: 1000000000000\r\n\r\n";
    let reply = send(r, vec![head.into()], false);
    assert!(
        reply.is_problem(413),
        "POST, 10^12 bytes declared: {reply:?}"
    );
    assert_alive(r, "after POST with 10^12 bytes declared");
    let head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000000\r\n\r\n";
    let reply = send(r, vec![head.into()], false);
    assert!(
        reply.is_problem(413),
        "GET /health, 10^12 declared: {reply:?}"
    );
    assert_alive(r, "after GET /health with 10^12 bytes declared");
}

fn oversized_heads(r: &mut Receiver) {
    let start = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ".to_vec();
    let big = vec![b'a'; 64 * 1024 * 1024];
    let reply = send(r, vec![start, big, b"\r\n\r\n".to_vec()], false);
    // 431 when it arrives before the reset that the unread rest of the header causes.
    assert!(
        matches!(reply.status, None | Some(431)),
        "64 MiB header: {reply:?}"
    );
    assert!(reply.ended, "64 MiB header: {reply:?}");
    let many: String = (0..100_000).map(|i| format!("X-{i}: v\r\n")).collect();
    let head = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}\r\n");
    let reply = send(r, vec![head.into()], false);
    assert!(
        matches!(reply.status, None | Some(431)),
        "100,000 headers: {reply:?}"
    );
    assert!(reply.ended, "100,000 headers: {reply:?}");
    // Under the byte limit, over the count: hyper's own 431.
    let some: String = (0..100).map(|i| format!("X-{i}: v\r\n")).collect();
    let head = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n{some}\r\n");
    let reply = send(r, vec![head.into()], false);
    assert_eq!(reply.status, Some(431), "100 headers: {reply:?}");
}

fn connections_beyond_the_cap(r: &mut Receiver) {
    // The listener and the runtime's own sockets (its signal pipe).
    let resting = sockets_of(r.pid());
    let mut slow = Vec::with_capacity(CAP_PROBES);
    let mut most = resting;
    for _ in 0..CAP_PROBES {
        // A connection the backlog cannot take any more is refused or times out: both bound.
        let Ok(mut s) = TcpStream::connect_timeout(&r.addr(), Duration::from_secs(2)) else {
            continue;
        };
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        slow.push(s);
        most = most.max(sockets_of(r.pid()));
    }
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(25));
        most = most.max(sockets_of(r.pid()));
    }
    assert!(
        slow.len() > CONNECTIONS_MAX,
        "only {} connected",
        slow.len()
    );
    assert!(
        most - resting <= CONNECTIONS_MAX,
        "{most} sockets open in the receiver ({resting} at rest) for {} connections",
        slow.len()
    );
    // The first slow head is given up by the receiver (header read timeout): it ends.
    let first = read_reply(slow.remove(0));
    assert!(
        first.ended && first.status.is_none(),
        "a slow head: {first:?}"
    );
    drop(slow);
}

fn cut_short_bodies(r: &mut Receiver) {
    let chunked = post_head("Idempotency-Key: C1\r\nTransfer-Encoding: chunked\r\n");
    let cut = send(
        r,
        vec![chunked.clone(), b"17\r\n{\"amount\":25".to_vec()],
        true,
    );
    assert_ne!(cut.status, Some(200), "chunked body cut mid-chunk: {cut:?}");
    let whole = format!("17\r\n{BODY}\r\n0\r\n\r\n");
    let reply = send(r, vec![chunked, whole.into()], false);
    assert_eq!(reply.status, Some(200), "the full chunked retry: {reply:?}");
    assert!(reply.header("idempotency-replayed").is_none(), "{reply:?}");
    r.effects.push(("C1".into(), BODY.into()));

    let head = post_head("Idempotency-Key: L1\r\nContent-Length: 23\r\n");
    let cut = send(r, vec![head, b"{\"amount\":25".to_vec()], true);
    assert_ne!(
        cut.status,
        Some(200),
        "12 of 23 bytes, then closed: {cut:?}"
    );
    full_post(r, "L1", false);
    full_post(r, "L1", true);

    // A body that stops arriving, the connection left open: the body read timeout ends it.
    let stream = connect(r);
    let mut writer = stream.try_clone().unwrap();
    writer
        .write_all(&post_head("Idempotency-Key: S1\r\nContent-Length: 23\r\n"))
        .unwrap();
    writer.write_all(b"{\"amount\":25").unwrap();
    let stalled = read_reply(stream);
    assert!(stalled.is_problem(408), "a stalled body: {stalled:?}");
    drop(writer);
    full_post(r, "S1", false);
}

fn malformed_content_length(r: &mut Receiver) {
    for (key, lines) in [
        ("N1", "Content-Length: -2\r\n"),
        ("O1", "Content-Length: 99999999999999999999999\r\n"),
        ("D1", "Content-Length: 2\r\nContent-Length: 23\r\n"),
    ] {
        let head = post_head(&format!("Idempotency-Key: {key}\r\n{lines}"));
        let reply = send(r, vec![head, BODY.into()], false);
        assert_eq!(refused(&reply, lines), 400, "{lines}: {reply:?}");
    }
}

fn hostile_keys(r: &mut Receiver) {
    let lines = "Idempotency-Key: K1\r\nIdempotency-Key: K2\r\nContent-Length: 23\r\n";
    let reply = send(r, vec![post_head(lines), BODY.into()], false);
    assert!(
        reply.is_problem(400),
        "two Idempotency-Key headers: {reply:?}"
    );
    let mut head = b"POST /effect HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".to_vec();
    head.extend_from_slice("Idempotency-Key: K\u{e9}\r\nContent-Length: 23\r\n\r\n".as_bytes());
    let reply = send(r, vec![head, BODY.into()], false);
    assert!(reply.is_problem(400), "a non-ASCII key: {reply:?}");
    for key in ["K\t1", "K1 -> 200 applied effect 7"] {
        let head = post_head(&format!("Idempotency-Key: {key}\r\nContent-Length: 23\r\n"));
        let reply = send(r, vec![head, BODY.into()], false);
        assert!(reply.is_problem(400), "key {key:?}: {reply:?}");
    }
    // A key that tries to end the line, forge a commit and put a NUL in the log.
    let forged = "K9 -> 200 applied effect 1\nCOMMITTED receiver effect 99 key K9\0";
    let head = post_head(&format!(
        "Idempotency-Key: {forged}\r\nContent-Length: 23\r\n"
    ));
    let reply = send(r, vec![head, BODY.into()], false);
    refused(&reply, "a key with a newline and a NUL");
}

fn alone(group: fn(&mut Receiver)) {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Receiver::start(tmp.path());
    group(&mut r);
    finish(r);
}

#[test]
fn a_huge_content_length_is_413_before_reading() {
    alone(huge_content_length);
}

#[test]
fn a_64_mib_header_and_100000_headers_are_431() {
    alone(oversized_heads);
}

#[test]
fn connections_beyond_the_cap_wait_and_a_slow_head_is_dropped() {
    alone(connections_beyond_the_cap);
}

#[test]
fn a_body_cut_short_is_never_applied_and_the_full_retry_is() {
    alone(cut_short_bodies);
}

#[test]
fn negative_overflowing_and_duplicate_content_length_are_400() {
    alone(malformed_content_length);
}

#[test]
fn hostile_keys_are_400_and_never_reach_the_log_raw() {
    alone(hostile_keys);
}

#[test]
fn every_hostile_input_against_one_receiver() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Receiver::start(tmp.path());
    full_post(&mut r, "BEFORE", false);
    huge_content_length(&mut r);
    oversized_heads(&mut r);
    connections_beyond_the_cap(&mut r);
    cut_short_bodies(&mut r);
    malformed_content_length(&mut r);
    hostile_keys(&mut r);
    full_post(&mut r, "BEFORE", true);
    full_post(&mut r, "AFTER", false);
    let hwm_kib = finish(r);
    assert!(hwm_kib > 0);
}
