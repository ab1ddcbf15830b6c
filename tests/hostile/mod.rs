//! The hostile-HTTP tests' harness: a receiver started from the built binary, raw exchanges
//! on a TcpStream with every wait bounded, and the checks every receiver must pass at the end.
#![allow(dead_code)]

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, code, crashlab, stderr, stdout};

/// Peak RSS allowed to a receiver that took every input. At rest it holds about 12 MiB (a
/// debug build); its limits add at most 64 connections with a 16 KiB read buffer each and
/// the page caches of its workers, so about 20 MiB in the worst case. 64 MiB is three times
/// that, and an unbounded server passes it with the one 64 MiB header alone.
pub const RSS_KIB_MAX: u64 = 64 * 1024;
pub const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// The 23-byte body every full request carries.
pub const BODY: &str = r#"{"amount":25,"to":"R1"}"#;

pub fn exe() -> PathBuf {
    std::env::var_os("CRASHLAB_RECEIVER_EXE")
        .map_or_else(|| PathBuf::from(common::BIN), PathBuf::from)
}

pub struct Receiver {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
    /// (key, body) of every effect the inputs so far must have applied, in order.
    pub effects: Vec<(String, String)>,
}

impl Receiver {
    pub fn start(dir: &Path) -> Receiver {
        let log = fs::File::create(dir.join("receiver.stdout.txt")).unwrap();
        let child = Command::new(exe())
            .args(["receiver", "--db", "receiver.db", "--mode", "keyed"])
            .args(["--port-file", "receiver.port"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("the receiver starts");
        // Killed and reaped when dropped, also when READY never comes.
        let mut receiver = Receiver {
            child,
            port: 0,
            dir: dir.to_path_buf(),
            effects: Vec::new(),
        };
        let deadline = Instant::now() + IO_TIMEOUT;
        while Instant::now() < deadline {
            let text = fs::read_to_string(dir.join("receiver.stdout.txt")).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.starts_with("READY ")) {
                receiver.port = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                return receiver;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no READY line within {IO_TIMEOUT:?}");
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What came back on one connection.
#[derive(Debug)]
pub struct Reply {
    pub status: Option<u16>,
    pub head: String,
    pub body: String,
    /// The connection ended (EOF or reset) rather than the read timing out.
    pub ended: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    pub fn is_problem(&self, status: u16) -> bool {
        self.status == Some(status)
            && self.header("content-type").as_deref() == Some("application/problem+json")
            && self.body.contains(&format!("\"status\":{status}"))
    }
}

pub fn connect(r: &Receiver) -> TcpStream {
    let stream = TcpStream::connect_timeout(&r.addr(), Duration::from_secs(5)).expect("connects");
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream
}

/// Write `parts` from a second thread (a refusal may come while we still write), then close
/// our sending side when `half_close`, and read until the receiver ends the connection.
pub fn send(r: &Receiver, parts: Vec<Vec<u8>>, half_close: bool) -> Reply {
    let stream = connect(r);
    let mut writer = stream.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        for part in parts {
            for chunk in part.chunks(64 * 1024) {
                if writer.write_all(chunk).is_err() {
                    return;
                }
            }
        }
        if half_close {
            let _ = writer.shutdown(Shutdown::Write);
        }
    });
    let reply = read_reply(stream);
    writing.join().unwrap();
    reply
}

pub fn read_reply(mut stream: TcpStream) -> Reply {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let ended = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break false
            }
            Err(_) => break true,
        }
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok());
    Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
        ended,
    }
}

/// A POST /effect head with the given extra header lines (each ending in CRLF).
pub fn post_head(lines: &str) -> Vec<u8> {
    format!("POST /effect HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{lines}\r\n")
        .into_bytes()
}

pub fn full_post(r: &mut Receiver, key: &str, replay_expected: bool) {
    let head = post_head(&format!("Idempotency-Key: {key}\r\nContent-Length: 23\r\n"));
    let reply = send(r, vec![head, BODY.into()], false);
    assert_eq!(reply.status, Some(200), "full retry of {key}: {reply:?}");
    assert_eq!(
        reply.header("idempotency-replayed").is_some(),
        replay_expected
    );
    if !replay_expected {
        r.effects.push((key.to_string(), BODY.to_string()));
    }
}

/// A refusal: a 4xx status, then the connection ends (no crash, no hang).
pub fn refused(reply: &Reply, what: &str) -> u16 {
    let status = reply.status.unwrap_or(0);
    assert!((400..500).contains(&status), "{what}: {reply:?}");
    assert!(reply.ended, "{what}: the connection stays open: {reply:?}");
    status
}

pub fn assert_alive(r: &Receiver, when: &str) {
    let stream = TcpStream::connect_timeout(&r.addr(), Duration::from_secs(5));
    assert!(stream.is_ok(), "{when}: the receiver is gone: {stream:?}");
    let health = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let reply = send(r, vec![health.to_vec()], false);
    assert_eq!(reply.status, Some(200), "{when}: GET /health: {reply:?}");
}

pub fn sockets_of(pid: u32) -> usize {
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

/// Afterwards: it answers, its peak RSS is bounded, the effects are exactly the full
/// requests', its log is clean, and SIGTERM stops it cleanly. Returns the peak RSS in KiB.
pub fn finish(mut r: Receiver) -> u64 {
    assert_alive(&r, "afterwards");
    let status = fs::read_to_string(format!("/proc/{}/status", r.pid())).unwrap();
    let hwm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    eprintln!("receiver peak RSS (VmHWM): {hwm_kib} KiB");
    assert!(hwm_kib <= RSS_KIB_MAX, "peak RSS {hwm_kib} KiB");
    // SAFETY: kill has no memory effects; the child is not reaped yet, so the pid is ours.
    unsafe { libc::kill(r.pid() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + IO_TIMEOUT;
    let exit = loop {
        if let Some(exit) = r.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "no stop within {IO_TIMEOUT:?} of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(exit.code(), Some(0), "a clean stop");
    let log = fs::read(r.dir.join("receiver.stdout.txt")).unwrap();
    let bad = log
        .iter()
        .find(|&&b| !(b == b'\n' || (0x20..0x7f).contains(&b)));
    assert!(
        bad.is_none(),
        "a byte {bad:?} in the log that is not printable ASCII"
    );
    let log = String::from_utf8(log).unwrap();
    assert!(log.ends_with("STOPPED receiver (signal)\n"), "{log}");
    for line in log.lines().filter(|l| l.starts_with("REQUEST ")) {
        assert_eq!(line.matches(" -> ").count(), 1, "a forged field: {line}");
    }
    let committed: Vec<&str> = log.lines().filter(|l| l.starts_with("COMMITTED")).collect();
    assert_eq!(committed.len(), r.effects.len(), "{committed:?}");
    let conn = rusqlite::Connection::open_with_flags(
        r.dir.join("receiver.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT key, body FROM effects ORDER BY effect_id")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows, r.effects,
        "the effects are exactly the full requests'"
    );
    drop(conn);
    let out = crashlab(
        &r.dir,
        &[
            "dispatch-verify",
            "--intents",
            "intents.db",
            "--receipts",
            "receipts.db",
            "--history",
            "history.db",
            "--receiver",
            "receiver.db",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let state = common::readback(&out);
    let n = r.effects.len() as i64;
    assert_eq!(state["receiver"]["effects"], n, "{}", stdout(&out));
    assert_eq!(state["receiver"]["keys"], n);
    assert_eq!(state["receiver"]["ledger"], n);
    r.effects.clear();
    hwm_kib
}
