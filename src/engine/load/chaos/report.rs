//! A chaos run's report: chaos.json (and `--json`), the lines on stdout, and the evidence.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::{replay_command, Options};
use crate::engine::driver::pragmas_of;
use crate::engine::evidence::{self, Processes};
use crate::engine::jepsen::Found;
use crate::engine::load::pipeline::Outcome;
use crate::engine::load::profile::{LoadProfile, Verdict};
use crate::engine::load::server_kills::ServerKill;
use crate::engine::nemesis::POWER_CUTS_NAME;
use crate::engine::state::{SnapshotOf, SQLITE};
use crate::engine::LabStack;
use crate::store;

#[derive(Debug, Serialize)]
pub struct Report {
    pub lab: String,
    pub ok: bool,
    pub seed: u64,
    pub messages: usize,
    pub consumers: usize,
    pub batch: u32,
    pub lease_ms: i64,
    pub kills_requested: usize,
    pub kills_done: usize,
    /// Kills sent as the process was ending by itself; each was made again on another.
    pub kills_missed: usize,
    pub kills_by_role: BTreeMap<String, usize>,
    pub processes: usize,
    pub busy_exits: usize,
    pub unexpected_exits: usize,
    pub timed_out: usize,
    pub wall_ms: f64,
    pub replay: String,
    /// The lab's own counts.
    pub check: serde_json::Value,
    /// In Jepsen's words: every anomaly found, and those the design does not allow.
    pub anomalies: Vec<Found>,
    pub bad_anomalies: Vec<Found>,
    pub lost: i64,
    pub duplicated: i64,
    pub problems: Vec<String>,
    pub evidence: Option<String>,
    /// A lab on servers: the design run (`--variant`), the servers chaos killed and
    /// restarted, and the roles' exits (69) the servers' loss caused. Absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_kills: Vec<ServerKill>,
    #[serde(skip_serializing_if = "is_zero")]
    pub server_exits: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The run's own problems beyond the lab's check: exits and hung processes.
pub fn run_problems(unexpected: usize, timed_out: usize) -> Vec<String> {
    let mut problems = Vec::new();
    if unexpected > 0 {
        problems.push(format!(
            "{} exited with an unexpected code (see processes.json)",
            crate::out::plural(unexpected, "process", "processes")
        ));
    }
    if timed_out > 0 {
        problems.push(format!(
            "{} hung past --process-timeout-ms and were killed",
            crate::out::plural(timed_out, "process", "processes")
        ));
    }
    problems
}

impl Report {
    pub fn new(
        lab: &LabStack,
        o: &Options,
        outcome: &Outcome,
        verdict: &Verdict,
        mut problems: Vec<String>,
    ) -> Report {
        problems.extend(run_problems(outcome.unexpected_exits, outcome.timed_out));
        let mut kills_by_role = BTreeMap::new();
        for k in outcome.kills.iter().filter(|k| k.landed) {
            *kills_by_role.entry(k.role.clone()).or_insert(0) += 1;
        }
        Report {
            lab: lab.full_name(),
            ok: problems.is_empty(),
            seed: o.seed,
            messages: o.messages,
            consumers: o.consumers,
            batch: o.batch,
            lease_ms: o.lease_ms,
            kills_requested: o.kills,
            kills_done: outcome.kills.iter().filter(|k| k.landed).count(),
            kills_missed: outcome.kills.iter().filter(|k| !k.landed).count(),
            kills_by_role,
            processes: outcome.processes.len(),
            busy_exits: outcome.busy_exits,
            unexpected_exits: outcome.unexpected_exits,
            timed_out: outcome.timed_out,
            wall_ms: outcome.wall_ms,
            replay: replay_command(lab, o),
            check: verdict.check.clone(),
            anomalies: verdict.anomalies.clone(),
            bad_anomalies: verdict.bad_anomalies.clone(),
            lost: verdict.lost,
            duplicated: verdict.duplicated,
            problems,
            evidence: o.out.as_deref().map(evidence::recorded_path),
            variant: o.variant.clone(),
            server_kills: outcome.server_kills.clone(),
            server_exits: outcome.server_exits,
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn write_evidence(
    dir: &Path,
    lab: &LabStack,
    profile: &dyn LoadProfile,
    o: &Options,
    command: &[String],
    outcome: &Outcome,
    report: &Report,
    started: Instant,
) -> Result<()> {
    let mut full = vec!["crashlab".to_string()];
    full.extend(command.iter().cloned());
    let mut processes = Processes {
        lab: lab.full_name(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: evidence::build_checkout().and_then(|c| evidence::git_state(&c)),
        sqlite_version: store::sqlite_version(),
        pragmas: pragmas_of(&o.power.profile()?),
        command: full,
        crash_mode: o.crash_mode_name().into(),
        step_timeout_ms: o.process_timeout_ms,
        moved_crashes: Vec::new(),
        total_wall_ms: 0.0,
        processes: outcome.processes.clone(),
    };
    let databases: Vec<String> = profile
        .databases()
        .iter()
        .map(|db| format!("db/{db}"))
        .collect();
    let databases: Vec<&str> = databases.iter().map(String::as_str).collect();
    let rows = SQLITE.snapshot(&SnapshotOf::new(dir, &databases, "chaos", "final"))?;
    evidence::write_database_files(dir, &rows)?;
    evidence::write_json(dir, "chaos.json", report)?;
    evidence::write_json(dir, "kills.json", &outcome.kills)?;
    if o.cut().is_some() {
        let mut text = String::new();
        for cut in &outcome.cuts {
            text.push_str(&serde_json::to_string(cut)?);
            text.push('\n');
        }
        anyhow::Context::with_context(std::fs::write(dir.join(POWER_CUTS_NAME), text), || {
            format!("writing {POWER_CUTS_NAME}")
        })?;
    }
    processes.total_wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    evidence::write_json(dir, evidence::PROCESSES, &processes)?;
    evidence::write_manifest(dir)?;
    Ok(())
}

/// The anomalies by kind: `duplicate-delivery x3 (allowed)`, or `none`.
fn anomalies(r: &Report) -> String {
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for f in &r.anomalies {
        counts.entry(f.anomaly.name()).or_default().0 += 1;
    }
    for f in &r.bad_anomalies {
        counts.entry(f.anomaly.name()).or_default().1 += 1;
    }
    if counts.is_empty() {
        return "none".to_string();
    }
    counts
        .iter()
        .map(|(name, (all, bad))| match bad {
            0 => format!("{name} x{all} (allowed)"),
            _ => format!("{name} x{all}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `server kills: rabbitmq 2 (restarted in 4712 ms, 5021 ms); roles ended by it (exit 69) 5`
pub fn server_line(r: &Report) -> Option<String> {
    let first = r.server_kills.first()?;
    let restarts: Vec<String> = r
        .server_kills
        .iter()
        .map(|k| format!("{:.0} ms", k.restart_wall_ms))
        .collect();
    Some(format!(
        "server kills: {} {} (restarted in {}); roles ended by its loss (exit 69) {}",
        first.server.name(),
        r.server_kills.len(),
        restarts.join(", "),
        r.server_exits
    ))
}

/// `rate: 200 messages in 12.3 s, 16.3 messages/s` (end to end, kills and restarts included).
pub fn rate_line(messages: usize, wall_ms: f64) -> String {
    let per_s = if wall_ms > 0.0 {
        messages as f64 * 1000.0 / wall_ms
    } else {
        0.0
    };
    format!(
        "rate: {} in {:.1} s, {per_s:.1} messages/s end to end",
        crate::out::plural(messages, "message", "messages"),
        wall_ms / 1000.0
    )
}

/// The report on stdout; `summary` holds the lab's lines for its counts.
pub fn print(lab: &LabStack, r: &Report, summary: &[String]) {
    crate::say!(
        "chaos {}: {}, {}, batch {}, seed {}: {} of {}, {}, wall_ms {:.1}",
        lab.id(),
        crate::out::plural(r.messages, "message", "messages"),
        crate::out::plural(r.consumers, "consumer", "consumers"),
        r.batch,
        r.seed,
        r.kills_done,
        crate::out::plural(r.kills_requested, "kill", "kills"),
        crate::out::plural(r.processes, "process", "processes"),
        r.wall_ms
    );
    let by_role: Vec<String> = r
        .kills_by_role
        .iter()
        .map(|(role, n)| format!("{role} {n}"))
        .collect();
    if !by_role.is_empty() {
        crate::say!("kills by role: {}", by_role.join(", "));
    }
    if let Some(line) = server_line(r) {
        crate::say!("{line}");
    }
    if let Some(variant) = &r.variant {
        crate::say!("design: variant {variant} (a known-broken one)");
    }
    crate::say!("{}", rate_line(r.messages, r.wall_ms));
    for line in summary {
        crate::say!("{line}");
    }
    crate::say!("busy exits {}", r.busy_exits);
    crate::say!("anomalies: {}", anomalies(r));
    crate::say!(
        "lost effects {}, duplicated effects {}",
        r.lost,
        r.duplicated
    );
    if r.kills_done < r.kills_requested {
        crate::say!(
            "note: {} of {} were made: the work ended before the rest found a running process",
            r.kills_done,
            crate::out::plural(r.kills_requested, "kill", "kills")
        );
    }
    if let Some(dir) = &r.evidence {
        crate::say!("evidence in {dir}");
    }
    crate::say!("replay: {}", r.replay);
    if r.ok {
        crate::say!("PASS");
    } else {
        for p in &r.problems {
            crate::say!("  {p}");
        }
        crate::say!("FAIL");
    }
}

/// `--junit FILE`: one test case for the run's seed, failed with its losses, duplicates, bad
/// anomalies and problems.
pub fn junit(report: &Report) -> crate::junit::Suite {
    let mut failed = Vec::new();
    if report.lost != 0 || report.duplicated != 0 {
        failed.push(format!(
            "lost {}, duplicated {}",
            report.lost, report.duplicated
        ));
    }
    for a in &report.bad_anomalies {
        failed.push(format!("{} {}: {}", a.anomaly.name(), a.item, a.detail));
    }
    failed.extend(report.problems.iter().cloned());
    if !report.ok && failed.is_empty() {
        failed.push("the run failed".to_string());
    }
    let outcome = match failed.first() {
        None => crate::junit::Outcome::Passed,
        Some(first) => crate::junit::Outcome::Failed {
            message: first.clone(),
            text: failed.join("\n"),
        },
    };
    crate::junit::Suite {
        name: format!("crashlab chaos {}", report.lab),
        time_s: report.wall_ms / 1000.0,
        cases: vec![crate::junit::Case {
            name: format!("seed {}", report.seed),
            classname: report.lab.clone(),
            time_s: report.wall_ms / 1000.0,
            outcome,
            system_out: format!(
                "{} kills, {} processes, lost {}, duplicated {}",
                report.kills_done, report.processes, report.lost, report.duplicated
            ),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_messages_over_the_wall() {
        assert_eq!(
            rate_line(200, 8_000.0),
            "rate: 200 messages in 8.0 s, 25.0 messages/s end to end"
        );
        assert_eq!(
            rate_line(1, 0.0),
            "rate: 1 message in 0.0 s, 0.0 messages/s end to end"
        );
    }
}
