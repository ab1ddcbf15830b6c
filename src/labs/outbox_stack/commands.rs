//! Lab 14's role subcommands on the server stack as the command line reads them; `route.rs`
//! runs them. Every store is named by its logical name; `stack.json` in the current
//! directory says where it is.

use clap::Subcommand;

use super::variant::Variant;
use crate::cli::{CrashArgs, ReadbackArgs};
use crate::labs::outbox_inbox::model::parse_amount;

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab 14 on PostgreSQL: contract + Outbox row in one commit
    StackSender {
        /// Logical sender database (contracts + Outbox); its schema is created when empty
        #[arg(long, value_name = "NAME")]
        db: String,
        /// Contract id of the one contract to write (with --amount and --message)
        #[arg(long, conflicts_with = "generate")]
        contract: Option<String>,
        /// The contract's amount, a whole number
        #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
        amount: Option<i64>,
        /// Message id of the Outbox row written with the contract
        #[arg(long)]
        message: Option<String>,
        /// Write N generated contracts (C000001…, M000001…), amounts from --seed
        #[arg(long, value_name = "N")]
        generate: Option<usize>,
        /// Seed of the generated amounts
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 on RabbitMQ: publish each pending Outbox row, wait for the confirm, mark it sent
    StackPublisher {
        /// Logical sender database whose pending Outbox rows are published
        #[arg(long, value_name = "NAME")]
        sender: String,
        /// Logical queue the messages are published to
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// The protocol to run: the lab's design, or one of its known-broken variants
        #[arg(long, value_enum, default_value_t = Variant::Correct)]
        variant: Variant,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 on RabbitMQ: take a delivery, Inbox + ledger in one commit, then basic.ack
    StackConsumer {
        /// Logical queue deliveries are taken from
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// Logical receiver database (Inbox, ledger, receipts); its schema is created when empty
        #[arg(long, value_name = "NAME")]
        receiver: String,
        /// The protocol to run: the lab's design, or one of its known-broken variants
        #[arg(long, value_enum, default_value_t = Variant::Correct)]
        variant: Variant,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 faulty upstream on RabbitMQ: publish a raw message into the queue
    StackEnqueue {
        /// Logical queue to publish into
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// Message id (reuse one to send a duplicate)
        #[arg(long)]
        message: String,
        /// Contract id in the payload
        #[arg(long, default_value = "R1")]
        contract: String,
        /// Amount in the payload, a whole number
        #[arg(long, value_parser = parse_amount, allow_negative_numbers = true)]
        amount: i64,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab 14 readback on the stack: both databases read-only, the queue's ready messages
    StackVerify {
        /// Logical sender database
        #[arg(long, value_name = "NAME")]
        sender: String,
        /// Logical queue
        #[arg(long, value_name = "NAME")]
        queue: String,
        /// Logical receiver database
        #[arg(long, value_name = "NAME")]
        receiver: String,
        #[command(flatten)]
        output: ReadbackArgs,
    },
}

/// Adds these roles to the command line.
pub fn augment(command: clap::Command) -> clap::Command {
    <Roles as Subcommand>::augment_subcommands(command)
}
