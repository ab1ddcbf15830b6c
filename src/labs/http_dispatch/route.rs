//! Lab 13's role subcommands: intent, receiver, dispatcher, dispatch-verify, dispatch-post.

use anyhow::Result;

use super::commands::Roles;
use crate::fail;
use crate::labs::http_dispatch;
use crate::route::role::{arm, expected_stage, readback_out};

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| crate::fail::usage(e.to_string()))?;
    run_role(roles)
}

fn run_role(command: Roles) -> Result<i32> {
    let dispatch_points = crate::labs::http_dispatch::points::POINTS;
    match command {
        Roles::Intent {
            intents,
            key,
            body,
            crash,
        } => {
            arm(&crash, "intent", dispatch_points)?;
            http_dispatch::intent::run(&intents, &key, &body)?;
            Ok(fail::EXIT_OK)
        }
        Roles::Receiver {
            db,
            mode,
            port,
            port_file,
            workers,
            key_ttl_ms,
            delay_ms,
            lifetime_ms,
            crash,
        } => {
            arm(&crash, "receiver", dispatch_points)?;
            http_dispatch::receiver::run(&http_dispatch::receiver::Options {
                db,
                mode,
                port,
                port_file,
                workers: workers as usize,
                key_ttl_ms,
                delay_ms,
                lifetime_ms,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::Dispatcher {
            intents,
            receipts,
            history,
            peer,
            lock,
            lock_wait_ms,
            timeout_ms,
            unknown,
            crash,
        } => {
            arm(&crash, "dispatcher", dispatch_points)?;
            let lock = lock.unwrap_or_else(|| http_dispatch::dispatcher::default_lock(&intents));
            let port = http_dispatch::model::resolve_port(peer.port, peer.port_file.as_deref())?;
            http_dispatch::dispatcher::run(&http_dispatch::dispatcher::Options {
                intents: &intents,
                receipts: &receipts,
                history: &history,
                lock,
                lock_wait_ms,
                port,
                timeout_ms,
                unknown,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::DispatchVerify {
            intents,
            receipts,
            history,
            receiver,
            output,
        } => {
            let stage = expected_stage(
                output.expect.as_deref(),
                crate::labs::http_dispatch::lab::LAB.stages,
            )?;
            let state = http_dispatch::readback::read(&http_dispatch::readback::Paths {
                intents: &intents,
                receipts: &receipts,
                history: &history,
                receiver: &receiver,
            })?;
            let line = format!("effects {} / receipts {} / history {} | intents {} undelivered {} unknown {} attempts {}",
                    state.receiver.effects, state.receipts.receipts, state.history.history,
                    state.intents.intents, state.intents.undelivered, state.intents.unknown,
                    state.intents.attempts);
            readback_out(output.json, &state, &line, stage)
        }
        Roles::DispatchPost {
            peer,
            key,
            body,
            body_bytes,
            get_effect,
            timeout_ms,
        } => {
            let port = http_dispatch::model::resolve_port(peer.port, peer.port_file.as_deref())?;
            let body = match body_bytes {
                Some(n) => "x".repeat(n as usize),
                None => body,
            };
            http_dispatch::client::post_command(
                port,
                key.as_deref(),
                &body,
                timeout_ms,
                get_effect,
            )?;
            Ok(fail::EXIT_OK)
        }
    }
}
