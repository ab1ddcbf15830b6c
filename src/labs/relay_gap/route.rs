//! Lab f1's role subcommands: gap-init, gap-write, gap-relay, gap-verify.

use anyhow::Result;

use super::commands::Roles;
use super::points::POINTS;
use super::{readback, relay, roles, write};
use crate::fail;
use crate::route::role::{arm, expected_stage, readback_out};

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| fail::usage(e.to_string()))?;
    match roles {
        Roles::GapInit { outbox, receiver } => {
            write::init(&outbox, &receiver)?;
            Ok(fail::EXIT_OK)
        }
        Roles::GapWrite {
            outbox,
            writer,
            body,
            pause_at,
            crash,
        } => {
            arm(&crash, roles::WRITE, POINTS)?;
            if let Some(spec) = &pause_at {
                crate::pause::arm(spec, POINTS, roles::WRITE)?;
            }
            write::run(&outbox, &writer, &body)?;
            Ok(fail::EXIT_OK)
        }
        Roles::GapRelay {
            outbox,
            receiver,
            variant,
            crash,
        } => {
            arm(&crash, roles::RELAY, POINTS)?;
            relay::run(&outbox, &receiver, variant)?;
            Ok(fail::EXIT_OK)
        }
        Roles::GapVerify {
            outbox,
            receiver,
            output,
        } => {
            let stage = expected_stage(output.expect.as_deref(), super::lab::LAB.stages)?;
            let state = readback::read(&outbox, &receiver)?;
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
            readback_out(output.json, &state, &line, stage)
        }
    }
}
