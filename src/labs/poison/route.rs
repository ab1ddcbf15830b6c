//! Lab f2's role subcommands: poison-produce, poison-consume, poison-replay, poison-verify.

use anyhow::Result;

use super::commands::Roles;
use super::points::POINTS;
use super::{consume, produce, readback, replay_parked, roles};
use crate::fail;
use crate::out;
use crate::route::role::{arm, expected_stage, readback_out};

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| fail::usage(e.to_string()))?;
    run_role(roles)
}

fn run_role(command: Roles) -> Result<i32> {
    match command {
        Roles::PoisonProduce { queue, amounts } => {
            let n = produce::run(&queue, &amounts)?;
            out::line(&format!(
                "PRODUCED {}",
                out::plural(n, "message", "messages")
            ));
            Ok(fail::EXIT_OK)
        }
        Roles::PoisonConsume {
            queue,
            receiver,
            variant,
            attempts_max,
            backoff_ms,
            crash,
        } => {
            arm(&crash, roles::CONSUME, POINTS)?;
            consume::run(&consume::Options {
                queue: &queue,
                receiver: &receiver,
                variant,
                attempts_max,
                backoff_ms,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::PoisonReplay {
            queue,
            receiver,
            message,
            amount,
            crash,
        } => {
            arm(&crash, roles::REPLAY, POINTS)?;
            replay_parked::run(&replay_parked::Options {
                queue: &queue,
                receiver: &receiver,
                message: &message,
                amount,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::PoisonVerify {
            queue,
            receiver,
            output,
        } => {
            let stage = expected_stage(output.expect.as_deref(), super::lab::LAB.stages)?;
            let s = readback::read(&queue, &receiver, crate::store::trace_on())?;
            let line = format!(
                "queue: messages {} pending {} done {} parked {} failures {} dead_letters {} (parked {} replayed {}) | receiver: credits {} total {}",
                s.queue.messages, s.queue.pending, s.queue.done, s.queue.parked, s.queue.failures,
                s.queue.dead_letters, s.queue.dead_parked, s.queue.dead_replayed,
                s.receiver.credits, s.receiver.total
            );
            readback_out(output.json, &s, &line, stage)
        }
    }
}
