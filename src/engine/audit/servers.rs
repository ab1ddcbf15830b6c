//! `servers.json` of a run on servers: the stack the lab runs on, one startup per server of
//! it, and every kill a server of that stack. (Its times are attested, not proved.)

use serde::Deserialize;

use super::tree::Tree;
use super::Report;
use crate::engine::fleet::SERVERS;
use crate::engine::stack::Server;
use crate::engine::Lab;

#[derive(Deserialize)]
struct Record {
    stack: String,
    servers: serde_json::Value,
    kills: Vec<Kill>,
}

#[derive(Deserialize)]
struct Kill {
    server: Server,
    point: String,
    restart_wall_ms: f64,
}

pub(super) fn check(report: &mut Report, tree: &Tree, lab: &Lab) {
    let Some(def) = lab.stack else {
        // A lab on files writes no servers.json; one there is said by kept.rs.
        return;
    };
    let Some(record) = tree.json::<Record>(report, SERVERS) else {
        return;
    };
    if record.stack != def.name {
        report.problem(
            SERVERS,
            format!(
                "stack '{}', but lab {} runs on {}",
                record.stack, lab.id, def.name
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
                format!("a kill at '{}', no point of lab {}", kill.point, lab.id),
            );
        }
    }
}
