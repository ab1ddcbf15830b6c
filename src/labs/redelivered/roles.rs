//! Lab f3's roles, each one struct on every stack: its flags (`clap::Args`), its argv
//! (`Role::argv`, from the same fields) and its run. `--stack` says what its store flags
//! name (stack.rs). Lab 13's receiver is run by lab 13's own role (`Receiver`).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::consumer::{self, Options};
use super::stack::Stack;
use super::{broker, points, queue, stages, state};
use crate::crash::Point;
use crate::fail;
use crate::labs::http_dispatch::model::{check_body, check_key};
use crate::labs::http_dispatch::receiver::Mode;
use crate::labs::http_dispatch::roles::Receiver;
use crate::labs::http_dispatch::schema::{PORT_FILE, RECEIVER_DB};
use crate::role::{arm, expected_stage, readback_out, CrashArgs, ReadbackArgs, Role};

/// Lab 13's receiver, run by argv.
pub const RECEIVER: &str = Receiver::NAME;

/// Whether the consumer's call carries the message id as its Idempotency-Key (the receiver
/// runs in the mode of the same name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The call carries `Idempotency-Key: <message id>` (the receiver must run keyed)
    Keyed,
    /// The call carries no key (the receiver runs unkeyed): each call is a new effect
    Unkeyed,
}

/// The variants by name, as explore's designs.
pub const VARIANTS: &[&str] = &["keyed", "unkeyed"];

impl Variant {
    pub fn named(name: &str) -> Variant {
        <Variant as clap::ValueEnum>::from_str(name, false).expect("a variant of VARIANTS")
    }
}

/// The largest lease, wait and call bound accepted (ms).
pub const MS_MAX: u64 = 600_000;
/// The consumer's heartbeat on the broker when `--heartbeat-s` is not given (s): short, so
/// the broker gives up on a stopped consumer in seconds.
pub const HEARTBEAT_S: u16 = 1;
/// The lease of the scenarios' consumers on SQLite: short, so B waits little.
pub const LEASE_MS: u64 = 300;
/// The bound of a consumer's call (connect and whole request).
pub const CALL_TIMEOUT_MS: u64 = 5_000;

/// Lab 13's receiver in `variant`'s mode, stopping by itself after `lifetime_ms` at most.
pub fn receiver(variant: Variant, lifetime_ms: Option<u64>) -> Receiver {
    let mode = match variant {
        Variant::Keyed => Mode::Keyed,
        Variant::Unkeyed => Mode::Unkeyed,
    };
    let mut receiver = Receiver::of(mode);
    if let Some(ms) = lifetime_ms {
        receiver.lifetime_ms = ms;
    }
    receiver
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f3: put one message on the queue (id + body): one commit, or one persistent publish confirmed by the broker"
)]
pub struct Enqueue {
    /// What the store flags name: a sqlite file, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The queue; a SQLite queue file is created with its schema when missing
    #[arg(long, value_name = "STORE")]
    pub queue: String,
    /// Message id, [A-Za-z0-9_-]{1,64} (sent as the Idempotency-Key when keyed)
    #[arg(long)]
    pub id: String,
    /// The message body, the request body of the call
    #[arg(long)]
    pub body: String,
}

impl Enqueue {
    pub fn of(stack: Stack, id: &str, body: &str) -> Enqueue {
        Enqueue {
            stack,
            queue: stack.stores().queue.into(),
            id: id.into(),
            body: body.into(),
        }
    }
}

impl Role for Enqueue {
    const NAME: &'static str = "redeliver-enqueue";

    fn run(self) -> Result<i32> {
        check_key(&self.id)
            .map_err(|e| fail::usage(format!("--id is not a valid message id: {e}")))?;
        check_body(&self.body)?;
        match self.stack {
            Stack::Sqlite => queue::enqueue(self.queue.as_ref(), &self.id, &self.body)?,
            Stack::Servers => broker::enqueue(&self.queue, &self.id, &self.body)?,
        }
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f3: take a message (a lease, or a delivery with manual ack), call the receiver, ack (refused if the lease passed on or the broker closed the channel)"
)]
pub struct Consumer {
    /// What the store flags name: a sqlite file, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The queue to take from (a SQLite queue file must exist: `redeliver-enqueue` creates it)
    #[arg(long, value_name = "STORE")]
    pub queue: String,
    /// The consumers' database of deliveries and replies (postgres-rabbitmq)
    #[arg(long, value_name = "STORE")]
    pub db: Option<String>,
    /// Read the receiver's port from this file (the receiver's --port-file)
    #[arg(long, value_name = "FILE")]
    pub port_file: PathBuf,
    /// This consumer's name, [A-Za-z0-9_-]{1,64}
    #[arg(long)]
    pub consumer: String,
    /// Keyed: the call carries the message id as Idempotency-Key; unkeyed: no key
    #[arg(long, value_enum)]
    pub variant: Variant,
    /// How long a claim holds the message before another consumer may take it (sqlite)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MS_MAX))]
    pub lease_ms: Option<u64>,
    /// Heartbeat asked of the broker (s): it closes a connection silent for about two (postgres-rabbitmq; default 1)
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=crate::store::amqp::HEARTBEAT_S_MAX as i64))]
    pub heartbeat_s: Option<u16>,
    /// Wait up to this long for another consumer's lease to expire, or for the broker to have a message ready (default: exit 75 at once on a lease, ask the broker once)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MS_MAX))]
    pub wait_ms: u64,
    /// Connect and request timeout of the call
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
    pub timeout_ms: u64,
    /// Stop this process (SIGSTOP) at the N-th hit of POINT until continued: the pause nemesis
    #[arg(long, value_name = "POINT[@N]")]
    pub pause_at: Option<String>,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Consumer {
    /// Consumer `name` on the stack's stores: its lease (sqlite) or heartbeat
    /// (postgres-rabbitmq) the lab's, waiting up to `wait_ms`, stopped at `pause_at` if any.
    pub fn of(
        stack: Stack,
        name: &str,
        variant: Variant,
        wait_ms: u64,
        pause_at: Option<Point>,
    ) -> Consumer {
        let stores = stack.stores();
        Consumer {
            stack,
            queue: stores.queue.into(),
            db: stores.db.map(str::to_string),
            port_file: PORT_FILE.into(),
            consumer: name.into(),
            variant,
            lease_ms: (stack == Stack::Sqlite).then_some(LEASE_MS),
            heartbeat_s: (stack == Stack::Servers).then_some(HEARTBEAT_S),
            wait_ms,
            timeout_ms: CALL_TIMEOUT_MS,
            pause_at: pause_at.map(|p| p.name.to_string()),
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Consumer {
    const NAME: &'static str = "redeliver-consumer";

    fn run(self) -> Result<i32> {
        self.stack.refuse(&[
            ("--lease-ms", self.lease_ms.is_some(), Stack::Sqlite),
            ("--db", self.db.is_some(), Stack::Servers),
            ("--heartbeat-s", self.heartbeat_s.is_some(), Stack::Servers),
        ])?;
        let on = points::of(self.stack);
        arm(&self.crash, Self::NAME, on)?;
        if let Some(spec) = &self.pause_at {
            crate::pause::arm(spec, on, Self::NAME)?;
        }
        check_key(&self.consumer)
            .map_err(|e| fail::usage(format!("--consumer is not a valid consumer name: {e}")))?;
        let o = Options {
            port_file: &self.port_file,
            consumer: &self.consumer,
            keyed: self.variant == Variant::Keyed,
            timeout_ms: self.timeout_ms,
        };
        let transport: Box<dyn consumer::Transport> = match self.stack {
            Stack::Sqlite => {
                let Some(lease_ms) = self.lease_ms else {
                    return Err(fail::usage("--lease-ms is required on stack sqlite"));
                };
                let taking = queue::Taking {
                    lease_ms,
                    wait_ms: self.wait_ms,
                };
                Box::new(queue::Leases::open(
                    self.queue.as_ref(),
                    &self.consumer,
                    taking,
                )?)
            }
            Stack::Servers => {
                let Some(db) = &self.db else {
                    return Err(fail::usage("--db is required on stack postgres-rabbitmq"));
                };
                let heartbeat_s = self.heartbeat_s.unwrap_or(HEARTBEAT_S);
                Box::new(broker::Deliveries::open(
                    &self.queue,
                    db,
                    &self.consumer,
                    heartbeat_s,
                    self.wait_ms,
                )?)
            }
        };
        consumer::run(self.stack, transport, &o)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f3 readback: the queue (or the consumers' database and the queue's ready messages) and the receiver's file, read-only"
)]
pub struct Verify {
    /// What the store flags name: a sqlite file, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The queue (a missing one reads as empty and is named in `absent`)
    #[arg(long, value_name = "STORE")]
    pub queue: String,
    /// The consumers' database (postgres-rabbitmq)
    #[arg(long, value_name = "STORE")]
    pub db: Option<String>,
    /// The receiver database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub receiver: PathBuf,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: ReadbackArgs,
}

impl Verify {
    /// Of the stack's stores, as JSON, checked against `stage` if any.
    pub fn of(stack: Stack, stage: Option<&str>) -> Verify {
        let stores = stack.stores();
        Verify {
            stack,
            queue: stores.queue.into(),
            db: stores.db.map(str::to_string),
            receiver: RECEIVER_DB.into(),
            output: ReadbackArgs::expecting(stage),
        }
    }
}

impl Role for Verify {
    const NAME: &'static str = "redeliver-verify";

    fn run(self) -> Result<i32> {
        self.stack
            .refuse(&[("--db", self.db.is_some(), Stack::Servers)])?;
        let stage = expected_stage(self.output.expect.as_deref(), stages::of(self.stack))?;
        let json = self.output.json;
        match self.stack {
            Stack::Sqlite => {
                let s = state::read(self.queue.as_ref(), &self.receiver)?;
                readback_out(json, &s, &s.line(), stage)
            }
            Stack::Servers => {
                let Some(db) = &self.db else {
                    return Err(fail::usage("--db is required on stack postgres-rabbitmq"));
                };
                let s = state::read_servers(
                    std::path::Path::new("."),
                    db,
                    &self.queue,
                    &self.receiver,
                )?;
                readback_out(json, &s, &s.line(), stage)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nemesis::{Nemesis, PAUSE};
    use crate::role::parses_back;

    /// Every role's argv parses back into its values on both stacks, the real command line
    /// takes it, and the pause flag is the one the pause nemesis arms.
    #[test]
    fn every_role_parses_back_and_the_real_cli_takes_it() {
        for stack in Stack::ALL {
            let c = Consumer::of(
                stack,
                "A",
                Variant::Keyed,
                1000,
                Some(points::CONSUMER_AFTER_CALL),
            );
            let armed = PAUSE.arm("redeliver-consumer.after-call");
            assert!(c.argv().args().ends_with(&armed), "{:?}", c.argv());
            parses_back(&c);
            parses_back(&Enqueue::of(stack, "M1", "{}"));
            parses_back(&Verify::of(stack, None));
            for argv in [
                Enqueue::of(stack, "M1", "{}").argv(),
                receiver(Variant::Unkeyed, Some(1000)).argv(),
                c.argv(),
                Verify::of(stack, Some("keyed-pause-before-call.final")).argv(),
            ] {
                let words = std::iter::once("crashlab".to_string()).chain(argv.clone().into_vec());
                if let Err(e) = crate::cli::parser(crate::labs::LABS).try_get_matches_from(words) {
                    panic!("{argv:?}: {e}");
                }
            }
        }
    }
}
