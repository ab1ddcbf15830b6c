//! Lab f1's role subcommands as the command line reads them; `route.rs` runs them. Every
//! database is named by its logical name, which `stack.json` in the current directory maps
//! to a PostgreSQL URL.

use clap::{Subcommand, ValueEnum};

use crate::cli::{CrashArgs, ReadbackArgs};

/// How the relay decides which Outbox rows it has not published yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Rows with an id above the highest it published (loses a row that commits late)
    LastId,
    /// Rows still marked pending; each published row is marked published
    PendingStatus,
    /// Rows whose writer's transaction lies below the oldest running one (pg_snapshot_xmin)
    XidHorizon,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::LastId => "last-id",
            Variant::PendingStatus => "pending-status",
            Variant::XidHorizon => "xid-horizon",
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Roles {
    /// Lab f1: create the outbox and receiver schemas and the id sequence (PostgreSQL)
    GapInit {
        /// The Outbox database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        outbox: String,
        /// The receiver database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        receiver: String,
    },
    /// Lab f1 writer: one Outbox row in one transaction, its id taken from the sequence before commit
    GapWrite {
        /// The Outbox database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        outbox: String,
        /// This writer's name, 1 to 16 of [A-Za-z0-9_-]
        #[arg(long)]
        writer: String,
        /// The message body: 1 to 1000 bytes of printable text
        #[arg(long)]
        body: String,
        /// Stop this process (SIGSTOP) at the N-th hit of POINT until continued: the pause nemesis
        #[arg(long, value_name = "POINT[@N]")]
        pause_at: Option<String>,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f1 relay: one poll, the rows it has not published yet published to the receiver
    GapRelay {
        /// The Outbox database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        outbox: String,
        /// The receiver database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        receiver: String,
        /// Which rows it reads: above the last id, still pending, or below the xid horizon
        #[arg(long, value_enum)]
        variant: Variant,
        #[command(flatten)]
        crash: CrashArgs,
    },
    /// Lab f1 readback: the Outbox rows, the relay's position, the receiver's rows, the missing ones
    GapVerify {
        /// The Outbox database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        outbox: String,
        /// The receiver database, by its name in stack.json
        #[arg(long, value_name = "DB")]
        receiver: String,
        #[command(flatten)]
        output: ReadbackArgs,
    },
}

/// Adds these roles to the command line.
pub fn augment(command: clap::Command) -> clap::Command {
    <Roles as Subcommand>::augment_subcommands(command)
}
