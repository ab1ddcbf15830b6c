//! What the audit of a chaos run's evidence checks of a lab on servers: `servers.json` (the
//! stack, its servers, the kills chaos made), chaos.json's `server_kills` against the seed's
//! schedule, `server_exits` and `variant` against the processes and the command, and which
//! processes a server's loss ended (exit 69, expected). The audit (`engine::audit::chaos`)
//! calls `check` and asks `expected` for each process.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;

use super::Options;
use crate::engine::evidence::Processes;
use crate::engine::fleet::SERVERS;
use crate::engine::load::kills::{Kill, NEMESIS};
use crate::engine::load::profile::LoadProfile;
use crate::engine::load::server_kills::{self, ServerKill};
use crate::engine::nemesis::Nemesis;
use crate::engine::stack::Server;
use crate::engine::LabStack;
use crate::fail;

const CHAOS: &str = "chaos.json";

/// The fields of chaos.json this module answers for.
pub const FIELDS: [&str; 3] = ["server_kills", "server_exits", "variant"];

#[derive(Debug, Default)]
pub struct Audit {
    /// (file, problem), one line each.
    pub problems: Vec<(String, String)>,
    /// Steps a server's loss ended: running at a server kill, exit 69, not killed by chaos.
    pub ended_by_server: BTreeSet<String>,
    /// The files it covers (servers.json for a lab on servers).
    pub files: Vec<String>,
}

impl Audit {
    /// The exit and crash mode a process of the run must show: the engine's kill, its
    /// server's loss, or its own clean end.
    pub fn expected(&self, step: &str, killed: bool) -> (i32, Option<String>) {
        if killed {
            (NEMESIS.expected_exit(), Some(NEMESIS.name().to_string()))
        } else if self.ended_by_server.contains(step) {
            (
                server_kills::EXIT,
                Some(server_kills::CRASH_MODE.to_string()),
            )
        } else {
            (fail::EXIT_OK, None)
        }
    }

    fn problem(&mut self, file: &str, text: String) {
        self.problems.push((file.to_string(), text));
    }
}

#[derive(Deserialize)]
struct Record {
    stack: String,
    servers: Vec<Value>,
    kills: Vec<RecordKill>,
    /// Whether the run settled its queues (one broker restart per attempt, before any kill).
    #[serde(default)]
    queues_settled: bool,
}

#[derive(Deserialize)]
struct RecordKill {
    server: Server,
    point: String,
}

/// Check the server side of a chaos run; `servers` is servers.json's text when kept.
pub fn check(
    lab: &LabStack,
    profile: &dyn LoadProfile,
    options: &Options,
    chaos: &Value,
    servers: Option<&str>,
    processes: &Processes,
    kills: &[Kill],
) -> Audit {
    let mut audit = Audit::default();
    if chaos["variant"] != serde_json::json!(options.variant) {
        audit.problem(
            CHAOS,
            format!(
                "variant is {}, the command gives {:?}",
                chaos["variant"], options.variant
            ),
        );
    }
    let made: Vec<ServerKill> = match chaos.get("server_kills") {
        None => Vec::new(),
        Some(v) => match serde_json::from_value(v.clone()) {
            Ok(k) => k,
            Err(e) => {
                audit.problem(CHAOS, format!("server_kills: {e}"));
                Vec::new()
            }
        },
    };
    let landed: BTreeSet<&str> = kills
        .iter()
        .filter(|k| k.landed)
        .map(|k| k.step.as_str())
        .collect();
    let running: BTreeSet<&str> = made
        .iter()
        .flat_map(|k| k.running.iter().map(String::as_str))
        .collect();
    for p in &processes.processes {
        let by_server = running.contains(p.step.as_str())
            && !landed.contains(p.step.as_str())
            && p.signal.is_none()
            && !p.timed_out
            && p.exit == server_kills::EXIT;
        if by_server {
            audit.ended_by_server.insert(p.step.clone());
        }
    }
    let exits = chaos
        .get("server_exits")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if exits != audit.ended_by_server.len() as u64 {
        audit.problem(
            CHAOS,
            format!(
                "server_exits is {exits}, the processes give {}",
                audit.ended_by_server.len()
            ),
        );
    }
    let schedule = server_kills::schedule(
        options.seed,
        profile.units(options.messages),
        options.server_kills,
    );
    if made.len() != schedule.len() {
        audit.problem(
            CHAOS,
            format!(
                "{} server kills, the command asks for {}",
                made.len(),
                schedule.len()
            ),
        );
    }
    let mut since_ms = 0.0f64;
    for (i, k) in made.iter().enumerate() {
        let at = format!("server kill {}", i + 1);
        if k.kill != i + 1 || Some(k.server) != options.stack.server {
            audit.problem(
                CHAOS,
                format!("{at}: numbered {} of {}", k.kill, k.server.name()),
            );
        }
        if schedule.get(i) != Some(&k.at_units) || k.progress_units < k.at_units {
            audit.problem(
                CHAOS,
                format!(
                    "{at}: at_units {} progress_units {}, the seed schedules {:?}",
                    k.at_units,
                    k.progress_units,
                    schedule.get(i)
                ),
            );
        }
        if !(k.since_start_ms.is_finite() && k.since_start_ms >= since_ms) {
            audit.problem(CHAOS, format!("{at}: since_start_ms goes back in time"));
        }
        since_ms = since_ms.max(k.since_start_ms);
        for step in &k.running {
            if !processes.processes.iter().any(|p| &p.step == step) {
                audit.problem(CHAOS, format!("{at}: running {step}, no such process"));
            }
        }
    }
    record(&mut audit, lab, options, &made, servers);
    audit
}

/// servers.json: present exactly for a lab on servers, its stack, its servers (private
/// unless the command gave a URL, restarted once per kill), its kills chaos.json's.
fn record(
    audit: &mut Audit,
    lab: &LabStack,
    options: &Options,
    made: &[ServerKill],
    text: Option<&str>,
) {
    let Some(def) = lab.stack else {
        return;
    };
    audit.files.push(SERVERS.to_string());
    let Some(text) = text else {
        audit.problem(SERVERS, "missing: a run on servers records them".into());
        return;
    };
    let record: Record = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => return audit.problem(SERVERS, format!("not a servers record: {e}")),
    };
    if record.stack != def.name {
        audit.problem(
            SERVERS,
            format!(
                "stack '{}', lab {} runs on {}",
                record.stack,
                lab.id(),
                def.name
            ),
        );
    }
    let want: Vec<(Server, String)> = made
        .iter()
        .map(|k| (k.server, server_kills::point(k.at_units)))
        .collect();
    let found: Vec<(Server, String)> = record
        .kills
        .iter()
        .map(|k| (k.server, k.point.clone()))
        .collect();
    if want != found {
        audit.problem(
            SERVERS,
            format!("kills {found:?}, chaos.json's server_kills give {want:?}"),
        );
    }
    // A run that kills the broker settles its queues first (`fleet::Session::start`): one
    // restart per attempt, at least one, before the run's own kills.
    let settles = options.stack.server == Some(Server::Rabbitmq) && !def.queues.is_empty();
    if record.queues_settled != settles {
        audit.problem(
            SERVERS,
            format!(
                "queues_settled {}, the command gives {settles}",
                record.queues_settled
            ),
        );
    }
    for entry in &record.servers {
        let Ok(server) = serde_json::from_value::<Server>(entry["server"].clone()) else {
            audit.problem(
                SERVERS,
                format!("server {}, not one crashlab runs", entry["server"]),
            );
            continue;
        };
        let given = match server {
            Server::Postgres => options.stack.pg_url.is_some(),
            Server::Rabbitmq => options.stack.amqp_url.is_some(),
        };
        let restarts = entry["restart_wall_ms"].as_array().map(Vec::len);
        let killed = made.iter().filter(|k| k.server == server).count();
        let settling = crate::engine::fleet::settle_restarts(settles, server);
        let restarts_ok = restarts
            .and_then(|n| n.checked_sub(killed))
            .is_some_and(|n| settling.contains(&n));
        if entry["private"] != Value::Bool(!given) || !restarts_ok {
            audit.problem(
                SERVERS,
                format!(
                    "{}: private {} with {} restarts; the command and chaos.json give private {} with {killed} and {}..={} settling the queues",
                    server.name(),
                    entry["private"],
                    restarts.map_or("no".to_string(), |n| n.to_string()),
                    !given,
                    settling.start(),
                    settling.end()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests;
