//! The first start of a private server: on other ports when the chosen ones are taken
//! (bounded), with its wall time for the evidence.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::postgres::StartError;
use super::{ports, postgres, process, rabbitmq, since_ms, Mq, Pg, Startup};
use crate::fail;

/// initdb and start a private cluster, on another port when the chosen one is taken.
pub(super) fn postgres(
    dir: &Path,
    settings: &[(&str, &str)],
    launcher: &process::Launcher,
) -> Result<(Pg, Startup)> {
    let started = Instant::now();
    let mut private = postgres::Private::init(dir, settings, launcher)?;
    for _ in 0..ports::ATTEMPTS {
        let port = ports::pick(1)?[0];
        match private.start(port, launcher) {
            Ok(()) => {
                let version = postgres::version(&mut postgres::admin(&private.url("postgres"))?)?;
                let startup = Startup {
                    server: "postgres",
                    version,
                    port: Some(port),
                    private: true,
                    start_wall_ms: since_ms(started),
                    restart_wall_ms: Vec::new(),
                };
                return Ok((Pg::Private(private), startup));
            }
            Err(StartError::PortTaken) => continue,
            Err(StartError::Other(e)) => return Err(e),
        }
    }
    Err(fail::unavailable(format!(
        "postgres: every one of {} free ports chosen was taken before it could bind it",
        ports::ATTEMPTS
    )))
}

/// Start a private RabbitMQ node (and its epmd), on other ports when one is taken.
pub(super) fn rabbitmq(dir: &Path, launcher: &process::Launcher) -> Result<(Mq, Startup)> {
    let started = Instant::now();
    let mut private = rabbitmq::Private::init(dir)?;
    for _ in 0..ports::ATTEMPTS {
        let picked = ports::pick(3)?;
        match private.start([picked[0], picked[1], picked[2]], launcher) {
            Ok(()) => {
                let startup = Startup {
                    server: "rabbitmq",
                    version: private.version.clone(),
                    port: Some(private.port),
                    private: true,
                    start_wall_ms: since_ms(started),
                    restart_wall_ms: Vec::new(),
                };
                return Ok((Mq::Private(private), startup));
            }
            Err(StartError::PortTaken) => private.kill_all()?,
            Err(StartError::Other(e)) => return Err(e),
        }
    }
    Err(fail::unavailable(format!(
        "rabbitmq: every one of {} sets of free ports chosen was taken before it could bind them",
        ports::ATTEMPTS
    )))
}

/// Reach a PostgreSQL server the user gave (69 when it cannot be reached).
pub(super) fn given_postgres(url: &str) -> Result<(Pg, Startup)> {
    let started = Instant::now();
    let version = postgres::reach(url)?;
    let startup = Startup {
        server: "postgres",
        version,
        port: None,
        private: false,
        start_wall_ms: since_ms(started),
        restart_wall_ms: Vec::new(),
    };
    Ok((Pg::Given(url.to_string()), startup))
}

/// Reach a RabbitMQ broker the user gave (69 when it cannot be reached).
pub(super) fn given_rabbitmq(url: &str) -> Result<(Mq, Startup)> {
    let started = Instant::now();
    rabbitmq::reach_given(url)?;
    let startup = Startup {
        server: "rabbitmq",
        version: "unknown".into(),
        port: None,
        private: false,
        start_wall_ms: since_ms(started),
        restart_wall_ms: Vec::new(),
    };
    Ok((Mq::Given(url.to_string()), startup))
}
