//! Lab f1's roles, each one struct: its flags (`clap::Args`), its argv (`Role::argv`, from the
//! same fields) and its run. Every database is named by its logical name, which `stack.json`
//! in the current directory maps to a PostgreSQL URL.

use anyhow::Result;
use serde::Serialize;

use super::points::POINTS;
use super::relay::{self, Variant};
use super::{readback, write};
use crate::crash::Point;
use crate::fail;
use crate::role::{arm, expected_stage, readback_out, CrashArgs, ReadbackArgs, Role};

/// The logical databases (names in `stack.json`).
pub const OUTBOX_DB: &str = "outbox";
pub const RECEIVER_DB: &str = "receiver";

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f1: create the outbox and receiver schemas and the id sequence (PostgreSQL)"
)]
pub struct Init {
    /// The Outbox database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub outbox: String,
    /// The receiver database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub receiver: String,
}

impl Init {
    /// Of the run's databases.
    pub fn of() -> Init {
        Init {
            outbox: OUTBOX_DB.into(),
            receiver: RECEIVER_DB.into(),
        }
    }
}

impl Role for Init {
    const NAME: &'static str = "gap-init";

    fn run(self) -> Result<i32> {
        write::init(&self.outbox, &self.receiver)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f1 writer: one Outbox row in one transaction, its id taken from the sequence before commit"
)]
pub struct Write {
    /// The Outbox database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub outbox: String,
    /// This writer's name, 1 to 16 of [A-Za-z0-9_-]
    #[arg(long)]
    pub writer: String,
    /// The message body: 1 to 1000 bytes of printable text
    #[arg(long)]
    pub body: String,
    /// Stop this process (SIGSTOP) at the N-th hit of POINT until continued: the pause nemesis
    #[arg(long, value_name = "POINT[@N]")]
    pub pause_at: Option<String>,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Write {
    /// Writer `writer` of `body` into the run's Outbox, stopped at `pause_at` if any.
    pub fn of(writer: &str, body: &str, pause_at: Option<Point>) -> Write {
        Write {
            outbox: OUTBOX_DB.into(),
            writer: writer.into(),
            body: body.into(),
            pause_at: pause_at.map(|p| p.name.to_string()),
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Write {
    const NAME: &'static str = "gap-write";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        if let Some(spec) = &self.pause_at {
            crate::pause::arm(spec, POINTS, Self::NAME)?;
        }
        write::run(&self.outbox, &self.writer, &self.body)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f1 relay: one poll, the rows it has not published yet published to the receiver"
)]
pub struct Relay {
    /// The Outbox database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub outbox: String,
    /// The receiver database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub receiver: String,
    /// Which rows it reads: above the last id, still pending, or below the xid horizon
    #[arg(long, value_enum)]
    pub variant: Variant,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Relay {
    /// One poll of design `variant` on the run's databases.
    pub fn of(variant: Variant) -> Relay {
        Relay {
            outbox: OUTBOX_DB.into(),
            receiver: RECEIVER_DB.into(),
            variant,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Relay {
    const NAME: &'static str = "gap-relay";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        relay::run(&self.outbox, &self.receiver, self.variant)?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f1 readback: the Outbox rows, the relay's position, the receiver's rows, the missing ones"
)]
pub struct Verify {
    /// The Outbox database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub outbox: String,
    /// The receiver database, by its name in stack.json
    #[arg(long, value_name = "DB")]
    pub receiver: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: ReadbackArgs,
}

impl Verify {
    /// Of the run's databases, as JSON, checked against `stage` if any.
    pub fn of(stage: Option<&str>) -> Verify {
        Verify {
            outbox: OUTBOX_DB.into(),
            receiver: RECEIVER_DB.into(),
            output: ReadbackArgs::expecting(stage),
        }
    }
}

impl Role for Verify {
    const NAME: &'static str = "gap-verify";

    fn run(self) -> Result<i32> {
        let stage = expected_stage(self.output.expect.as_deref(), super::stages::STAGES)?;
        let here = std::path::Path::new(".");
        let (state, _) = readback::read_in(here, (&self.outbox, &self.receiver), None)?;
        let line = format!(
            "outbox rows {} pending {} | relay last-id {} horizon {} polls {} | receiver published {} | missing {} ({})",
            state.outbox.rows,
            state.outbox.pending,
            state.outbox.relay.last_id,
            state.outbox.relay.horizon,
            state.outbox.relay.polls,
            state.receiver.published,
            state.receiver.missing,
            relay::ids(&state.receiver.missing_ids)
        );
        readback_out(self.output.json, &state, &line, stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nemesis::{Nemesis, PAUSE};
    use crate::role::parses_back;

    /// Each role's argv spells its flags, the pause flag is the one the pause nemesis arms,
    /// and every argv parses back into the very same values.
    #[test]
    fn every_argv_parses_back_into_its_role() {
        let a = Write::of("A", "{}", Some(super::super::points::WRITE_AFTER_INSERT));
        assert_eq!(
            a.argv().into_vec().join(" "),
            "gap-write --outbox outbox --writer A --body {} --pause-at gap-write.after-insert"
        );
        assert!(a
            .argv()
            .args()
            .ends_with(&PAUSE.arm("gap-write.after-insert")));
        assert_eq!(
            Relay::of(Variant::LastId).argv().args().join(" "),
            "--outbox outbox --receiver receiver --variant last-id"
        );
        assert_eq!(
            Verify::of(Some("x")).argv().args().join(" "),
            "--outbox outbox --receiver receiver --json --expect x"
        );
        parses_back(&Init::of());
        parses_back(&a);
        parses_back(&Write::of("B", "{}", None));
        parses_back(&Verify::of(Some("x")));
        parses_back(&Verify::of(None));
        for v in relay::VARIANTS {
            let relay = Relay::of(Variant::named(v));
            assert_eq!(relay.argv().args()[5], *v);
            parses_back(&relay);
        }
    }
}
