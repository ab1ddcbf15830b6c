//! `crashlab probe` against endpoints that misbehave on purpose, served by this test on
//! 127.0.0.1: a reply that declares 1 GiB, a reply that never ends, a server that accepts
//! and never answers. Every exchange ends within its bound and is recorded as what it was,
//! the probe's peak memory stays under 64 MiB, nothing panics, and the evidence audits.
//! Then bad input: one line, the documented exit, nothing left behind.

mod common;
mod probing;

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{code, crashlab, stderr, stdout};
use probing::records;

/// The probe's peak resident memory must stay below this, whatever the endpoint sends.
const RSS_KIB_MAX: i64 = 64 * 1024;
/// What one hostile connection writes at most (it stops earlier when the probe hangs up).
const WRITE_BYTES_MAX: u64 = 4 << 30;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Hostile {
    /// `Content-Length: 1073741824`, then zeros as fast as the socket takes them.
    GiB,
    /// A chunked body whose chunks never end.
    Endless,
    /// Reads the request and never writes a byte.
    Silent,
}

/// A hostile server: every connection on its own thread, until dropped.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(kind: Hostile) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let flag = Arc::clone(&flag);
                        std::thread::spawn(move || serve(kind, stream, &flag));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { addr, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(kind: Hostile, mut s: TcpStream, stop: &AtomicBool) {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") && !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    let (head, chunk): (&[u8], Vec<u8>) = match kind {
        Hostile::GiB => (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n",
            vec![0; 65536],
        ),
        Hostile::Endless => (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            [&b"10000\r\n"[..], &[b'z'; 65536], b"\r\n"].concat(),
        ),
        Hostile::Silent => {
            // Hold the connection, answer nothing, until the probe hangs up.
            while !stop.load(Ordering::Relaxed) {
                if let Ok(0) = s.read(&mut buf) {
                    return;
                }
            }
            return;
        }
    };
    if s.write_all(head).is_err() {
        return;
    }
    let mut written = 0u64;
    while written < WRITE_BYTES_MAX && !stop.load(Ordering::Relaxed) {
        if s.write_all(&chunk).is_err() {
            return;
        }
        written += chunk.len() as u64;
    }
}

/// Run the probe as a child and take its peak memory from wait4 (exit, stdout, max RSS KiB).
// Reaped by wait4 itself, which std's `Child::wait` cannot do (it gives no rusage).
#[allow(clippy::zombie_processes)]
fn probe_measured(dir: &Path, args: &[&str]) -> (i32, String, String, i64) {
    let child = Command::new(common::BIN)
        .arg("probe")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(fs::File::create(dir.join("out.txt")).unwrap())
        .stderr(fs::File::create(dir.join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter; wait4 writes only into the two we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid);
    assert!(
        libc::WIFEXITED(status),
        "the probe ended by a signal: {status}"
    );
    let out = fs::read_to_string(dir.join("out.txt")).unwrap();
    let err = fs::read_to_string(dir.join("err.txt")).unwrap();
    (libc::WEXITSTATUS(status), out, err, usage.ru_maxrss)
}

#[test]
fn hostile_upstreams_are_bounded_recorded_and_never_a_panic() {
    // The declared gigabyte is refused on its head, which comes at once: a timeout long
    // enough for this test's own server on a busy machine, never waited out. A body that
    // never ends is cut at the cap, or by the deadline when the cap is not reached first
    // (16 MiB in 300 ms): either is what happened, and neither is an answer. The silent
    // server's every request waits its whole timeout, so that one is short.
    for (kind, timeout_ms, outcomes) in [
        (Hostile::GiB, "5000", &["too-large"][..]),
        (Hostile::Endless, "300", &["too-large", "timeout"][..]),
        (Hostile::Silent, "300", &["timeout"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let server = Server::start(kind);
        let url = format!("http://{}/effect", server.addr);
        let (exit, out, err, rss_kib) = probe_measured(
            d,
            &[
                &url,
                "--timeout-ms",
                timeout_ms,
                // The largest cap: the proxy holds a whole reply, so this is the worst case.
                "--response-bytes-max",
                "16777216",
                "--out",
                "ev",
            ],
        );
        assert_eq!(exit, 1, "{kind:?}: {out}\n{err}");
        assert!(!err.contains("panicked"), "{kind:?}: {err}");
        assert!(rss_kib < RSS_KIB_MAX, "{kind:?}: peak RSS {rss_kib} KiB");
        eprintln!("{kind:?}: the probe's peak RSS {rss_kib} KiB");
        let exchanges = records(&d.join("ev/exchanges.jsonl"));
        assert!(!exchanges.is_empty());
        for e in &exchanges {
            if e["step"] == "lost" {
                // The proxy read no whole reply either, and cut nothing into the window.
                let upstream = e["proxy"]["upstream"].as_str().unwrap();
                assert!(outcomes.contains(&upstream), "{kind:?}: {e}");
                assert!(e["proxy"]["upstream_done_ms"].is_null(), "{e}");
            } else {
                let outcome = e["outcome"].as_str().unwrap();
                assert!(outcomes.contains(&outcome), "{kind:?}: {e}");
            }
        }
        let first = &exchanges[0];
        if kind == Hostile::GiB {
            let detail = first["detail"].as_str().unwrap();
            assert!(detail.contains("Content-Length 1073741824"), "{detail}");
        }
        // Every row between the header and the last line: nothing passes against it.
        let rows: Vec<&str> = out
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with("FAIL:"))
            .collect();
        assert_eq!(rows.len(), 12, "{out}");
        for line in rows {
            let verdict = line.split_whitespace().nth(2).unwrap();
            assert!(["FAIL", "SKIP"].contains(&verdict), "{kind:?}: {line}");
        }
        let audit = crashlab(d, &["audit", "ev"]);
        assert_eq!(code(&audit), 0, "{kind:?}: {}", stdout(&audit));
        drop(server);
    }
}

#[test]
fn bad_input_is_one_line_with_its_exit_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Nothing listens on port 1 of 127.0.0.1: the endpoint cannot be reached.
    let out = crashlab(d, &["probe", "http://127.0.0.1:1/effect", "--out", "ev"]);
    assert_eq!(code(&out), 69, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("crashlab: endpoint http://127.0.0.1:1/effect cannot be reached")
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!d.join("ev").exists() && !d.join("ev.partial").exists());
    let server = Server::start(Hostile::Silent);
    let url = format!("http://{}/effect", server.addr);
    fs::create_dir(d.join("taken")).unwrap();
    for (args, says) in [
        (vec!["https://example.com/x"], "https is not probed"),
        (
            vec![&url, "--header", "Host: evil"],
            "the probe sets Host itself",
        ),
        (
            vec![&url, "--key-ttl-ms", "600000"],
            "do not fit in --probe-timeout-ms 120000",
        ),
        (vec![&url, "--concurrency", "65"], "65 is not in 2..=64"),
        (vec![&url, "--out", "taken"], "already exists"),
        (
            vec![&url, "--junit", "nowhere/probe.xml"],
            "not a file in an existing directory",
        ),
        (
            vec![&url, "--effects-cmd", "exit 3", "--out", "cmd"],
            "the effects cannot be read before the probe begins",
        ),
        (vec![&url, "--effects-pointer", "/n"], "--effects-url"),
    ] {
        let mut all = vec!["probe"];
        all.extend(args.iter().copied());
        let out = crashlab(d, &all);
        assert_eq!(code(&out), 2, "{all:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{all:?}: {err}");
        assert!(
            err.starts_with("crashlab: ") && err.contains(says),
            "{all:?}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{all:?}");
    }
    // Nothing was written: no evidence, no partial directory.
    let mut left: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["taken".to_string()]);
}

#[test]
fn sigint_stops_a_probe_waiting_on_a_silent_server_and_removes_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(Hostile::Silent);
    let url = format!("http://{}/effect", server.addr);
    // Every request would wait a minute: only the signal can end this run early.
    let child = Command::new(common::BIN)
        .args(["probe", &url, "--timeout-ms", "60000", "--out", "ev"])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run has begun once its partial directory exists (bounded wait).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !d.join("ev.partial").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the probe never began"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("crashlab: interrupted by SIGINT; removed ev.partial"),
        "{err}"
    );
    assert!(!d.join("ev").exists() && !d.join("ev.partial").exists());
}

#[test]
fn checks_not_begun_within_the_probe_timeout_fail_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(Hostile::Silent);
    let url = format!("http://{}/effect", server.addr);
    // Each request waits 400 ms for nothing; the probe has a second in all.
    let args = [
        "probe",
        &url,
        "--timeout-ms",
        "400",
        "--probe-timeout-ms",
        "1000",
        "--key-ttl-ms",
        "100",
        "--out",
        "ev",
    ];
    let out = crashlab(d, &args);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let table = stdout(&out);
    let last = probing::row(&table, "key-expiry");
    assert_eq!(last.0, "FAIL", "{table}");
    assert!(
        last.1.contains("not run: --probe-timeout-ms 1000 ran out"),
        "{table}"
    );
    let probe: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("ev/probe.json")).unwrap()).unwrap();
    let unrun = probe["unrun"].as_array().unwrap();
    assert!(unrun.iter().any(|c| c == "key-expiry"), "{probe}");
    let exchanges = records(&d.join("ev/exchanges.jsonl"));
    assert!(exchanges.iter().all(|e| !unrun.contains(&e["check"])));
    let audit = crashlab(d, &["audit", "ev"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
}
