//! HTTP/1.1 bytes on a plain socket, read within bounds: a head of at most `HEAD_BYTES_MAX`
//! bytes, a body of at most a cap (by `Content-Length`, chunks, or to the end of the
//! stream), and every read within the time left before a deadline. The probe's client reads
//! replies with it, its proxy reads both the request and the upstream's reply, and keeps the
//! raw bytes to forward. Parsing the heads is `message`'s.
//!
//! The same limits as lab 13's receiver (16 KiB and 64 header lines per head): a hostile
//! peer can make a read end, never make it grow.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::records::{shown, Outcome};
use crate::common::hex;

/// Largest head (request or status line and headers).
pub const HEAD_BYTES_MAX: usize = 16 * 1024;
/// Most header lines in one head.
pub const HEADERS_MAX: usize = 64;
/// Longest chunk-size line (size, extensions) or trailer line of a chunked body.
const CHUNK_LINE_MAX: usize = 1024;
/// Body bytes a record shows.
pub const EXCERPT_BYTES: usize = 200;
/// Bytes read from the socket at a time.
const READ_BYTES: usize = 16 * 1024;

/// Why a read ended before what it wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub outcome: Outcome,
    pub detail: String,
}

impl Stop {
    pub fn new(outcome: Outcome, detail: impl Into<String>) -> Stop {
        Stop {
            outcome,
            detail: detail.into(),
        }
    }
}

/// How a body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    /// To the end of the stream (a response without length or chunks).
    Close,
}

/// A body as it is read: its digest, its length and its first bytes; the bytes themselves
/// only up to `keep` (the effects source reads a count from them).
pub struct Body {
    hasher: Sha256,
    pub bytes: u64,
    pub excerpt: Vec<u8>,
    pub kept: Vec<u8>,
    keep: usize,
}

impl Body {
    pub fn new(keep: usize) -> Body {
        Body {
            hasher: Sha256::new(),
            bytes: 0,
            excerpt: Vec::new(),
            kept: Vec::new(),
            keep,
        }
    }

    fn take(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.bytes += data.len() as u64;
        let room = EXCERPT_BYTES.saturating_sub(self.excerpt.len());
        self.excerpt
            .extend_from_slice(&data[..room.min(data.len())]);
        let room = self.keep.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&data[..room.min(data.len())]);
    }

    pub fn sha256(self) -> String {
        hex(&self.hasher.finalize())
    }
}

/// Reads from one socket until a deadline; optionally keeps every byte it read (`raw`), up
/// to `raw_max`, for a proxy to forward.
pub struct Reader<'s> {
    stream: &'s TcpStream,
    deadline: Instant,
    /// Bytes read and not consumed yet: `pending[at..]`.
    pending: Vec<u8>,
    at: usize,
    raw: Option<Vec<u8>>,
    raw_max: usize,
}

impl<'s> Reader<'s> {
    pub fn new(stream: &'s TcpStream, deadline: Instant) -> Reader<'s> {
        Reader {
            stream,
            deadline,
            pending: Vec::new(),
            at: 0,
            raw: None,
            raw_max: 0,
        }
    }

    /// Keep every byte read, at most `max` (more: too large).
    pub fn keeping(mut self, max: usize) -> Reader<'s> {
        self.raw = Some(Vec::new());
        self.raw_max = max;
        self
    }

    /// Every byte read so far (with `keeping`).
    pub fn raw(&self) -> &[u8] {
        self.raw.as_deref().unwrap_or(&[])
    }

    /// How many of the kept bytes are consumed (the end of what was parsed so far); 0 when
    /// nothing is kept.
    pub fn consumed(&self) -> usize {
        match &self.raw {
            Some(raw) => raw.len() - (self.pending.len() - self.at),
            None => 0,
        }
    }

    /// One read into `pending`; Ok(0) is the end of the stream.
    fn fill(&mut self) -> Result<usize, Stop> {
        ready(Some(self.stream.as_fd()), self.deadline)?;
        let left = self.deadline.saturating_duration_since(Instant::now());
        // A zero timeout means "none" to the socket: at least a millisecond.
        let _ = self
            .stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))));
        if self.at > 0 && self.at == self.pending.len() {
            self.pending.clear();
            self.at = 0;
        }
        let mut chunk = [0u8; READ_BYTES];
        let n = loop {
            match (&*self.stream).read(&mut chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_stop(&e)),
            }
        };
        if let Some(raw) = &mut self.raw {
            if raw.len() + n > self.raw_max {
                return Err(Stop::new(
                    Outcome::TooLarge,
                    format!("more than {} bytes", self.raw_max),
                ));
            }
            raw.extend_from_slice(&chunk[..n]);
        }
        self.pending.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// The bytes of one head, up to and including its blank line.
    pub fn head(&mut self) -> Result<Vec<u8>, Stop> {
        let too_long = || {
            Stop::new(
                Outcome::Malformed,
                format!("a head over {HEAD_BYTES_MAX} bytes"),
            )
        };
        // Bytes of `pending[at..]` searched so far; a blank line may straddle two reads, so
        // the next search starts 3 bytes back. (`fill` only resets `pending` when nothing is
        // pending, so an offset from `at` stays valid across it.)
        let mut searched = 0usize;
        loop {
            let from = self.at + searched.saturating_sub(3);
            if let Some(i) = self.pending[from..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
            {
                let end = from + i + 4;
                if end - self.at > HEAD_BYTES_MAX {
                    return Err(too_long());
                }
                let head = self.pending[self.at..end].to_vec();
                self.at = end;
                return Ok(head);
            }
            searched = self.pending.len() - self.at;
            if searched > HEAD_BYTES_MAX {
                return Err(too_long());
            }
            if self.fill()? == 0 {
                return Err(match searched {
                    0 => Stop::new(Outcome::Closed, "the connection ended before a reply"),
                    _ => Stop::new(Outcome::Truncated, "the connection ended inside a head"),
                });
            }
        }
    }

    /// Up to `want` bytes of what is pending or arrives next; empty at the end of the stream.
    fn some(&mut self, want: usize) -> Result<&[u8], Stop> {
        if self.at == self.pending.len() && self.fill()? == 0 {
            return Ok(&[]);
        }
        let n = want.min(self.pending.len() - self.at);
        let from = self.at;
        self.at += n;
        Ok(&self.pending[from..from + n])
    }

    /// One CRLF-ended line of a chunked body (at most `CHUNK_LINE_MAX` bytes).
    fn line(&mut self) -> Result<Vec<u8>, Stop> {
        loop {
            if let Some(i) = self.pending[self.at..]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                let line = self.pending[self.at..self.at + i].to_vec();
                self.at += i + 2;
                return Ok(line);
            }
            if self.pending.len() - self.at > CHUNK_LINE_MAX {
                return Err(Stop::new(
                    Outcome::Malformed,
                    "a chunk line over 1024 bytes",
                ));
            }
            if self.fill()? == 0 {
                return Err(Stop::new(
                    Outcome::Truncated,
                    "the connection ended inside a chunk",
                ));
            }
        }
    }

    /// Read a body framed as `framing` into `body`, at most `cap` bytes of it.
    pub fn body(&mut self, framing: Framing, cap: u64, body: &mut Body) -> Result<(), Stop> {
        let too_large = |n: u64| Stop::new(Outcome::TooLarge, format!("a body over {n} bytes"));
        match framing {
            Framing::Length(n) if n > cap => Err(Stop::new(
                Outcome::TooLarge,
                format!("Content-Length {n} is over the cap of {cap} bytes"),
            )),
            Framing::Length(n) => {
                while body.bytes < n {
                    let want = (n - body.bytes).min(READ_BYTES as u64) as usize;
                    let data = self.some(want)?;
                    if data.is_empty() {
                        return Err(Stop::new(
                            Outcome::Truncated,
                            format!(
                                "the connection ended after {} of {n} body bytes",
                                body.bytes
                            ),
                        ));
                    }
                    body.take(data);
                }
                Ok(())
            }
            Framing::Close => loop {
                let data = self.some(READ_BYTES)?;
                if data.is_empty() {
                    return Ok(());
                }
                if body.bytes + data.len() as u64 > cap {
                    return Err(too_large(cap));
                }
                body.take(data);
            },
            Framing::Chunked => loop {
                let line = self.line()?;
                let size = chunk_size(&line)?;
                if size == 0 {
                    // Trailers, then the blank line; bounded like a head.
                    for _ in 0..HEADERS_MAX {
                        if self.line()?.is_empty() {
                            return Ok(());
                        }
                    }
                    return Err(Stop::new(Outcome::Malformed, "too many trailer lines"));
                }
                if body.bytes + size > cap {
                    return Err(too_large(cap));
                }
                let mut left = size;
                while left > 0 {
                    let data = self.some(left.min(READ_BYTES as u64) as usize)?;
                    if data.is_empty() {
                        return Err(Stop::new(
                            Outcome::Truncated,
                            "the connection ended inside a chunk",
                        ));
                    }
                    left -= data.len() as u64;
                    body.take(data);
                }
                if !self.line()?.is_empty() {
                    return Err(Stop::new(
                        Outcome::Malformed,
                        "a chunk not followed by CRLF",
                    ));
                }
            },
        }
    }
}

fn chunk_size(line: &[u8]) -> Result<u64, Stop> {
    let digits = line.split(|b| *b == b';').next().unwrap_or(&[]);
    let text = std::str::from_utf8(digits).unwrap_or("").trim();
    if text.is_empty() || text.len() > 15 {
        return Err(Stop::new(
            Outcome::Malformed,
            format!("chunk size '{}'", shown(line)),
        ));
    }
    u64::from_str_radix(text, 16)
        .map_err(|_| Stop::new(Outcome::Malformed, format!("chunk size '{}'", shown(line))))
}

/// Wait until `fd` is readable (None: only for the time to pass), the deadline passes, or
/// SIGINT or SIGTERM arrives: the interrupt module's self-pipe wakes this wait at once, so a
/// Ctrl-C never waits out a long `--timeout-ms`. Err says which of the last two it was.
pub fn ready(fd: Option<BorrowedFd<'_>>, deadline: Instant) -> Result<(), Stop> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    // SAFETY: the self-pipe is opened once and never closed while the process runs.
    let wake = crate::interrupt::wake_fd().map(|w| unsafe { BorrowedFd::borrow_raw(w) });
    loop {
        if let Some(signal) = crate::interrupt::caught() {
            let why = format!("interrupted by {}", crate::interrupt::name(signal));
            return Err(Stop::new(Outcome::Timeout, why));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Stop::new(
                Outcome::Timeout,
                "no more bytes before the deadline",
            ));
        }
        let mut polls: Vec<PollFd> = fd.iter().map(|f| PollFd::new(f, PollFlags::IN)).collect();
        polls.extend(wake.iter().map(|w| PollFd::new(w, PollFlags::IN)));
        let left = Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        // An interrupted poll (EINTR) just looks again.
        if poll(&mut polls, Some(&left)).is_ok() && fd.is_some() && !polls[0].revents().is_empty() {
            return Ok(());
        }
    }
}

/// How a socket error ends an exchange.
pub fn io_stop(e: &std::io::Error) -> Stop {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => {
            Stop::new(Outcome::Timeout, "no more bytes before the deadline")
        }
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => {
            Stop::new(Outcome::Reset, format!("the connection was reset ({e})"))
        }
        _ => Stop::new(Outcome::Reset, format!("the connection failed ({e})")),
    }
}
