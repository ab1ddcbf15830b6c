//! A chaos run's evidence. The recorded command is parsed as the binary parses it; chaos.json
//! must be that command's run (its options, its replay line) and its counts must follow from
//! processes.json and kills.json; every process and log is checked in chaos_logs.rs; the
//! kept databases must be the files database-files.json lists; and the end-to-end claims are
//! re-derived from those databases by the check the run used, on a private copy.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::chaos_kept::kept;
use super::chaos_logs;
use super::command::{self, Parsed};
use super::tree::Tree;
use super::{Report, CHAOS, KILLS};
use crate::engine::evidence::{self, Processes};
use crate::engine::files::FileRow;
use crate::engine::load::chaos::audit::Audit as ServerAudit;
use crate::engine::load::chaos::{self as load_chaos, Options};
use crate::engine::load::kills::Kill;
use crate::engine::load::profile::LoadProfile;
use crate::engine::load::roles::events_rel;
use crate::engine::LabStack;
use crate::fail;

const P: &str = evidence::PROCESSES;
const F: &str = evidence::DATABASE_FILES;

const ATTESTED: &str = "processes.json wall_ms, max_rss_kb, total_wall_ms, git, crashlab_version, \
sqlite_version, the --out of command; chaos.json wall_ms; kills.json progress_units, since_start_ms";

pub(super) fn check_chaos(report: &mut Report, tree: &Tree) {
    report.kind = "chaos".to_string();
    report.attested = vec![ATTESTED.to_string()];
    let processes: Option<Processes> = tree.json(report, P);
    let chaos: Option<Value> = tree.json(report, CHAOS);
    let kills: Option<Vec<Kill>> = tree.json(report, KILLS);
    let rows: Option<Vec<FileRow>> = tree.json(report, F);
    let (Some(processes), Some(chaos)) = (processes, chaos) else {
        return;
    };
    let kills = kills.unwrap_or_default();
    report.lab = Some(processes.lab.clone());
    report.processes = processes.processes.len();
    let (lab, profile, options) = match command::parse(&processes.command) {
        Ok(Parsed::Chaos(c)) => {
            match crate::engine::load::profile_on(&c.lab, c.options.stack.stack.as_deref()) {
                Ok((lab, profile)) => (lab, profile, c.options),
                Err(e) => {
                    report.problem(P, format!("command: {}", fail::one_line(&e)));
                    return;
                }
            }
        }
        Ok(Parsed::Driver(_)) => {
            report.problem(P, "command is a driver run; these are a chaos run's files");
            return;
        }
        Err(e) => {
            report.problem(P, e);
            return;
        }
    };
    if processes.lab != lab.full_name() {
        report.problem(
            P,
            format!(
                "lab '{}'; the command runs {}",
                processes.lab,
                lab.full_name()
            ),
        );
    }
    if processes.crash_mode != options.crash_mode_name() || !processes.moved_crashes.is_empty() {
        report.problem(
            P,
            format!(
                "chaos kills with {} and moves no crash (crash_mode, moved_crashes)",
                options.crash_mode_name()
            ),
        );
    }
    if processes.step_timeout_ms != options.process_timeout_ms {
        report.problem(
            P,
            format!(
                "step_timeout_ms {}, but command gives --process-timeout-ms {}",
                processes.step_timeout_ms, options.process_timeout_ms
            ),
        );
    }
    match options.power.profile() {
        Ok(store) => super::run::pinned_pragmas(report, &processes, &store),
        Err(e) => report.problem(P, format!("command: {}", fail::one_line(&e))),
    }

    // A lab on servers: servers.json, the server kills and the exits they caused.
    let servers = tree
        .get(crate::engine::fleet::SERVERS)
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let server_audit = load_chaos::audit::check(
        lab,
        profile,
        &options,
        &chaos,
        servers.as_deref(),
        &processes,
        &kills,
    );
    for (file, problem) in &server_audit.problems {
        report.problem(file, problem.clone());
    }
    let mut files = chaos_logs::check_processes(
        report,
        tree,
        lab,
        profile,
        &options,
        &processes,
        &kills,
        &server_audit,
    );
    files.extend(server_audit.files.iter().cloned());
    chaos_logs::check_kills(report, profile, &options, &processes, &kills);
    if let Some(cut) = options.cut() {
        files.insert(super::cuts::check_chaos(report, tree, cut, &kills));
    }
    exits(report, &processes, &kills, &server_audit);
    let derived_problems = claims(report, tree, lab, profile, &options, &processes, &chaos);
    report_fields(
        report,
        lab,
        &options,
        &processes,
        &kills,
        &chaos,
        derived_problems,
        &server_audit,
    );
    if let Some(rows) = &rows {
        files.extend(kept(report, tree, profile.databases(), rows));
    }
    for name in [evidence::MANIFEST, P, CHAOS, KILLS, F] {
        files.insert(name.to_string());
    }
    for rel in tree.files() {
        if !files.contains(rel) {
            report.problem(rel, "not a file this run writes");
        }
    }
    report.crashes = kills.iter().filter(|k| k.landed).count();
}

/// Every process ended as the run expected: 0, or SIGKILL where kills.json says chaos killed
/// it, or busy (75), which chaos restarts and counts.
fn exits(report: &mut Report, processes: &Processes, kills: &[Kill], servers: &ServerAudit) {
    for record in &processes.processes {
        let by_driver = kills.iter().any(|k| k.landed && k.step == record.step);
        let (expected_exit, _) = servers.expected(&record.step, by_driver);
        let busy = record.exit == fail::EXIT_LOCKED && !by_driver;
        if record.exit != expected_exit && !busy {
            report.problem(
                P,
                format!(
                    "{}: exit {}, expected {expected_exit}",
                    record.step, record.exit
                ),
            );
        }
        if record.timed_out {
            report.problem(P, format!("{}: killed after its timeout", record.step));
        }
    }
}

/// chaos.json's fields that follow from the command, processes.json and kills.json.
#[allow(clippy::too_many_arguments)]
fn report_fields(
    report: &mut Report,
    lab: &LabStack,
    options: &Options,
    processes: &Processes,
    kills: &[Kill],
    chaos: &Value,
    check_problems: Option<Vec<String>>,
    servers: &ServerAudit,
) {
    let count = |f: &dyn Fn(&evidence::Process) -> bool| {
        processes.processes.iter().filter(|p| f(p)).count()
    };
    let landed: Vec<&Kill> = kills.iter().filter(|k| k.landed).collect();
    let killed = |p: &evidence::Process| landed.iter().any(|k| k.step == p.step);
    let busy = count(&|p| !killed(p) && !p.timed_out && p.exit == fail::EXIT_LOCKED);
    let timed_out = count(&|p| p.timed_out);
    let unexpected = count(&|p| {
        let (expected, _) = servers.expected(&p.step, killed(p));
        !p.timed_out && p.exit != fail::EXIT_LOCKED && p.exit != expected
    });
    let mut by_role: BTreeMap<String, usize> = BTreeMap::new();
    for k in &landed {
        *by_role.entry(k.role.clone()).or_insert(0) += 1;
    }
    let mut expected = vec![
        ("lab", json!(lab.full_name())),
        ("seed", json!(options.seed)),
        ("messages", json!(options.messages)),
        ("consumers", json!(options.consumers)),
        ("batch", json!(options.batch)),
        ("lease_ms", json!(options.lease_ms)),
        ("kills_requested", json!(options.kills)),
        ("kills_done", json!(landed.len())),
        ("kills_missed", json!(kills.len() - landed.len())),
        ("kills_by_role", json!(by_role)),
        ("processes", json!(processes.processes.len())),
        ("busy_exits", json!(busy)),
        ("unexpected_exits", json!(unexpected)),
        ("timed_out", json!(timed_out)),
        ("replay", json!(load_chaos::replay_command(lab, options))),
        (
            "evidence",
            json!(options.out.as_deref().map(evidence::recorded_path)),
        ),
    ];
    if let Some(mut problems) = check_problems {
        problems.extend(load_chaos::run_problems(unexpected, timed_out));
        expected.push(("ok", json!(problems.is_empty())));
        expected.push(("problems", json!(problems)));
    }
    // A field the run never writes is a claim no check reads: refused. `wall_ms` is
    // attested, `check` compared in `claims`, `ok` and `problems` above when the
    // databases could be read.
    let known: Vec<&str> = expected
        .iter()
        .map(|(key, _)| *key)
        .chain(CLAIMS)
        .chain(["wall_ms", "ok", "problems"])
        .chain(load_chaos::audit::FIELDS)
        .collect();
    for key in chaos.as_object().into_iter().flat_map(|m| m.keys()) {
        if !known.contains(&key.as_str()) {
            report.problem(
                CHAOS,
                format!("field {key} is not one a chaos run writes (nothing may be slipped in)"),
            );
        }
    }
    for (key, value) in expected {
        if chaos[key] != value {
            report.problem(
                CHAOS,
                format!("{key} is {}, the run gives {value}", chaos[key]),
            );
        }
    }
}

/// The fields of chaos.json that the lab's check derives from the files and the events.
const CLAIMS: [&str; 5] = ["check", "anomalies", "bad_anomalies", "lost", "duplicated"];

/// The claims of chaos.json re-derived from the kept databases (a private copy of them) and
/// the kept events; returns the problems the check finds, for chaos.json's own `problems`.
fn claims(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    profile: &dyn LoadProfile,
    options: &Options,
    processes: &Processes,
    chaos: &Value,
) -> Option<Vec<String>> {
    let scratch = match crate::owner::tempdir("audit") {
        Ok(s) => s,
        Err(e) => {
            report.problem(".", format!("no scratch directory: {e}"));
            return None;
        }
    };
    for db in profile.databases() {
        for suffix in ["", "-wal"] {
            let rel = format!("db/{db}{suffix}");
            match tree.get(&rel) {
                Some(bytes) => {
                    if let Err(e) =
                        std::fs::write(scratch.path().join(format!("{db}{suffix}")), bytes)
                    {
                        report.problem(
                            ".",
                            format!("cannot copy {rel} to a scratch directory: {e}"),
                        );
                        return None;
                    }
                }
                None if suffix.is_empty() => {
                    report.problem(&rel, "missing: the claims cannot be re-checked");
                    return None;
                }
                None => {}
            }
        }
    }
    let mut text = |rel: &str| {
        tree.get(rel)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let (events, event_problems) = load_chaos::gather(&processes.processes, &mut text);
    for (step, problem) in &event_problems {
        report.problem(&events_rel(step), format!("{step}: {problem}"));
    }
    let verdict = match profile.check(scratch.path(), &options.shape(), &events) {
        Ok(v) => v,
        Err(e) => {
            report.problem(
                "db/",
                format!("cannot read the databases: {}", fail::one_line(&e)),
            );
            return None;
        }
    };
    // What the design lost or doubled is the run's finding, not a flaw of its evidence: the
    // audit re-derives it and holds chaos.json to it (`ok`, `problems` in `report_fields`,
    // the counts below), so an honest record of a failure passes and a doctored one fails.
    // In the order the run lists them (chaos::verdict).
    let mut problems = verdict.problems.clone();
    problems.extend(
        event_problems
            .iter()
            .map(|(step, p)| format!("{step}: {p}")),
    );
    let derived = match serde_json::to_value(&verdict) {
        Ok(v) => v,
        Err(e) => {
            report.problem(CHAOS, format!("{e}"));
            return None;
        }
    };
    for claim in CLAIMS {
        let (recorded, derived) = (&chaos[claim], &derived[claim]);
        match (recorded.as_object(), derived.as_object()) {
            (Some(r), Some(d)) => {
                let keys: std::collections::BTreeSet<&String> = d.keys().chain(r.keys()).collect();
                for key in keys {
                    if recorded[key] != derived[key] {
                        report.problem(
                            CHAOS,
                            format!(
                                "{claim}.{key} is {}, the kept databases give {}",
                                recorded[key], derived[key]
                            ),
                        );
                    }
                }
            }
            _ if recorded != derived => report.problem(
                CHAOS,
                format!("{claim} is {recorded}, the kept databases and events give {derived}"),
            ),
            _ => {}
        }
    }
    let recorded = if problems.is_empty() {
        ""
    } else {
        "the run recorded "
    };
    report.summary = format!(
        "chaos {}, {}, {}, {}, {recorded}{} lost, {} duplicated, claims, hashes",
        lab.id(),
        crate::out::plural(options.messages, "message", "messages"),
        crate::out::plural(
            chaos["processes"].as_u64().unwrap_or(0),
            "process",
            "processes"
        ),
        crate::out::plural(chaos["kills_done"].as_u64().unwrap_or(0), "kill", "kills"),
        verdict.lost,
        verdict.duplicated
    );
    Some(problems)
}
