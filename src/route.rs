//! One function per subcommand: turn parsed arguments into calls of the modules that work.

use anyhow::Result;

use crate::cli::{Command, CrashArgs};
use crate::crash;
use crate::engine;
use crate::fail;
use crate::labs::http_dispatch;
use crate::labs::outbox_inbox::{consumer, enqueue, publisher, readback, sender, variant};
use crate::out;

/// Arm the crash point of a phase; an unknown or foreign point is a usage error.
fn arm(args: &CrashArgs, phase: &str, points: &'static [crash::PointDef]) -> Result<()> {
    if let Some(spec) = &args.crash_at {
        let at = crash::parse(spec, points, Some(phase))?;
        crash::arm(at, args.crash_mode);
    }
    Ok(())
}

pub fn run(command: Command) -> Result<i32> {
    let points = crate::labs::outbox_inbox::points::POINTS;
    let dispatch_points = crate::labs::http_dispatch::points::POINTS;
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
            out::line(&format!(
                "SENT {}",
                out::plural(written, "contract", "contracts")
            ));
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
            out::line(&format!(
                "PUBLISHED {}",
                out::plural(published, "message", "messages")
            ));
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
            let stage = expected_stage(
                expect.as_deref(),
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
            check_stage(stage, &value)
        }
        Command::Intent {
            intents,
            key,
            body,
            crash,
        } => {
            arm(&crash, "intent", dispatch_points)?;
            http_dispatch::intent::run(&intents, &key, &body)?;
            Ok(fail::EXIT_OK)
        }
        Command::Receiver {
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
        Command::Dispatcher {
            intents,
            receipts,
            history,
            port,
            port_file,
            lock,
            lock_wait_ms,
            timeout_ms,
            unknown,
            crash,
        } => {
            arm(&crash, "dispatcher", dispatch_points)?;
            let lock = lock.unwrap_or_else(|| http_dispatch::dispatcher::default_lock(&intents));
            let port = http_dispatch::model::resolve_port(port, port_file.as_deref())?;
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
        Command::DispatchVerify {
            intents,
            receipts,
            history,
            receiver,
            json,
            expect,
        } => {
            let stage = expected_stage(
                expect.as_deref(),
                crate::labs::http_dispatch::lab::LAB.stages,
            )?;
            let state = http_dispatch::readback::read(&http_dispatch::readback::Paths {
                intents: &intents,
                receipts: &receipts,
                history: &history,
                receiver: &receiver,
            })?;
            let value = serde_json::to_value(&state)?;
            if json {
                out::line(&serde_json::to_string(&value)?);
            } else {
                out::line(&format!(
                    "effects {} / receipts {} / history {} | intents {} undelivered {} unknown {} attempts {}",
                    state.receiver.effects, state.receipts.receipts, state.history.history,
                    state.intents.intents, state.intents.undelivered, state.intents.unknown,
                    state.intents.attempts
                ));
            }
            check_stage(stage, &value)
        }
        Command::DispatchPost {
            port,
            port_file,
            key,
            body,
            body_bytes,
            get_effect,
            timeout_ms,
        } => {
            let port = http_dispatch::model::resolve_port(port, port_file.as_deref())?;
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
        Command::Points { lab: name, json } => {
            let labs: Vec<&engine::Lab> = match name {
                Some(name) => vec![crate::engine::registry::find(&name)?],
                None => crate::engine::registry::labs().to_vec(),
            };
            if json {
                let value: Vec<serde_json::Value> = labs
                    .iter()
                    .map(|l| serde_json::json!({"lab": l.full_name(), "points": l.points}))
                    .collect();
                crate::say!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                for l in labs {
                    crate::say!("lab {} ({}):", l.id, l.slug);
                    for p in l.points {
                        crate::say!("  {:<34} {}", p.name, p.window);
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
            json,
        } => {
            let lab = crate::engine::registry::find(&name)?;
            let out_dir = out_dir.unwrap_or_else(|| engine::driver::default_out(lab));
            let command = recorded_args();
            engine::driver::run(
                lab,
                &engine::driver::Options {
                    out: out_dir,
                    keep_db,
                    moves,
                    crash_mode,
                    step_timeout_ms,
                    command,
                    json,
                },
            )
        }
        command @ Command::Chaos { .. } => {
            let (name, options) = command.into_chaos().expect("a chaos command");
            let (lab, profile) = crate::engine::load::profile(&name)?;
            crate::engine::load::chaos::run(lab, profile, &options, recorded_args())
        }
        Command::Bench {
            lab: name,
            messages,
            batch,
            consumers,
            runs,
            json,
        } => {
            let (lab, profile) = crate::engine::load::profile(&name)?;
            crate::engine::load::bench::run(
                lab,
                profile,
                &crate::engine::load::bench::Options {
                    messages,
                    batch,
                    consumers,
                    runs,
                    json,
                },
            )
        }
        Command::Explore(args) => engine::explore::command(&args, recorded_args()),
        Command::Digest { files, json } => {
            let mut documents = Vec::with_capacity(files.len());
            for file in files {
                if !file.is_file() {
                    return Err(fail::usage(format!(
                        "{} does not exist or is not a file",
                        file.display()
                    )));
                }
                let (bytes, sha) = engine::files::sha256_file(&file)?;
                let logical = engine::files::logical_sha256_of_copy(&file).map_err(|e| {
                    fail::usage(format!(
                        "{} is not a readable SQLite database: {}",
                        file.display(),
                        fail::one_line(&e)
                    ))
                })?;
                // Every file is checked before anything is printed: a bad one names itself
                // and leaves stdout empty, in either form.
                documents.push(serde_json::json!({
                    "file": file.display().to_string(),
                    "bytes": bytes,
                    "sha256": sha,
                    "logical_sha256": logical,
                }));
            }
            if json {
                crate::say!("{}", serde_json::to_string_pretty(&documents)?);
            } else {
                for d in &documents {
                    crate::say!(
                        "{} bytes={} sha256={} logical_sha256={}",
                        d["file"].as_str().unwrap_or_default(),
                        d["bytes"],
                        d["sha256"].as_str().unwrap_or_default(),
                        d["logical_sha256"].as_str().unwrap_or_default()
                    );
                }
            }
            Ok(fail::EXIT_OK)
        }
        Command::Audit {
            dir,
            json,
            strict_sources,
            rerun: true,
        } => engine::rerun::run(&dir, json, strict_sources),
        Command::Audit {
            dir,
            json,
            strict_sources,
            rerun: false,
        } => engine::audit::run(&dir, json, strict_sources),
    }
}

/// This process's arguments for the evidence: an absolute path (an `--out` outside the
/// checkout, say) is recorded by its last component only, so no machine path is written.
pub fn recorded_args() -> Vec<String> {
    std::env::args()
        .skip(1)
        .map(|arg| engine::evidence::recorded_path(std::path::Path::new(&arg)))
        .collect()
}

/// The stage `--expect NAME` names among a lab's stages; an unknown name lists the known ones.
fn expected_stage(
    name: Option<&str>,
    stages: &[engine::scenario::Stage],
) -> Result<Option<engine::scenario::Stage>> {
    let Some(name) = name else {
        return Ok(None);
    };
    match stages.iter().find(|s| s.name == name) {
        Some(stage) => Ok(Some(*stage)),
        None => {
            let known: Vec<&str> = stages.iter().map(|s| s.name).collect();
            Err(fail::usage(format!(
                "unknown stage '{name}'; known: {}",
                known.join(", ")
            )))
        }
    }
}

/// `--expect`: exit 1 with the field-by-field diff when the readback is not the stage.
fn check_stage(
    stage: Option<engine::scenario::Stage>,
    readback: &serde_json::Value,
) -> Result<i32> {
    if let Some(stage) = stage {
        let problems = stage.diff(readback);
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
