//! The probe's HTTP/1.1 client: one request per connection (`Connection: close`), written
//! whole, and the reply read within a deadline and a cap on its bytes. What it saw is said
//! exactly: a whole response, the end of the stream, a reset, a cut inside the reply, a
//! timeout, a reply too large, bytes that are no HTTP. Memory stays bounded whatever the
//! peer sends: the body is digested as it streams, only its first bytes kept.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::message;
use super::records::{Outcome, Response};
use super::wire::{self, Reader, Stop};

/// What one request got.
#[derive(Debug, Clone)]
pub struct Got {
    pub outcome: Outcome,
    pub response: Option<Response>,
    pub detail: String,
    /// The body's first `keep` bytes, when it came whole.
    pub kept: Vec<u8>,
}

impl Got {
    fn stopped(stop: Stop, response: Option<Response>) -> Got {
        Got {
            outcome: stop.outcome,
            response,
            detail: stop.detail,
            kept: Vec::new(),
        }
    }
}

/// Connect within the time left before `deadline`.
pub fn connect(addr: SocketAddr, deadline: Instant) -> Result<TcpStream, Stop> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Stop::new(Outcome::Timeout, "no time left to connect"));
    }
    let stream = TcpStream::connect_timeout(&addr, left)
        .map_err(|e| Stop::new(Outcome::ConnectFailed, format!("connecting to {addr}: {e}")))?;
    // Requests are small and written whole: send them at once.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Write `request` on `stream` and read the reply: at most `cap` body bytes, the first
/// `keep` of them kept. `no_body`: a HEAD request, whose reply has none.
pub fn send(
    stream: &TcpStream,
    request: &[u8],
    no_body: bool,
    deadline: Instant,
    cap: u64,
    keep: usize,
) -> Got {
    let left = deadline.saturating_duration_since(Instant::now());
    let _ = stream.set_write_timeout(Some(left.max(Duration::from_millis(1))));
    if let Err(e) = (&*stream).write_all(request) {
        return Got::stopped(wire::io_stop(&e), None);
    }
    let mut reader = Reader::new(stream, deadline);
    let reply = message::response(&mut reader, no_body, cap, keep);
    match reply.ended {
        Ok(kept) => Got {
            outcome: Outcome::Response,
            response: reply.response,
            detail: String::new(),
            kept,
        },
        Err(stop) => Got::stopped(stop, reply.response),
    }
}

/// `connect`, then `send`.
pub fn exchange(
    addr: SocketAddr,
    request: &[u8],
    no_body: bool,
    deadline: Instant,
    cap: u64,
    keep: usize,
) -> Got {
    match connect(addr, deadline) {
        Ok(stream) => send(&stream, request, no_body, deadline, cap, keep),
        Err(stop) => Got::stopped(stop, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn a_server_that_never_answers_is_a_timeout_and_a_closed_port_a_connect_failure() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut sink = [0u8; 1024];
            // Read the request, answer nothing, hold the connection until the client goes.
            while s.read(&mut sink).is_ok_and(|n| n > 0) {}
        });
        let started = Instant::now();
        let got = exchange(
            addr,
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            false,
            started + Duration::from_millis(200),
            1024,
            0,
        );
        assert_eq!(got.outcome, Outcome::Timeout, "{}", got.detail);
        assert!(started.elapsed() < Duration::from_secs(5));
        silent.join().unwrap();
        // The listener is gone: nothing accepts on that port now.
        let got = exchange(
            addr,
            b"GET / HTTP/1.1\r\n\r\n",
            false,
            Instant::now() + Duration::from_secs(2),
            1024,
            0,
        );
        assert_eq!(got.outcome, Outcome::ConnectFailed, "{}", got.detail);
    }
}
