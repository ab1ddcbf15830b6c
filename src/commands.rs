//! One function per subcommand: turn parsed arguments into calls of the modules that work.

use anyhow::Result;

use crate::cli::{Command, CrashArgs};
use crate::crash;
use crate::fail;
use crate::lab;
use crate::out;
use crate::outbox::{consumer, enqueue, publisher, readback, sender, variant};

/// Arm the crash point of a phase; an unknown or foreign point is a usage error.
fn arm(args: &CrashArgs, phase: &str, points: &'static [crash::PointDef]) -> Result<()> {
    if let Some(spec) = &args.crash_at {
        let at = crash::parse(spec, points, Some(phase))?;
        crash::arm(at, args.crash_mode);
    }
    Ok(())
}

pub fn dispatch(command: Command) -> Result<i32> {
    let points = crate::outbox::points::POINTS;
    match command {
        Command::Sender {
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
            out::line(&format!("SENT {written} contracts"));
            Ok(fail::EXIT_OK)
        }
        Command::Publisher {
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
            out::line(&format!("PUBLISHED {published} messages"));
            Ok(fail::EXIT_OK)
        }
        Command::Consumer {
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
            crate::outbox::model::check_id("consumer", &consumer_id)?;
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
        Command::Enqueue {
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
        Command::Verify {
            sender,
            queue,
            receiver,
            json,
            expect,
        } => {
            let stage = match &expect {
                None => None,
                Some(name) => Some((lab::lab14::LAB.stage)(name).ok_or_else(|| {
                    let known: Vec<&str> = lab::lab14::STAGES.iter().map(|s| s.name).collect();
                    fail::usage(format!(
                        "unknown stage '{name}'; known: {}",
                        known.join(", ")
                    ))
                })?),
            };
            let state = readback::read(
                &readback::Paths {
                    sender: &sender,
                    queue: &queue,
                    receiver: &receiver,
                },
                true,
            )?;
            let value = serde_json::to_value(&state)?;
            if json {
                out::line(&serde_json::to_string(&value)?);
            } else {
                out::line(&format!(
                    "sender: contracts {} outbox_pending {} outbox_sent {} | queue: deliveries {} messages {} pending {} acked {} rejected {} | receiver: inbox {} ledger {}",
                    state.sender.contracts, state.sender.outbox_pending, state.sender.outbox_sent,
                    state.queue.deliveries, state.queue.messages, state.queue.pending, state.queue.acked,
                    state.queue.rejected, state.receiver.inbox, state.receiver.ledger
                ));
            }
            if let Some(stage) = stage {
                let problems = stage.diff(&value);
                if !problems.is_empty() {
                    return Err(fail::failed(format!(
                        "readback does not match stage {}: {}",
                        stage.name,
                        problems.join("; ")
                    )));
                }
            }
            Ok(fail::EXIT_OK)
        }
        Command::Points { lab: name, json } => {
            let labs: Vec<&lab::Lab> = match name {
                Some(name) => vec![lab::find(&name)?],
                None => lab::LABS.to_vec(),
            };
            if json {
                let value: Vec<serde_json::Value> = labs
                    .iter()
                    .map(|l| serde_json::json!({"lab": l.full_name(), "points": l.points}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                for l in labs {
                    println!("lab {} ({}):", l.id, l.slug);
                    for p in l.points {
                        println!("  {:<34} {}", p.name, p.window);
                    }
                }
            }
            Ok(fail::EXIT_OK)
        }
        Command::Driver {
            lab: name,
            out: out_dir,
            keep_db,
            moves,
            crash_mode,
            step_timeout_ms,
        } => {
            let lab = lab::find(&name)?;
            let out_dir = out_dir.unwrap_or_else(|| lab::driver::default_out(lab));
            let command = recorded_args();
            lab::driver::run(
                lab,
                &lab::driver::Options {
                    out: out_dir,
                    keep_db,
                    moves,
                    crash_mode,
                    step_timeout_ms,
                    command,
                },
            )
        }
        Command::Explore(args) => lab::explore::command(&args, recorded_args()),
        Command::Audit {
            dir,
            json,
            strict_sources,
        } => lab::audit::run(&dir, json, strict_sources),
    }
}

/// This process's arguments for the evidence: an absolute path (an `--out` outside the
/// checkout, say) is recorded by its last component only, so no machine path is written.
pub fn recorded_args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .map(|arg| {
            let path = std::path::Path::new(&arg);
            if path.is_absolute() {
                path.file_name()
                    .map_or("/".to_string(), |n| n.to_string_lossy().into_owned())
            } else {
                arg
            }
        })
        .collect()
}
