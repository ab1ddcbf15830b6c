//! Lab f3's role subcommands on the stack as the command line reads them; `route.rs` runs
//! them. Stores are named by logical name; `stack.json` in the current directory says where.

use std::path::PathBuf;

use clap::Subcommand;

pub use crate::labs::redelivered::commands::Variant;
use crate::role::{CrashArgs, ReadbackArgs};

/// The largest wait and call bound accepted (ms).
pub const MS_MAX: u64 = 600_000;

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab f3 on RabbitMQ: publish one persistent message (id + body), wait for the confirm
    StackRedeliverEnqueue {
        /// Logical queue (durable; declared when missing)
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// Message id, [A-Za-z0-9_-]{1,64} (sent as the Idempotency-Key when keyed)
        #[arg(long)]
        id: String,
        /// The message body, the request body of the call
        #[arg(long)]
        body: String,
    },
    /// Lab f3 on RabbitMQ: take a message (manual ack), call the receiver, ack (lost if the broker closed the channel)
    StackRedeliverConsumer {
        /// Logical queue to take from
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// Logical PostgreSQL database of the consumers' deliveries and replies
        #[arg(long, value_name = "NAME")]
        db: String,
        /// Read the receiver's port from this file (the receiver's --port-file)
        #[arg(long, value_name = "FILE")]
        port_file: PathBuf,
        /// This consumer's name, [A-Za-z0-9_-]{1,64}
        #[arg(long)]
        consumer: String,
        /// Keyed: the call carries the message id as Idempotency-Key; unkeyed: no key
        #[arg(long, value_enum)]
        variant: Variant,
        /// Heartbeat asked of the broker (s): it closes a connection silent for about two
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=super::link::HEARTBEAT_S_MAX as i64))]
        heartbeat_s: u16,
        /// Ask the broker again for up to this long while nothing is ready (default: once)
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MS_MAX))]
        wait_ms: u64,
        /// Connect and request timeout of the call
        #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
        timeout_ms: u64,
        /// Stop this process (SIGSTOP) at the N-th hit of POINT until continued: the pause nemesis
        #[arg(long, value_name = "POINT[@N]")]
        pause_at: Option<String>,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f3 on the stack, readback: the consumers' database, the queue and the receiver's file
    StackRedeliverVerify {
        /// Logical PostgreSQL database of the consumers
        #[arg(long, value_name = "NAME")]
        db: String,
        /// Logical queue (its ready messages, by a passive declare)
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// The receiver's file (a missing file reads as empty and is named in `absent`)
        #[arg(long, value_name = "FILE")]
        receiver: PathBuf,
        #[command(flatten)]
        output: ReadbackArgs,
    },
}

/// Adds these roles to the command line.
pub fn augment(command: clap::Command) -> clap::Command {
    <Roles as Subcommand>::augment_subcommands(command)
}
