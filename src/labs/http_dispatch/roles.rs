//! Lab 13's roles, each one struct: its flags (`clap::Args`), its argv (`Role::argv`, from the
//! same fields) and its run. The driver's scenarios, explore's cases, lab f3 (which runs this
//! receiver) and the tests build them.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use super::dispatcher::{self, Unknown};
use super::model::resolve_port;
use super::points::POINTS;
use super::receiver::{self, Mode};
use super::schema::{HISTORY_DB, INTENTS_DB, PORT_FILE, RECEIPTS_DB, RECEIVER_DB};
use super::{client, intent, readback};
use crate::fail;
use crate::role::{arm, expected_stage, readback_out, CrashArgs, ReadbackArgs, Role};

/// A client's connect and request bound when none is given (ms).
const TIMEOUT_MS_DEFAULT: u64 = 5_000;

/// Where a client finds lab 13's receiver: a port, or the file the receiver wrote it to.
#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The receiver's port on 127.0.0.1 (or --port-file)
    #[arg(
        long,
        conflicts_with = "port_file",
        required_unless_present = "port_file"
    )]
    pub port: Option<u16>,
    /// Read the receiver's port from this file (its --port-file)
    #[arg(long, value_name = "FILE")]
    pub port_file: Option<PathBuf>,
}

impl Peer {
    /// The run's port file.
    fn of_run() -> Peer {
        Peer {
            port: None,
            port_file: Some(PORT_FILE.into()),
        }
    }

    fn port(&self) -> Result<u16> {
        resolve_port(self.port, self.port_file.as_deref())
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(about = "Lab 13: record an intent (stable key + body) in one commit")]
pub struct Intent {
    /// The intents database; created with its schema when missing
    #[arg(long, value_name = "FILE")]
    pub intents: PathBuf,
    /// Idempotency key, [A-Za-z0-9_-]{1,64}
    #[arg(long)]
    pub key: String,
    /// The request body to deliver, sent unchanged on every attempt
    #[arg(long)]
    pub body: String,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Intent {
    /// Into the run's intents file.
    pub fn of(key: &str, body: &str) -> Intent {
        Intent {
            intents: INTENTS_DB.into(),
            key: key.to_string(),
            body: body.to_string(),
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Intent {
    const NAME: &'static str = "intent";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        intent::run(&self.intents, &self.key, &self.body)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab 13: HTTP receiver on 127.0.0.1; prints `READY <port>` when it accepts connections"
)]
pub struct Receiver {
    /// The receiver database (effects + idempotency ledger); created when missing
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Keyed: one effect per Idempotency-Key; unkeyed: every request is a new effect
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// 0: any free port
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Write the port here (atomically) before printing READY
    #[arg(long, value_name = "FILE")]
    pub port_file: Option<PathBuf>,
    /// Worker threads: the bound on requests handled at once
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=receiver::WORKERS_MAX as u64))]
    pub workers: u64,
    /// Forget keys older than this (default: keys kept forever)
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=315_360_000_000))]
    pub key_ttl_ms: Option<i64>,
    /// Wait this long before applying each POST (to hold a request in flight)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=receiver::DELAY_MS_MAX))]
    pub delay_ms: u64,
    /// Stop by itself after this long
    #[arg(long, default_value_t = 600_000, value_parser = clap::value_parser!(u64).range(1..=receiver::LIFETIME_MS_MAX))]
    pub lifetime_ms: u64,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Receiver {
    /// In `mode` on the run's file, its port written to the run's port file, with the
    /// default bounds.
    pub fn of(mode: Mode) -> Receiver {
        Receiver {
            db: RECEIVER_DB.into(),
            mode,
            port: 0,
            port_file: Some(PORT_FILE.into()),
            workers: 4,
            key_ttl_ms: None,
            delay_ms: 0,
            lifetime_ms: 600_000,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Receiver {
    const NAME: &'static str = "receiver";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        receiver::run(&receiver::Options {
            db: self.db,
            mode: self.mode,
            port: self.port,
            port_file: self.port_file,
            workers: self.workers as usize,
            key_ttl_ms: self.key_ttl_ms,
            delay_ms: self.delay_ms,
            lifetime_ms: self.lifetime_ms,
        })?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab 13: send every intent without a receipt; receipt, then history, after the reply"
)]
pub struct Dispatcher {
    /// The intents database (must exist: `crashlab intent` creates it)
    #[arg(long, value_name = "FILE")]
    pub intents: PathBuf,
    /// The receipts database, one row per delivered key; created when missing
    #[arg(long, value_name = "FILE")]
    pub receipts: PathBuf,
    /// The history database, the dispatcher's local log; created when missing
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    #[command(flatten)]
    #[serde(flatten)]
    pub peer: Peer,
    /// The lock file (default: dispatcher.lock beside the intents file)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Wait up to this long for a held lock (default: exit 75 at once)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=dispatcher::LOCK_WAIT_MS_MAX))]
    pub lock_wait_ms: u64,
    /// Connect and request timeout
    #[arg(long, default_value_t = TIMEOUT_MS_DEFAULT, value_parser = clap::value_parser!(u64).range(1..=client::TIMEOUT_MS_MAX))]
    pub timeout_ms: u64,
    /// An attempt without a receipt: send again, or hold the intent as unknown
    #[arg(long, value_enum, default_value_t = Unknown::Resend)]
    pub unknown: Unknown,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Dispatcher {
    /// On the run's files and port file, answering an attempt without a receipt with
    /// `unknown`, with the default bounds.
    pub fn of(unknown: Unknown) -> Dispatcher {
        Dispatcher {
            intents: INTENTS_DB.into(),
            receipts: RECEIPTS_DB.into(),
            history: HISTORY_DB.into(),
            peer: Peer::of_run(),
            lock: None,
            lock_wait_ms: 0,
            timeout_ms: TIMEOUT_MS_DEFAULT,
            unknown,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Dispatcher {
    const NAME: &'static str = "dispatcher";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        let lock = self
            .lock
            .unwrap_or_else(|| dispatcher::default_lock(&self.intents));
        dispatcher::run(&dispatcher::Options {
            intents: &self.intents,
            receipts: &self.receipts,
            history: &self.history,
            lock,
            lock_wait_ms: self.lock_wait_ms,
            port: self.peer.port()?,
            timeout_ms: self.timeout_ms,
            unknown: self.unknown,
        })?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab 13: one raw request to the receiver; prints STATUS, the replay header, the body"
)]
pub struct Post {
    #[command(flatten)]
    #[serde(flatten)]
    pub peer: Peer,
    /// Sent as Idempotency-Key, unchecked (the receiver judges it)
    #[arg(long)]
    pub key: Option<String>,
    /// The request body
    #[arg(long, default_value = "{}", conflicts_with = "body_bytes")]
    pub body: String,
    /// Send a body of N bytes instead
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub body_bytes: Option<u64>,
    /// GET /effect/<key> instead of POST
    #[arg(long)]
    pub get_effect: bool,
    /// Connect and request timeout
    #[arg(long, default_value_t = TIMEOUT_MS_DEFAULT, value_parser = clap::value_parser!(u64).range(1..=client::TIMEOUT_MS_MAX))]
    pub timeout_ms: u64,
}

impl Post {
    /// An empty JSON body (`{}`) under `key`, if any, to the run's receiver.
    pub fn of(key: Option<&str>) -> Post {
        Post {
            peer: Peer::of_run(),
            key: key.map(str::to_string),
            body: "{}".to_string(),
            body_bytes: None,
            get_effect: false,
            timeout_ms: TIMEOUT_MS_DEFAULT,
        }
    }
}

impl Role for Post {
    const NAME: &'static str = "dispatch-post";

    fn run(self) -> Result<i32> {
        let port = self.peer.port()?;
        let body = match self.body_bytes {
            Some(n) => "x".repeat(n as usize),
            None => self.body,
        };
        client::post_command(
            port,
            self.key.as_deref(),
            &body,
            self.timeout_ms,
            self.get_effect,
        )?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(about = "Lab 13 readback: open the four files read-only and print their state")]
pub struct Verify {
    /// The intents database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub intents: PathBuf,
    /// The receipts database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub receipts: PathBuf,
    /// The history database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    /// The receiver database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub receiver: PathBuf,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: ReadbackArgs,
}

impl Verify {
    /// Of the run's files, as JSON, checked against `stage` if any.
    pub fn of(stage: Option<&str>) -> Verify {
        Verify {
            intents: INTENTS_DB.into(),
            receipts: RECEIPTS_DB.into(),
            history: HISTORY_DB.into(),
            receiver: RECEIVER_DB.into(),
            output: ReadbackArgs::expecting(stage),
        }
    }
}

impl Role for Verify {
    const NAME: &'static str = "dispatch-verify";

    fn run(self) -> Result<i32> {
        let stage = expected_stage(self.output.expect.as_deref(), super::stages::STAGES)?;
        let files: [&Path; 4] = [&self.intents, &self.receipts, &self.history, &self.receiver];
        let state = readback::read(files, crate::store::trace_on())?.readback();
        let line = format!(
            "effects {} / receipts {} / history {} | intents {} undelivered {} unknown {} attempts {}",
            state.receiver.effects, state.receipts.receipts, state.history.history,
            state.intents.intents, state.intents.undelivered, state.intents.unknown,
            state.intents.attempts
        );
        readback_out(self.output.json, &state, &line, stage)
    }
}

#[cfg(test)]
mod tests;
