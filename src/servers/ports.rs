//! Ports on 127.0.0.1 for private servers, and the bounded retry when one is taken.
//!
//! A port is chosen by binding port 0 and letting it go: the kernel hands out a free one, but
//! another process may take it before the server binds it. The server then fails to start;
//! the caller sees the port taken (`free` is false) and starts again on new ports, at most
//! `ATTEMPTS` times.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

use anyhow::{Context, Result};

/// Start attempts of one server when its ports turn out to be taken.
pub const ATTEMPTS: usize = 5;

/// `count` distinct free ports on 127.0.0.1, held open together while chosen so that they
/// differ.
pub fn pick(count: usize) -> Result<Vec<u16>> {
    assert!(count > 0 && count <= 8);
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .context("finding a free port on 127.0.0.1")?;
        held.push(listener);
    }
    let ports: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?;
    Ok(ports)
}

/// Can `port` be bound on 127.0.0.1 right now?
pub fn free(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Does something accept connections on 127.0.0.1:`port`?
pub fn accepts(port: u16) -> bool {
    let addr = (Ipv4Addr::LOCALHOST, port).into();
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_ports_differ_and_a_held_one_is_not_free() {
        let ports = pick(3).unwrap();
        assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
        let hold = TcpListener::bind((Ipv4Addr::LOCALHOST, ports[0])).unwrap();
        assert!(!free(ports[0]));
        assert!(accepts(ports[0]));
        drop(hold);
        assert!(free(ports[0]));
    }
}
