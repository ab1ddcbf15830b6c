//! Lab 14's role subcommands on the stack: stack-sender, stack-publisher, stack-consumer,
//! stack-enqueue, stack-verify.

use anyhow::Result;

use super::commands::Roles;
use super::{consumer, points::POINTS, publisher, readback, roles, sender, variant};
use crate::fail;
use crate::labs::outbox_inbox::model::{check_id, Payload};
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
        Roles::StackSender {
            db,
            contract,
            amount,
            message,
            generate,
            seed,
            crash,
        } => {
            arm(&crash, roles::SENDER, POINTS)?;
            let contracts = match (contract, amount, message, generate) {
                (Some(contract), Some(amount), Some(message), None) => {
                    vec![crate::labs::outbox_inbox::sender::Contract {
                        contract,
                        message,
                        amount,
                    }]
                }
                (None, None, None, Some(n)) => {
                    let max = crate::labs::outbox_inbox::sender::CONTRACTS_MAX;
                    if n == 0 || n > max {
                        return Err(fail::usage(format!(
                            "--generate {n} is out of range (1 to {max})"
                        )));
                    }
                    sender::generated(&db, n, seed)?
                }
                _ => {
                    return Err(fail::usage(
                        "give --contract, --amount and --message, or --generate N",
                    ))
                }
            };
            let written = sender::run(&db, &contracts)?;
            out::line(&format!(
                "SENT {}",
                out::plural(written, "contract", "contracts")
            ));
            Ok(fail::EXIT_OK)
        }
        Roles::StackPublisher {
            sender,
            queue,
            variant,
            crash,
        } => {
            variant::check_phase(variant, roles::PUBLISHER)?;
            arm(&crash, roles::PUBLISHER, POINTS)?;
            publisher::run(&sender, &queue, variant)?;
            Ok(fail::EXIT_OK)
        }
        Roles::StackConsumer {
            queue,
            receiver,
            variant,
            crash,
        } => {
            variant::check_phase(variant, roles::CONSUMER)?;
            arm(&crash, roles::CONSUMER, POINTS)?;
            consumer::run(&queue, &receiver, variant)?;
            Ok(fail::EXIT_OK)
        }
        Roles::StackEnqueue {
            queue,
            message,
            contract,
            amount,
            crash,
        } => {
            check_id("message", &message)?;
            check_id("contract", &contract)?;
            arm(&crash, roles::ENQUEUE, POINTS)?;
            let id = publisher::enqueue(&queue, &Payload::new(&message, &contract, amount))?;
            out::line(&format!("ENQUEUED message {message} publish {id}"));
            Ok(fail::EXIT_OK)
        }
        Roles::StackVerify {
            sender,
            queue,
            receiver,
            output,
        } => {
            let stage = expected_stage(output.expect.as_deref(), super::lab::LAB.stages)?;
            let state = readback::read(&sender, &queue, &receiver)?;
            readback_out(output.json, &state, &readback::line(&state), stage)
        }
    }
}
