//! What the roles of a lab on servers trace beside their SQL, checked against the protocol
//! and the databases: `AMQP …` lines per process as AMQP 0-9-1 allows them on one channel
//! (amqp.rs), against each other and the committed SQL of the scenario (cross.rs), against
//! the queue's ready count the broker reported after every step (queue.rs); and the
//! PostgreSQL facts (`SEQUENCE`, `XID`, `HORIZON`) against the SQL beside them (pg.rs).
//! Every finding names the process's stdout, the step and the line.

mod amqp;
mod cross;
mod pg;
mod queue;
mod scene;
#[cfg(test)]
mod tests;

use super::servers::Record;
use super::tree::Tree;
use super::Report;
use crate::engine::evidence::{self, Process};
use crate::engine::scenario::{Scenario, Step};
use crate::engine::stack::Server;
use crate::engine::state::{FileRow, END};
use crate::engine::LabStack;
use scene::Proc;

/// Ready counts tried when a digest is named by its count (a lab's queue holds a handful).
const COUNT_MAX: u32 = 100_000;

pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
    rows: Option<&[FileRow]>,
    servers: Option<&Record>,
) {
    // Findings name `scenario/step` in a run of several scenarios, as run.rs does.
    let many = steps.iter().any(|(s, _)| s.name != steps[0].0.name);
    let broker_killed = servers.is_some_and(|r| r.killed(Server::Rabbitmq));
    let pg_killed = servers.is_some_and(|r| r.killed(Server::Postgres));
    let mut at = 0;
    while at < steps.len() {
        let scenario = steps[at].0;
        let n = scenario.steps.len();
        let procs = scene(tree, scenario, &steps[at..at + n], processes, many);
        at += n;
        let Some(procs) = procs else {
            continue;
        };
        for p in &procs {
            for (line, why) in &p.bad {
                report.problem(&p.file, format!("{}: {why}", p.at(*line)));
            }
            for (line, why) in amqp::protocol(&p.ops, p.ended_well) {
                report.problem(&p.file, format!("{}: {why}", p.at(line)));
            }
            for (_, why) in pg::in_process(p) {
                report.problem(&p.file, why);
            }
        }
        let found = cross::deliveries(&procs)
            .into_iter()
            .chain(cross::published_rows(&procs))
            .chain(pg::across(&procs, pg_killed));
        for (i, why) in found {
            report.problem(&procs[i].file, why);
        }
        if let (Some(rows), Some(def)) = (rows, lab.stack) {
            // One wrong operation shifts every later count: the first row that disagrees is
            // the finding, with how many after it disagree too.
            let mut first: std::collections::BTreeMap<&str, (String, usize)> = Default::default();
            for row in rows
                .iter()
                .filter(|r| r.scenario == scenario.name && def.queues.contains(&r.file.as_str()))
            {
                let k = if row.after_step == END {
                    n.saturating_sub(1)
                } else if let Some(k) = scenario.steps.iter().position(|s| s.name == row.after_step)
                {
                    k
                } else {
                    continue;
                };
                if let Some(why) = queue_row(&procs, row, k, broker_killed) {
                    first.entry(row.file.as_str()).or_insert((why, 0)).1 += 1;
                }
            }
            for (why, count) in first.into_values() {
                let label = if many {
                    format!("{}: ", scenario.name)
                } else {
                    String::new()
                };
                let more = match count - 1 {
                    0 => String::new(),
                    n => format!(" (and {n} later rows)"),
                };
                report.problem(evidence::DATABASE_FILES, format!("{label}{why}{more}"));
            }
        }
    }
}

/// The row's ready count against the trace's bounds; the finding, if any.
fn queue_row(procs: &[Proc], row: &FileRow, k: usize, broker_killed: bool) -> Option<String> {
    let b = queue::bounds(procs, &row.file, k, broker_killed);
    let implied = if b.lo == b.hi {
        format!("{}", b.lo)
    } else {
        format!("{} to {}", b.lo, b.hi)
    };
    let after = format!("{} after {}", row.file, row.after_step);
    if !row.exists {
        return (b.lo > 0).then(|| {
            format!("{after}: no queue, but the AMQP trace implies {implied} ready messages")
        });
    }
    let digest = row.logical_sha256.as_deref()?;
    let hi = u32::try_from(b.hi).unwrap_or(u32::MAX);
    let lo = u32::try_from(b.lo).unwrap_or(u32::MAX);
    if (lo..=hi).any(|n| crate::engine::state::server::queue::digest_of_count(n) == digest) {
        return None;
    }
    let count = (0..=COUNT_MAX)
        .find(|n| crate::engine::state::server::queue::digest_of_count(*n) == digest)
        .map_or("a count no digest names".to_string(), |n| n.to_string());
    Some(format!(
        "{after}: the broker reported {count} ready messages, the AMQP trace implies {implied}"
    ))
}

/// The scenario's processes, their stdout read and their AMQP lines parsed (a line that
/// does not parse is a finding); None when a process is missing (said by run.rs).
fn scene(
    tree: &Tree,
    scenario: &Scenario,
    steps: &[(&Scenario, &Step)],
    processes: &[Process],
    many: bool,
) -> Option<Vec<Proc>> {
    let mut procs = Vec::with_capacity(steps.len());
    let last = steps.len().saturating_sub(1);
    for (index, (_, step)) in steps.iter().enumerate() {
        let record = processes
            .iter()
            .find(|p| p.scenario == scenario.name && p.step == step.name)?;
        let text = std::str::from_utf8(tree.get(&record.stdout)?).ok()?;
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let label = if many {
            format!("{}/{}", scenario.name, step.name)
        } else {
            step.name.clone()
        };
        let mut proc = Proc {
            label,
            file: record.stdout.clone(),
            index,
            last: step
                .background
                .map(|b| {
                    b.stop_after
                        .and_then(|name| scenario.steps.iter().position(|s| s.name == name))
                        .unwrap_or(last)
                })
                .unwrap_or(index),
            background: step.background.is_some(),
            ended_well: record.exit == 0 && record.signal.is_none() && !record.timed_out,
            lines,
            ops: Vec::new(),
            bad: Vec::new(),
        };
        for (i, line) in proc.lines.iter().enumerate() {
            match amqp::parse(line) {
                Some(Ok(op)) => proc.ops.push((i + 1, op)),
                Some(Err(why)) => proc.bad.push((i + 1, why)),
                None => {}
            }
        }
        procs.push(proc);
    }
    Some(procs)
}
