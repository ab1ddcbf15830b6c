//! The endpoint: an `http://` URL, its address found within a bound, and whether anything
//! listens there.
//!
//! Plain HTTP only: the probe reads and cuts replies byte by byte on its own sockets. A
//! service behind TLS is probed on its plain listener (a local instance, a sidecar).

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::fail;

/// Longest URL taken.
const URL_BYTES_MAX: usize = 2048;

/// An `http://host[:port]/path?query` URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// As given (for the report).
    pub text: String,
    pub host: String,
    pub port: u16,
    /// `Host:` header value: the host, and the port when it is not 80.
    pub authority: String,
    /// The request target: path and query, `/` when the URL has none.
    pub target: String,
}

impl Url {
    pub fn parse(text: &str, what: &str) -> Result<Url> {
        let bad = |why: &str| fail::usage(format!("{what} '{text}': {why}"));
        if text.len() > URL_BYTES_MAX {
            return Err(bad(&format!("longer than {URL_BYTES_MAX} bytes")));
        }
        if text.bytes().any(|b| !(0x21..=0x7e).contains(&b)) {
            return Err(bad("holds a space, a control byte or a byte outside ASCII"));
        }
        let rest = if let Some(rest) = text.strip_prefix("http://") {
            rest
        } else if text.starts_with("https://") {
            return Err(bad(
                "https is not probed: the probe cuts replies on its own sockets; probe the service's plain-HTTP listener",
            ));
        } else {
            return Err(bad("not an http:// URL"));
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let target = target.split('#').next().unwrap_or("/").to_string();
        if authority.contains('@') {
            return Err(bad(
                "user information in the URL is not sent; give a header instead",
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
                (host, port)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let authority = match port {
            80 => authority.split(':').next().unwrap_or(authority).to_string(),
            _ => authority.to_string(),
        };
        Ok(Url {
            text: text.to_string(),
            host: host.to_string(),
            port,
            authority,
            target,
        })
    }

    /// The first address of the host, looked up within `wait`: a lookup that hangs is left
    /// on its own thread and the probe says so (exit 69).
    pub fn resolve(&self, wait: Duration) -> Result<SocketAddr> {
        let (send, receive) = mpsc::channel();
        let name = (self.host.clone(), self.port);
        std::thread::Builder::new()
            .name("crashlab-resolve".into())
            .spawn(move || {
                let _ = send.send(name.to_socket_addrs().map(|mut a| a.next()));
            })
            .map_err(|e| fail::unavailable(format!("looking up {}: {e}", self.host)))?;
        match receive.recv_timeout(wait) {
            Ok(Ok(Some(addr))) => Ok(addr),
            Ok(Ok(None)) => Err(fail::unavailable(format!("{} has no address", self.host))),
            Ok(Err(e)) => Err(fail::unavailable(format!("looking up {}: {e}", self.host))),
            Err(_) => Err(fail::unavailable(format!(
                "looking up {} took longer than {} ms",
                self.host,
                wait.as_millis()
            ))),
        }
    }
}

/// Does anything accept connections at `addr`? Exit 69 when nothing does.
pub fn reachable(url: &Url, addr: SocketAddr, timeout: Duration) -> Result<()> {
    let started = Instant::now();
    TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
        fail::unavailable(format!(
            "endpoint {} cannot be reached at {addr}: {e} (after {} ms)",
            url.text,
            started.elapsed().as_millis()
        ))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_target() {
        let u = Url::parse("http://127.0.0.1:8080/effect?x=1#frag", "URL").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8080));
        assert_eq!(
            (u.authority.as_str(), u.target.as_str()),
            ("127.0.0.1:8080", "/effect?x=1")
        );
        let u = Url::parse("http://localhost", "URL").unwrap();
        assert_eq!(
            (u.port, u.target.as_str(), u.authority.as_str()),
            (80, "/", "localhost")
        );
        let u = Url::parse("http://[::1]:81/p", "URL").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 81));
        let u = Url::parse("http://h?q", "URL").unwrap();
        assert_eq!(u.target, "/?q");
    }

    #[test]
    fn what_is_not_a_plain_http_url_is_bad_usage() {
        for (url, why) in [
            ("https://example.com/", "https is not probed"),
            ("ftp://x/", "not an http:// URL"),
            ("http://:80/", "no host"),
            ("http://h:0/", "port"),
            ("http://h:99999/", "port"),
            ("http://u:p@h/", "user information"),
            ("http://h/a b", "space"),
        ] {
            let e = Url::parse(url, "URL").unwrap_err();
            assert_eq!(fail::exit_code(&e), 2, "{url}");
            assert!(
                fail::one_line(&e).contains(why),
                "{url}: {}",
                fail::one_line(&e)
            );
        }
    }
}
