//! Lab f3's role subcommands on the stack: stack-redeliver-enqueue, stack-redeliver-consumer,
//! stack-redeliver-verify.

use anyhow::Result;

use super::commands::Roles;
use super::points::POINTS;
use super::{consumer, readback, roles};
use crate::fail;
use crate::labs::http_dispatch::model::{check_key, shown_key};
use crate::out;
use crate::role::{arm, expected_stage, readback_out};
use crate::store::amqp::Broker;

/// Runs the role the command line named (the engine calls this through `Lab::cli`).
pub fn run(matches: &clap::ArgMatches) -> Result<i32> {
    let roles = <Roles as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| fail::usage(e.to_string()))?;
    match roles {
        Roles::StackRedeliverEnqueue { queue, id, body } => {
            check_key(&id)
                .map_err(|e| fail::usage(format!("--id is not a valid message id: {e}")))?;
            let mut broker = Broker::open(&queue, true, true)?;
            // One publish per message and queue: its id is the message's own, so that two runs
            // of a scenario print the same trace (`audit --rerun`).
            let sent = broker.publish(&id, &format!("{id}-1"), &body, true)?;
            broker.confirm(sent)?;
            broker.close()?;
            out::line(&format!("ENQUEUED message {}", shown_key(&id)));
            Ok(fail::EXIT_OK)
        }
        Roles::StackRedeliverConsumer {
            queue,
            db,
            port_file,
            consumer: name,
            variant,
            heartbeat_s,
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
                db: &db,
                port_file: &port_file,
                consumer: &name,
                variant,
                heartbeat_s,
                wait_ms,
                timeout_ms,
            })?;
            Ok(fail::EXIT_OK)
        }
        Roles::StackRedeliverVerify {
            db,
            queue,
            receiver,
            output,
        } => {
            let stage = expected_stage(output.expect.as_deref(), super::lab::ON_SERVERS.stages)?;
            let state = readback::read(&db, &queue, &receiver)?;
            readback_out(output.json, &state, &readback::line(&state), stage)
        }
    }
}
