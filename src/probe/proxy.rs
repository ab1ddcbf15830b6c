//! The loopback proxy of the reply-lost checks: the window where the server has acted and
//! the client never hears of it.
//!
//! For one client connection it reads the whole request, forwards it to the upstream, and
//! reads the upstream's whole reply; only then does it cut the client's connection, by a
//! reset (SO_LINGER 0, then close: an RST, no byte of the reply), by a close (a FIN, no
//! byte), after the reply's head, or halfway through the body's bytes. Nothing is cut
//! before the upstream finished, so whatever the upstream commits before it replies is
//! committed when the client sees the cut. A fault injected before the upstream sees the
//! request (an abort in front of it) can never show this window.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

use super::client;
use super::message;
use super::records::{Cut, Outcome, Proxied};
use super::template::BODY_BYTES_MAX;
use super::wire::{self, Framing, Reader, Stop, HEAD_BYTES_MAX};

/// A proxy listening on 127.0.0.1, for one connection.
pub struct Proxy {
    listener: TcpListener,
}

impl Proxy {
    pub fn bind() -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        Ok(Proxy { listener })
    }

    pub fn addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve one client connection and cut its reply as `cut` says; `t0` is the probe's
    /// start, from which the record's times count. Every wait ends by `deadline`; the upstream's
    /// reply is read up to `cap` body bytes (the proxy holds it whole: one at a time).
    pub fn serve_one(
        self,
        upstream: SocketAddr,
        cut: Cut,
        deadline: Instant,
        cap: u64,
        t0: Instant,
    ) -> Proxied {
        let ms = || t0.elapsed().as_secs_f64() * 1000.0;
        let mut record = Proxied {
            cut,
            upstream: Outcome::ConnectFailed,
            upstream_response: None,
            upstream_detail: String::new(),
            upstream_done_ms: None,
            sent_bytes: 0,
            cut_ms: 0.0,
        };
        let failed = |mut record: Proxied, stop: Stop, what: &str| {
            record.upstream = stop.outcome;
            record.upstream_detail = format!("{what}: {}", stop.detail);
            record.cut_ms = ms();
            record
        };
        let client = match accept(&self.listener, deadline) {
            Ok(c) => c,
            Err(stop) => return failed(record, stop, "the client never connected"),
        };
        // The whole request, as the client wrote it.
        let request = {
            let mut reader =
                Reader::new(&client, deadline).keeping(HEAD_BYTES_MAX + BODY_BYTES_MAX);
            let read = reader.head().and_then(|head| {
                let n = message::request_length(&head)?;
                let mut body = wire::Body::new(0);
                reader.body(Framing::Length(n), BODY_BYTES_MAX as u64, &mut body)
            });
            if let Err(stop) = read {
                return failed(record, stop, "reading the client's request");
            }
            reader.raw()[..reader.consumed()].to_vec()
        };
        let no_body = request.starts_with(b"HEAD ");
        let reply = match client::connect(upstream, deadline) {
            Ok(up) => {
                if let Err(e) = (&up).write_all(&request) {
                    let stop = wire::io_stop(&e);
                    return failed(record, stop, "forwarding the request");
                }
                let interim = HEAD_BYTES_MAX * 5;
                let mut reader = Reader::new(&up, deadline).keeping(interim + cap as usize);
                let reply = message::response(&mut reader, no_body, cap, 0);
                let raw = reader.raw()[..reader.consumed()].to_vec();
                (reply, raw)
            }
            Err(stop) => return failed(record, stop, "connecting to the upstream"),
        };
        let (reply, raw) = reply;
        record.upstream_response = reply.response;
        match reply.ended {
            Ok(_) => {
                record.upstream = Outcome::Response;
                record.upstream_done_ms = Some(ms());
            }
            Err(stop) => {
                // No whole reply to withhold: the client's connection is closed, and the
                // check says the upstream never answered whole.
                let record = failed(record, stop, "the upstream's reply");
                drop(client);
                return record;
            }
        }
        // The upstream has answered whole: now, and only now, the cut. Its time is taken as
        // it begins, so it precedes whatever the client sees of it.
        record.cut_ms = ms();
        let send = match cut {
            Cut::Reset | Cut::Close => 0,
            Cut::AfterHead => reply.head_end,
            Cut::MidBody => reply.head_end + (raw.len() - reply.head_end) / 2,
        };
        assert!(send <= raw.len(), "the cut is inside the reply");
        if send > 0 {
            let _ = client.set_write_timeout(Some(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(std::time::Duration::from_millis(1)),
            ));
            if (&client).write_all(&raw[..send]).is_ok() {
                record.sent_bytes = send as u64;
            }
        }
        if cut == Cut::Reset {
            reset_on_close(&client);
        }
        drop(client);
        record
    }
}

/// Wait for the one connection until `deadline`.
fn accept(listener: &TcpListener, deadline: Instant) -> Result<TcpStream, Stop> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| wire::io_stop(&e))?;
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(wire::io_stop(&e)),
        }
        wire::ready(Some(listener.as_fd()), deadline)?;
    }
}

/// SO_LINGER with a zero time: the close that follows sends an RST and drops whatever is
/// unsent, instead of the orderly FIN.
fn reset_on_close(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `size_of::<linger>()` bytes from a valid linger that outlives
    // the call, on a descriptor this stream owns.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;

    /// An upstream that answers one request with `reply`, and the proxy in front of it.
    fn cut_once(cut: Cut, reply: &'static [u8]) -> (client::Got, Proxied) {
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let up_addr = upstream.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = upstream.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(5).any(|w| w == b"\r\n\r\nx") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(reply).unwrap();
        });
        let proxy = Proxy::bind().unwrap();
        let addr = proxy.addr().unwrap();
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(5);
        let proxied = std::thread::spawn(move || proxy.serve_one(up_addr, cut, deadline, 1024, t0));
        let got = client::exchange(
            addr,
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",
            false,
            deadline,
            1024,
            0,
        );
        server.join().unwrap();
        (got, proxied.join().unwrap())
    }

    #[test]
    fn each_cut_comes_after_the_whole_upstream_reply() {
        let reply: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
        for (cut, seen) in [
            (Cut::Reset, Outcome::Reset),
            (Cut::Close, Outcome::Closed),
            (Cut::AfterHead, Outcome::Truncated),
            (Cut::MidBody, Outcome::Truncated),
        ] {
            let (got, proxied) = cut_once(cut, reply);
            assert_eq!(got.outcome, seen, "{cut:?}: {}", got.detail);
            assert_eq!(
                proxied.upstream,
                Outcome::Response,
                "{}",
                proxied.upstream_detail
            );
            let done = proxied
                .upstream_done_ms
                .expect("the upstream answered whole");
            assert!(
                done <= proxied.cut_ms,
                "{cut:?}: cut at {} before done at {done}",
                proxied.cut_ms
            );
            let up = proxied.upstream_response.unwrap();
            assert_eq!((up.status, up.body_bytes), (200, 10));
            let sent = match cut {
                Cut::Reset | Cut::Close => 0,
                Cut::AfterHead => 39,
                Cut::MidBody => 44,
            };
            assert_eq!(proxied.sent_bytes, sent, "{cut:?}");
            if cut == Cut::MidBody {
                assert_eq!(got.response.unwrap().body_bytes, 5);
            }
        }
    }
}
