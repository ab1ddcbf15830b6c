//! Lab 14's role subcommands: sender, publisher, consumer, enqueue, verify.

use anyhow::Result;

use super::commands::Roles;
use crate::fail;
use crate::labs::outbox_inbox::{consumer, enqueue, publisher, readback, sender, variant};
use crate::out;
use crate::route::role::{arm, expected_stage, readback_out};

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| crate::fail::usage(e.to_string()))?;
    run_role(roles)
}

fn run_role(command: Roles) -> Result<i32> {
    let points = crate::labs::outbox_inbox::points::POINTS;
    match command {
        Roles::Sender {
            db,
            contract,
            amount,
            message,
            generate,
            seed,
            batch,
            crash,
        } => {
            arm(&crash, "sender", points)?;
            let contracts = match (contract, amount, message, generate) {
                (Some(contract), Some(amount), Some(message), None) => {
                    vec![sender::Contract {
                        contract,
                        message,
                        amount,
                    }]
                }
                (None, None, None, Some(n)) => {
                    if n == 0 || n > sender::CONTRACTS_MAX {
                        return Err(fail::usage(format!(
                            "--generate {n} is out of range (1 to {})",
                            sender::CONTRACTS_MAX
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
            let written = sender::run(&db, &contracts, batch as usize)?;
            out::line(&format!(
                "SENT {}",
                out::plural(written, "contract", "contracts")
            ));
            Ok(fail::EXIT_OK)
        }
        Roles::Publisher {
            sender,
            queue,
            batch,
            variant,
            crash,
        } => {
            variant::check_phase(variant, "publisher")?;
            arm(&crash, "publisher", points)?;
            let published = publisher::run(&publisher::Options {
                sender: &sender,
                queue: &queue,
                batch: batch as usize,
                variant,
            })?;
            out::line(&format!(
                "PUBLISHED {}",
                out::plural(published, "message", "messages")
            ));
            Ok(fail::EXIT_OK)
        }
        Roles::Consumer {
            queue,
            receiver,
            consumer_id,
            lease_ms,
            batch,
            variant,
            inbox_retention_ms,
            crash,
        } => {
            variant::check_phase(variant, "consumer")?;
            crate::labs::outbox_inbox::model::check_id("consumer", &consumer_id)?;
            arm(&crash, "consumer", points)?;
            consumer::run(&consumer::Options {
                queue: &queue,
                receiver: &receiver,
                consumer_id: &consumer_id,
                lease_ms,
                batch: batch as usize,
                variant,
                inbox_retention_ms,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::Enqueue {
            queue,
            message,
            contract,
            amount,
            crash,
        } => {
            arm(&crash, "enqueue", points)?;
            let id = enqueue::run(&queue, &message, &contract, amount)?;
            out::line(&format!("ENQUEUED delivery {id}"));
            Ok(fail::EXIT_OK)
        }
        Roles::Verify {
            sender,
            queue,
            receiver,
            output,
        } => {
            let stage = expected_stage(
                output.expect.as_deref(),
                crate::labs::outbox_inbox::lab::LAB.stages,
            )?;
            let state = readback::read(
                &readback::Paths {
                    sender: &sender,
                    queue: &queue,
                    receiver: &receiver,
                },
                crate::store::trace_on(),
            )?;
            let line = format!("sender: contracts {} outbox_pending {} outbox_sent {} | queue: deliveries {} messages {} pending {} acked {} rejected {} | receiver: inbox {} ledger {}",
                    state.sender.contracts, state.sender.outbox_pending, state.sender.outbox_sent,
                    state.queue.deliveries, state.queue.messages, state.queue.pending, state.queue.acked,
                    state.queue.rejected, state.receiver.inbox, state.receiver.ledger);
            readback_out(output.json, &state, &line, stage)
        }
    }
}
