//! `servers.json` of a run on servers: the stack the lab runs on, one startup per server of
//! it, and the kills. The kills are derived from the record: under `--crash-mode server-kill`
//! exactly one per step that crashed at its armed point, in step order, each of the server
//! `--server` names, at that step's point (and each server restarted once per kill of it);
//! under any other crash mode none. A server is private exactly when the command gave no URL
//! for it. (Ports, versions and times are attested, not proved.)

use serde::Deserialize;
use serde_json::Value;

use super::command::Driver;
use super::tree::Tree;
use super::{sequence, Report};
use crate::engine::evidence::Process;
use crate::engine::fleet::{kill, SERVERS};
use crate::engine::scenario::{Scenario, Step};
use crate::engine::stack::Server;
use crate::engine::LabStack;

/// What no file can prove of the servers: shown by the audit, never checked.
const ATTESTED: &str = "servers.json port, version, start_wall_ms and restart_wall_ms";

#[derive(Deserialize)]
pub(super) struct Record {
    stack: String,
    servers: Value,
    kills: Vec<Kill>,
    /// Whether the run settled its queues: one broker restart per attempt, before any kill.
    #[serde(default)]
    queues_settled: bool,
}

#[derive(Deserialize)]
struct Kill {
    server: Server,
    point: String,
    restart_wall_ms: f64,
}

impl Record {
    /// Whether the run killed that server (the kills themselves are checked by check_kills).
    pub(super) fn killed(&self, server: Server) -> bool {
        self.kills.iter().any(|k| k.server == server)
    }
}

/// The stack and its servers; the record, for `check_kills`, when the lab runs on servers.
pub(super) fn check(report: &mut Report, tree: &Tree, lab: &LabStack) -> Option<Record> {
    let Some(def) = lab.stack else {
        // A lab on files writes no servers.json; one there is said by kept.rs.
        return None;
    };
    report.attested.push(ATTESTED.to_string());
    let record = tree.json::<Record>(report, SERVERS)?;
    if record.stack != def.name {
        report.problem(
            SERVERS,
            format!(
                "stack '{}', but lab {} runs on {}",
                record.stack,
                lab.id(),
                def.name
            ),
        );
    }
    let count = record.servers.as_array().map_or(0, Vec::len);
    let want = usize::from(!def.databases.is_empty()) + usize::from(!def.queues.is_empty());
    if count != want {
        report.problem(
            SERVERS,
            format!("{count} servers listed, stack {} has {want}", def.name),
        );
    }
    for kill in &record.kills {
        if !kill.server.in_stack(def) {
            report.problem(
                SERVERS,
                format!(
                    "a kill of {}, which stack {} has not",
                    kill.server.name(),
                    def.name
                ),
            );
        }
        if !lab.points.iter().any(|p| p.name == kill.point) || !kill.restart_wall_ms.is_finite() {
            report.problem(
                SERVERS,
                format!("a kill at '{}', no point of lab {}", kill.point, lab.id()),
            );
        }
    }
    Some(record)
}

/// The kills and each server's `private` and restarts, against what the recorded command
/// and the crashed steps (`steps` in the run's order, with their records) make of them.
pub(super) fn check_kills(
    report: &mut Report,
    record: &Record,
    command: &Driver,
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
) {
    let expected = expected_kills(command, steps, processes);
    let name = |(server, point): &(Server, String)| format!("kill of {} at {point}", server.name());
    let want: Vec<String> = expected.iter().map(name).collect();
    let found: Vec<String> = record
        .kills
        .iter()
        .map(|k| name(&(k.server, k.point.clone())))
        .collect();
    if want.is_empty() && !found.is_empty() {
        report.problem(
            SERVERS,
            format!(
                "{} kills, but crash mode {} kills no server",
                found.len(),
                command.nemesis.name()
            ),
        );
    } else {
        for d in sequence::differences(&want, &found, 10) {
            report.problem(SERVERS, format!("kills: {d}"));
        }
    }
    let settles = command.stack.server == Some(Server::Rabbitmq);
    if record.queues_settled != settles {
        report.problem(
            SERVERS,
            format!(
                "queues_settled {}, the command gives {settles}",
                record.queues_settled
            ),
        );
    }
    let Some(servers) = record.servers.as_array() else {
        report.problem(SERVERS, "servers is not a list");
        return;
    };
    for entry in servers {
        let Ok(server) = serde_json::from_value::<Server>(entry["server"].clone()) else {
            report.problem(
                SERVERS,
                format!("server {}, not one crashlab runs", entry["server"]),
            );
            continue;
        };
        // A server the user gave (its URL) is never crashlab's own; every other one is.
        let (flag, given) = match server {
            Server::Postgres => ("--pg-url", command.stack.pg_url.is_some()),
            Server::Rabbitmq => ("--amqp-url", command.stack.amqp_url.is_some()),
        };
        if entry["private"] != Value::Bool(!given) {
            report.problem(
                SERVERS,
                format!(
                    "{} private {}, but the command gives {}{flag}",
                    server.name(),
                    entry["private"],
                    if given { "" } else { "no " }
                ),
            );
        }
        let kills = expected.iter().filter(|(s, _)| *s == server).count();
        let restarts = entry["restart_wall_ms"].as_array().map(Vec::len);
        let settling = crate::engine::fleet::settle_restarts(settles, server);
        let restarts_ok = restarts
            .and_then(|n| n.checked_sub(kills))
            .is_some_and(|n| settling.contains(&n));
        if !restarts_ok {
            report.problem(
                SERVERS,
                format!(
                    "{} restarted {} times, but killed {kills} times and {}..={} restarts settle the queues",
                    server.name(),
                    restarts.map_or("no list of".to_string(), |n| n.to_string()),
                    settling.start(),
                    settling.end()
                ),
            );
        }
    }
}

/// Under server-kill, one kill per step that ended as its armed kill ends it (the driver
/// kills the server after exactly those), of `--server`, at the step's point; else none.
fn expected_kills(
    command: &Driver,
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
) -> Vec<(Server, String)> {
    let Some(server) = command.stack.server else {
        return Vec::new();
    };
    if !kill::kills_servers(command.nemesis) {
        return Vec::new();
    }
    let exit = command.nemesis.expected_exit();
    steps
        .iter()
        .filter(|(scenario, step)| {
            // The driver acts after a crash only of a step it waits for, not a background one.
            let record = processes
                .iter()
                .find(|p| p.scenario == scenario.name && p.step == step.name);
            step.background.is_none() && record.is_some_and(|r| r.exit == exit)
        })
        .filter_map(|(_, step)| step.crash_point().map(|p| (server, p.to_string())))
        .collect()
}
