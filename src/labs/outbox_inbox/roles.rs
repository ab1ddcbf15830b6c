//! Lab 14's roles, each one struct on every stack: its flags (`clap::Args`), its argv
//! (`Role::argv`, from the same fields) and its run. `--stack` says what its store flags
//! name (stack.rs). The driver's scenarios, explore's cases, the load profile and the tests
//! build them.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::consumer;
use super::model::{check_amount, check_id, parse_amount, Payload};
use super::open;
use super::outbox::{self, Contract, CONTRACTS_MAX};
use super::points;
use super::publisher;
use super::queue::Claims;
use super::stack::Stack;
use super::stages;
use super::state;
use super::variant::{self, Variant};
use crate::fail;
use crate::out;
use crate::role::{arm, expected_stage, readback_out, CrashArgs, ReadbackArgs, Role};

/// The consumer's name and lease when its flags give none.
pub const CONSUMER_ID: &str = "c1";
pub const LEASE_MS: i64 = 30_000;

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(about = "Lab 14 business transaction: contract + Outbox row in one commit")]
pub struct Sender {
    /// What the store flags name: sqlite files, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The sender store (contracts + Outbox); created with its schema when missing
    #[arg(long, value_name = "STORE")]
    pub db: PathBuf,
    /// Contract id of the one contract to write (with --amount and --message)
    #[arg(long, conflicts_with = "generate")]
    pub contract: Option<String>,
    /// The contract's amount, a whole number (negative allowed)
    #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
    pub amount: Option<i64>,
    /// Message id of the Outbox row written with the contract (the key the Inbox dedups on)
    #[arg(long)]
    pub message: Option<String>,
    /// Write N generated contracts (C000001…, M000001…), amounts from --seed
    #[arg(long, value_name = "N")]
    pub generate: Option<usize>,
    /// Seed of the generated amounts (same seed, same contracts)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Contracts per transaction (sqlite)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Sender {
    /// One contract, into the stack's sender store.
    pub fn one(stack: Stack, contract: &str, amount: i64, message: &str) -> Sender {
        Sender {
            contract: Some(contract.into()),
            amount: Some(amount),
            message: Some(message.into()),
            ..Sender::generate(stack, 0, 1)
        }
    }

    /// `n` generated contracts, amounts drawn from `seed` (`n` 0: none asked for yet).
    pub fn generate(stack: Stack, n: usize, seed: u64) -> Sender {
        Sender {
            stack,
            db: stack.stores().sender.into(),
            contract: None,
            amount: None,
            message: None,
            generate: (n > 0).then_some(n),
            seed,
            batch: 1,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Sender {
    const NAME: &'static str = "sender";

    fn run(self) -> Result<i32> {
        self.stack.refuse(&[("--batch", self.batch > 1)])?;
        arm(&self.crash, Self::NAME, points::of(self.stack))?;
        let one = match (self.contract, self.amount, self.message, self.generate) {
            (Some(contract), Some(amount), Some(message), None) => Some(Contract {
                contract,
                message,
                amount,
            }),
            (None, None, None, Some(n)) if n == 0 || n > CONTRACTS_MAX => {
                return Err(fail::usage(format!(
                    "--generate {n} is out of range (1 to {CONTRACTS_MAX})"
                )))
            }
            (None, None, None, Some(_)) => None,
            _ => {
                return Err(fail::usage(
                    "give --contract, --amount and --message, or --generate N",
                ))
            }
        };
        let one: Vec<Contract> = one.into_iter().collect();
        outbox::check(&one)?;
        let mut store = open::business(self.stack, &self.db)?;
        let contracts = match self.generate {
            Some(n) => outbox::generated(&mut *store, n, self.seed)?,
            None => one,
        };
        let written = outbox::write(&mut *store, &contracts, self.batch as usize)?;
        drop(store);
        out::line(&format!(
            "SENT {}",
            out::plural(written, "contract", "contracts")
        ));
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab 14 publisher: the transport holds each pending Outbox row (queue commit, broker confirm), then it is marked sent"
)]
pub struct Publisher {
    /// What the store flags name: sqlite files, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The sender store whose pending Outbox rows are published
    #[arg(long, value_name = "STORE")]
    pub sender: PathBuf,
    /// The queue the rows are published to; a SQL queue file is created when missing
    #[arg(long, value_name = "STORE")]
    pub queue: PathBuf,
    /// Outbox rows per queue transaction (sqlite)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// The protocol to run: the lab's design, or one of its stack's known-broken designs
    #[arg(long, value_enum, default_value_t = Variant::Correct)]
    pub variant: Variant,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Publisher {
    pub fn of(stack: Stack, variant: Variant) -> Publisher {
        let stores = stack.stores();
        Publisher {
            stack,
            sender: stores.sender.into(),
            queue: stores.queue.into(),
            batch: 1,
            variant,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Publisher {
    const NAME: &'static str = "publisher";

    fn run(self) -> Result<i32> {
        variant::check(self.variant, self.stack, Self::NAME)?;
        self.stack.refuse(&[("--batch", self.batch > 1)])?;
        arm(&self.crash, Self::NAME, points::of(self.stack))?;
        let opened = open::publisher(self.stack, &self.sender, &self.queue, self.variant)?;
        // A sender database with no table yet holds nothing to publish.
        if let Some((outbox, transport)) = opened {
            let n = publisher::run(outbox, transport, self.batch as usize, self.variant)?;
            out::line(&format!(
                "PUBLISHED {}",
                out::plural(n, "message", "messages")
            ));
        }
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(about = "Lab 14 consumer: Inbox + ledger in one receiver commit, then ack")]
pub struct Consumer {
    /// What the store flags name: sqlite files, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The queue deliveries are taken from (a SQL queue file must exist)
    #[arg(long, value_name = "STORE")]
    pub queue: PathBuf,
    /// The receiver store (Inbox + ledger); created when missing
    #[arg(long, value_name = "STORE")]
    pub receiver: PathBuf,
    /// This consumer's name (sqlite; default c1); a restart under the same name takes its claims back at once
    #[arg(long)]
    pub consumer_id: Option<String>,
    /// How long a claim lasts before another consumer may take it over (sqlite; default 30000)
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=86_400_000))]
    pub lease_ms: Option<i64>,
    /// Deliveries per claim, receiver transaction and ack transaction (sqlite)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// The protocol to run: the lab's design, or one of its stack's known-broken designs
    #[arg(long, value_enum, default_value_t = Variant::Correct)]
    pub variant: Variant,
    /// Delete Inbox rows older than this before consuming (default: keep forever)
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..=315_360_000_000))]
    pub inbox_retention_ms: Option<i64>,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Consumer {
    /// The consumer of the lab's scenario: one delivery at a time, default name and lease.
    pub fn of(stack: Stack, variant: Variant) -> Consumer {
        let stores = stack.stores();
        Consumer {
            stack,
            queue: stores.queue.into(),
            receiver: stores.receiver.into(),
            consumer_id: None,
            lease_ms: None,
            batch: 1,
            variant,
            inbox_retention_ms: None,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Consumer {
    const NAME: &'static str = "consumer";

    fn run(self) -> Result<i32> {
        variant::check(self.variant, self.stack, Self::NAME)?;
        self.stack.refuse(&[
            ("--consumer-id", self.consumer_id.is_some()),
            ("--lease-ms", self.lease_ms.is_some()),
            ("--batch", self.batch > 1),
        ])?;
        let consumer_id = self.consumer_id.as_deref().unwrap_or(CONSUMER_ID);
        check_id("consumer", consumer_id)?;
        arm(&self.crash, Self::NAME, points::of(self.stack))?;
        let claims = Claims {
            consumer_id: consumer_id.to_string(),
            lease_ms: self.lease_ms.unwrap_or(LEASE_MS),
            batch: self.batch as usize,
        };
        let (transport, mut inbox) = open::consumer(
            self.stack,
            &self.queue,
            &self.receiver,
            self.variant,
            claims,
        )?;
        if let Some(retention_ms) = self.inbox_retention_ms {
            inbox.expire(retention_ms)?;
        }
        consumer::run(&mut inbox, transport, self.batch as usize, self.variant)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(about = "Lab 14 faulty upstream: a raw message straight into the queue")]
pub struct Enqueue {
    /// What the store flags name: sqlite files, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The queue to write the message into; a SQL queue file is created when missing
    #[arg(long, value_name = "STORE")]
    pub queue: PathBuf,
    /// Message id of the delivery (reuse one to send a duplicate)
    #[arg(long)]
    pub message: String,
    /// Contract id in the delivery's payload (default R1)
    #[arg(long)]
    pub contract: Option<String>,
    /// Amount in the delivery's payload, a whole number (negative allowed)
    #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
    pub amount: i64,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Enqueue {
    pub fn of(stack: Stack, message: &str, contract: &str, amount: i64) -> Enqueue {
        Enqueue {
            stack,
            queue: stack.stores().queue.into(),
            message: message.into(),
            contract: Some(contract.into()),
            amount,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Enqueue {
    const NAME: &'static str = "enqueue";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, points::of(self.stack))?;
        let contract = self.contract.as_deref().unwrap_or("R1");
        check_id("message", &self.message)?;
        check_id("contract", contract)?;
        check_amount(self.amount)?;
        let mut transport = open::upstream(self.stack, &self.queue)?;
        let payload = Payload::new(&self.message, contract, self.amount);
        let became = transport.enqueue(&payload)?;
        transport.close()?;
        out::line(&format!("ENQUEUED {became}"));
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab 14 readback: the stores read-only (a SQL queue's rows, or the broker's ready messages) and their state"
)]
pub struct Verify {
    /// What the store flags name: sqlite files, or the servers' stores in stack.json
    #[arg(long, value_enum, default_value_t)]
    pub stack: Stack,
    /// The sender store (a file must exist)
    #[arg(long, value_name = "STORE")]
    pub sender: PathBuf,
    /// The queue (one not there yet reads as empty and is named in `absent`)
    #[arg(long, value_name = "STORE")]
    pub queue: PathBuf,
    /// The receiver store (one not there yet reads as empty and is named in `absent`)
    #[arg(long, value_name = "STORE")]
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
            sender: stores.sender.into(),
            queue: stores.queue.into(),
            receiver: stores.receiver.into(),
            output: ReadbackArgs {
                json: true,
                expect: stage.map(str::to_string),
            },
        }
    }
}

impl Role for Verify {
    const NAME: &'static str = "verify";

    fn run(self) -> Result<i32> {
        let stage = expected_stage(self.output.expect.as_deref(), stages::of(self.stack))?;
        let stores = [&*self.sender, &*self.queue, &*self.receiver];
        let state = match self.stack {
            Stack::Sqlite => open::read_files(stores, crate::store::trace_on(), true)?,
            Stack::Servers => open::read_servers(std::path::Path::new("."), stores, false)?,
        };
        let readback = state.readback(self.stack);
        let line = state::line(&readback, self.stack);
        readback_out(self.output.json, &readback, &line, stage)
    }
}

#[cfg(test)]
mod tests;
