//! How the probe sees the effects of its requests on the endpoint's side: a GET that answers
//! a count or a list (`--effects-url`), or a command that prints a count (`--effects-cmd`,
//! e.g. `sqlite3 shop.db 'select count(*) from payments'` or a `psql -Atc` query). `{key}` in
//! either is replaced by the check's key, which makes the count per key; without it the
//! count is of everything, and the probe counts what each check added.
//!
//! Every reading is bounded: the GET like any probe request, the command by a timeout (its
//! whole process group killed after it), 4 KiB of its stdout and 1 KiB of its stderr kept.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::client;
use super::records::shown;
use super::target::Url;

/// Largest effects answer (a list of effects) read.
const ANSWER_BYTES_MAX: usize = 64 * 1024;
const STDOUT_BYTES_MAX: usize = 4096;
const STDERR_BYTES_MAX: usize = 1024;
/// How often a running command is looked at.
const POLL_MS: u64 = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Url {
        template: String,
        pointer: Option<String>,
    },
    Cmd {
        template: String,
    },
}

impl Source {
    /// Counted per key (`{key}` in the URL or command)?
    pub fn per_key(&self) -> bool {
        match self {
            Source::Url { template, .. } | Source::Cmd { template } => template.contains("{key}"),
        }
    }

    /// Read the count now. `key` is the check's key; None when the check sends no valid one
    /// (then a per-key source has nothing to count, and says so).
    pub fn read(&self, key: Option<&str>, timeout: Duration) -> Result<i64, String> {
        let fill = |t: &str| match key {
            Some(k) => Ok(t.replace("{key}", k)),
            None if t.contains("{key}") => {
                Err("counted per key, and this request has no valid key".to_string())
            }
            None => Ok(t.to_string()),
        };
        match self {
            Source::Url { template, pointer } => get(&fill(template)?, pointer.as_deref(), timeout),
            Source::Cmd { template } => run(&fill(template)?, timeout),
        }
    }
}

/// A count from an answer: an integer, a JSON number or a JSON list (its length), at
/// `pointer` (RFC 6901) in a JSON document when given.
pub fn count_of(bytes: &[u8], pointer: Option<&str>) -> Result<i64, String> {
    let said = || {
        format!(
            "answered '{}', not a count or a list",
            shown(&bytes[..bytes.len().min(120)])
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|_| said())?.trim();
    if pointer.is_none() {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n);
        }
    }
    let document: serde_json::Value = serde_json::from_str(text).map_err(|_| said())?;
    let value = match pointer {
        Some(p) => document
            .pointer(p)
            .ok_or_else(|| format!("{}: nothing at {p}", said()))?,
        None => &document,
    };
    match value {
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(said),
        serde_json::Value::Array(a) => Ok(a.len() as i64),
        _ => Err(said()),
    }
}

fn get(url: &str, pointer: Option<&str>, timeout: Duration) -> Result<i64, String> {
    let url = Url::parse(url, "--effects-url").map_err(|e| crate::fail::one_line(&e))?;
    let addr = url
        .resolve(timeout)
        .map_err(|e| crate::fail::one_line(&e))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/plain\r\nConnection: close\r\n\r\n",
        url.target, url.authority
    );
    let deadline = Instant::now() + timeout;
    let got = client::exchange(
        addr,
        request.as_bytes(),
        false,
        deadline,
        ANSWER_BYTES_MAX as u64,
        ANSWER_BYTES_MAX,
    );
    let Some(response) = got.response.filter(|_| got.detail.is_empty()) else {
        return Err(format!(
            "GET {}: {} ({})",
            url.text,
            got.outcome.word(),
            got.detail
        ));
    };
    if !(200..300).contains(&response.status) {
        return Err(format!(
            "GET {}: status {}: {}",
            url.text, response.status, response.body_excerpt
        ));
    }
    count_of(&got.kept, pointer)
}

/// `sh -c COMMAND` in its own process group, killed whole after `timeout`.
fn run(command: &str, timeout: Duration) -> Result<i64, String> {
    let mut shell = Command::new("sh");
    shell
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::servers::process::die_with_parent(&mut shell, rustix::process::Signal::KILL);
    let mut child = shell
        .spawn()
        .map_err(|e| format!("--effects-cmd: starting sh: {e}"))?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out = drain(stdout, STDOUT_BYTES_MAX);
    let err = drain(stderr, STDERR_BYTES_MAX);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline && crate::interrupt::caught().is_none() => {
                std::thread::sleep(Duration::from_millis(POLL_MS));
            }
            Ok(None) | Err(_) => {
                let _ = crate::servers::process::kill_tree(&mut child);
                return Err(format!(
                    "--effects-cmd ran past {} ms and was killed",
                    timeout.as_millis()
                ));
            }
        }
    };
    // The shell has ended; what it started and left running may still hold the pipes.
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(100);
    let (Ok(out), Ok(err)) = (
        out.recv_timeout(left),
        err.recv_timeout(Duration::from_millis(100)),
    ) else {
        return Err("--effects-cmd left a process holding its output open".to_string());
    };
    if !status.success() {
        return Err(format!(
            "--effects-cmd exited {}: {}",
            status
                .code()
                .map_or("by a signal".to_string(), |c| c.to_string()),
            shown(err.trim_ascii())
        ));
    }
    let text = std::str::from_utf8(&out).unwrap_or("").trim();
    text.parse::<i64>().map_err(|_| {
        format!(
            "--effects-cmd printed '{}', not a count",
            shown(text.as_bytes())
        )
    })
}

/// Read a pipe to its end on a thread, keeping its first `max` bytes.
fn drain<R: Read + Send + 'static>(pipe: Option<R>, max: usize) -> mpsc::Receiver<Vec<u8>> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut pipe) = pipe {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = max.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
            }
        }
        let _ = send.send(kept);
    });
    receive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_numbers_lists_or_what_a_pointer_names() {
        assert_eq!(count_of(b" 3\n", None), Ok(3));
        assert_eq!(count_of(b"[{\"id\":1},{\"id\":2}]", None), Ok(2));
        assert_eq!(
            count_of(br#"{"key":"K","effects":2}"#, Some("/effects")),
            Ok(2)
        );
        assert_eq!(count_of(br#"{"items":[1,2,3]}"#, Some("/items")), Ok(3));
        assert!(count_of(b"\x1b[2J three", None)
            .unwrap_err()
            .contains("\\x1b[2J three"));
        assert!(count_of(br#"{"a":1}"#, None).is_err());
        assert!(count_of(br#"{"a":1}"#, Some("/b"))
            .unwrap_err()
            .contains("nothing at /b"));
    }

    #[test]
    fn a_command_prints_a_count_fails_or_is_killed_in_time() {
        let cmd = |t: &str| Source::Cmd { template: t.into() };
        assert_eq!(
            cmd("echo {key} | wc -c").read(Some("abc"), Duration::from_secs(5)),
            Ok(4)
        );
        let e = cmd("echo nope >&2; exit 3")
            .read(None, Duration::from_secs(5))
            .unwrap_err();
        assert!(e.contains("exited 3: nope"), "{e}");
        let e = cmd("echo many")
            .read(None, Duration::from_secs(5))
            .unwrap_err();
        assert!(e.contains("printed 'many'"), "{e}");
        let started = Instant::now();
        let e = cmd("sleep 30")
            .read(None, Duration::from_millis(200))
            .unwrap_err();
        assert!(e.contains("killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let e = cmd("echo {key}")
            .read(None, Duration::from_secs(5))
            .unwrap_err();
        assert!(e.contains("per key"), "{e}");
    }
}
