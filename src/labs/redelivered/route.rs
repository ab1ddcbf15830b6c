//! Lab f3's role subcommands: redeliver-enqueue, redeliver-consumer, redeliver-verify.

use anyhow::Result;

use super::commands::Roles;
use super::points::POINTS;
use super::{consumer, queue, readback, roles};
use crate::fail;
use crate::role::{arm, expected_stage, readback_out};

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| fail::usage(e.to_string()))?;
    match roles {
        Roles::RedeliverEnqueue { queue: q, id, body } => {
            queue::enqueue(&q, &id, &body)?;
            Ok(fail::EXIT_OK)
        }
        Roles::RedeliverConsumer {
            queue,
            port_file,
            consumer: name,
            variant,
            lease_ms,
            wait_ms,
            timeout_ms,
            pause_at,
            crash,
        } => {
            arm(&crash, roles::CONSUMER, POINTS)?;
            if let Some(spec) = &pause_at {
                crate::pause::arm(spec, POINTS, roles::CONSUMER)?;
            }
            consumer::run(&consumer::Options {
                queue: &queue,
                port_file: &port_file,
                consumer: &name,
                variant,
                lease_ms,
                wait_ms,
                timeout_ms,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::RedeliverVerify {
            queue,
            receiver,
            output,
        } => {
            let stage = expected_stage(output.expect.as_deref(), super::lab::ON_SQLITE.stages)?;
            let state = readback::read(&queue, &receiver)?;
            let line = format!(
                "messages {} acked {} deliveries {} | replies {} replayed {} refused {} | effects {}",
                state.queue.messages,
                state.queue.acked,
                state.queue.deliveries,
                state.queue.replies,
                state.queue.replayed,
                state.queue.refused,
                state.receiver.effects
            );
            readback_out(output.json, &state, &line, stage)
        }
    }
}
