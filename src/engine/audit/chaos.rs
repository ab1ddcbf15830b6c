//! A chaos run's evidence. The recorded command is parsed as the binary parses it; chaos.json
//! must be that command's run (its options, its replay line) and its counts must follow from
//! processes.json and kills.json; every process and log is checked in chaos_logs.rs; the
//! kept databases must be the files database-files.json lists; and the end-to-end claims are
//! re-derived from those databases by the check the run used, on a private copy.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::chaos_logs;
use super::command::{self, Parsed};
use super::tree::Tree;
use super::{sequence, Report, CHAOS, KILLS};
use crate::engine::evidence::{self, Processes};
use crate::engine::files::FileRow;
use crate::engine::files::SIDE_SUFFIXES;
use crate::engine::load::pipeline::Kill;
use crate::fail;

const P: &str = evidence::PROCESSES;
const F: &str = evidence::DATABASE_FILES;
const DATABASES: [&str; 3] = ["sender.db", "queue.db", "receiver.db"];

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
    let options = match command::parse(&processes.command) {
        Ok(Parsed::Chaos(c)) => {
            if let Err(e) = crate::engine::load::check_lab(&c.lab) {
                report.problem(P, format!("command: {}", fail::one_line(&e)));
            }
            c.options
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
    if processes.lab != "14-outbox-inbox" {
        report.problem(
            P,
            format!("lab '{}'; chaos runs 14-outbox-inbox", processes.lab),
        );
    }
    if processes.crash_mode != "sigkill" || !processes.moved_crashes.is_empty() {
        report.problem(
            P,
            "chaos kills with SIGKILL and moves no crash (crash_mode, moved_crashes)",
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
    super::run::pinned_pragmas(report, &processes);
    let mut files = chaos_logs::check_processes(report, tree, &options, &processes, &kills);
    chaos_logs::check_kills(report, &options, &processes, &kills);
    exits(report, &processes, &kills);
    let derived_problems = claims(report, tree, &options, &chaos);
    report_fields(
        report,
        &options,
        &processes,
        &kills,
        &chaos,
        derived_problems,
    );
    if let Some(rows) = &rows {
        files.extend(kept(report, tree, rows));
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
fn exits(report: &mut Report, processes: &Processes, kills: &[Kill]) {
    for record in &processes.processes {
        let by_driver = kills.iter().any(|k| k.landed && k.step == record.step);
        let expected_exit = if by_driver {
            128 + libc::SIGKILL
        } else {
            fail::EXIT_OK
        };
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
fn report_fields(
    report: &mut Report,
    options: &crate::engine::load::chaos::Options,
    processes: &Processes,
    kills: &[Kill],
    chaos: &Value,
    check_problems: Option<Vec<String>>,
) {
    let count = |f: &dyn Fn(&evidence::Process) -> bool| {
        processes.processes.iter().filter(|p| f(p)).count()
    };
    let landed: Vec<&Kill> = kills.iter().filter(|k| k.landed).collect();
    let killed = |p: &evidence::Process| landed.iter().any(|k| k.step == p.step);
    let busy = count(&|p| !killed(p) && !p.timed_out && p.exit == fail::EXIT_LOCKED);
    let timed_out = count(&|p| p.timed_out);
    let unexpected = count(&|p| {
        let expected = if killed(p) { 128 + libc::SIGKILL } else { 0 };
        !p.timed_out && p.exit != fail::EXIT_LOCKED && p.exit != expected
    });
    let mut by_role: BTreeMap<String, usize> = BTreeMap::new();
    for k in &landed {
        *by_role.entry(k.role.clone()).or_insert(0) += 1;
    }
    let mut expected = vec![
        ("lab", json!("14-outbox-inbox")),
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
        (
            "replay",
            json!(crate::engine::load::chaos::replay_command(options)),
        ),
        (
            "evidence",
            json!(options.out.as_deref().map(evidence::recorded_path)),
        ),
    ];
    if let Some(mut problems) = check_problems {
        if unexpected > 0 {
            problems.push(format!(
                "{} exited with an unexpected code (see processes.json)",
                crate::out::plural(unexpected, "process", "processes")
            ));
        }
        if timed_out > 0 {
            problems.push(format!(
                "{} hung past --process-timeout-ms (killed)",
                crate::out::plural(timed_out, "process", "processes")
            ));
        }
        expected.push(("ok", json!(problems.is_empty())));
        expected.push(("problems", json!(problems)));
    }
    // A field the run never writes is a claim no check reads: refused. `wall_ms` is
    // attested, `check` compared in `claims`, `ok` and `problems` above when the
    // databases could be read.
    let known: Vec<&str> = expected
        .iter()
        .map(|(key, _)| *key)
        .chain(["wall_ms", "check", "ok", "problems"])
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

/// The claims of chaos.json re-derived from the kept databases (a private copy of them);
/// returns the problems the check finds, for chaos.json's own `problems`.
fn claims(
    report: &mut Report,
    tree: &Tree,
    options: &crate::engine::load::chaos::Options,
    chaos: &Value,
) -> Option<Vec<String>> {
    let scratch = match tempfile::tempdir() {
        Ok(s) => s,
        Err(e) => {
            report.problem(".", format!("no scratch directory: {e}"));
            return None;
        }
    };
    for db in DATABASES {
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
    let check =
        match crate::engine::load::chaos::check(scratch.path(), options.messages, options.seed) {
            Ok(c) => c,
            Err(e) => {
                report.problem(
                    "db/",
                    format!("cannot read the databases: {}", fail::one_line(&e)),
                );
                return None;
            }
        };
    for problem in &check.problems {
        report.problem(
            "db/receiver.db",
            format!("the kept databases show: {problem}"),
        );
    }
    let derived = match serde_json::to_value(&check) {
        Ok(v) => v,
        Err(e) => {
            report.problem(CHAOS, format!("{e}"));
            return None;
        }
    };
    let recorded = &chaos["check"];
    let keys: std::collections::BTreeSet<&String> = derived
        .as_object()
        .into_iter()
        .chain(recorded.as_object())
        .flat_map(|m| m.keys())
        .collect();
    for key in keys {
        if recorded[key] != derived[key] {
            report.problem(
                CHAOS,
                format!(
                    "check.{key} is {}, the kept databases give {}",
                    recorded[key], derived[key]
                ),
            );
        }
    }
    report.summary = format!(
        "chaos 14, {}, {}, {}, {} lost, {} duplicated, claims, hashes",
        crate::out::plural(options.messages, "message", "messages"),
        crate::out::plural(
            chaos["processes"].as_u64().unwrap_or(0),
            "process",
            "processes"
        ),
        crate::out::plural(chaos["kills_done"].as_u64().unwrap_or(0), "kill", "kills"),
        check.lost_effects,
        check.duplicated_effects
    );
    Some(check.problems)
}

/// database-files.json against the kept files: one row per database then its side files,
/// each the bytes kept and, for a database, the rows kept. Returns the files it covers.
fn kept(report: &mut Report, tree: &Tree, rows: &[FileRow]) -> Vec<String> {
    let mut want = Vec::new();
    for db in DATABASES {
        want.push(format!("db/{db}"));
        for suffix in SIDE_SUFFIXES {
            let side = format!("db/{db}{suffix}");
            if tree.has_file(&side) {
                want.push(side);
            }
        }
    }
    let found: Vec<String> = rows.iter().map(|r| r.file.clone()).collect();
    for d in sequence::differences(&want, &found, 10) {
        report.problem(F, format!("rows: {d}"));
    }
    for r in rows {
        let at = format!("{} after {}", r.file, r.after_step);
        if r.scenario != "chaos" || r.after_step != "final" {
            report.problem(
                F,
                format!("{at}: a chaos run has one snapshot, chaos/final"),
            );
        }
        let Some(bytes) = tree.get(&r.file) else {
            if r.exists {
                report.problem(F, format!("{at}: listed as existing, but not kept"));
            }
            continue;
        };
        use sha2::{Digest, Sha256};
        let sha = crate::labs::outbox_inbox::model::hex(&Sha256::digest(bytes));
        if !r.exists || r.bytes != bytes.len() as u64 || r.sha256.as_deref() != Some(sha.as_str()) {
            report.problem(
                F,
                format!(
                    "{at}: the row is not the kept file ({} bytes, sha256 {sha})",
                    bytes.len()
                ),
            );
        }
        let logical = if DATABASES.iter().any(|db| r.file == format!("db/{db}")) {
            let wal = tree.get(&format!("{}-wal", r.file));
            match super::kept::logical_sha256(bytes, wal) {
                Ok(d) => Some(d),
                Err(e) => {
                    report.problem(&r.file, format!("not a readable database: {e:#}"));
                    continue;
                }
            }
        } else {
            None
        };
        if r.logical_sha256 != logical {
            report.problem(
                F,
                format!("{at}: logical_sha256 is not the kept file's rows"),
            );
        }
    }
    // The -shm wal-index beside each database is housekeeping, kept but not recorded.
    let shm = DATABASES
        .iter()
        .map(|db| format!("db/{db}-shm"))
        .filter(|f| tree.has_file(f));
    want.into_iter()
        .filter(|f| Path::new(f).starts_with("db"))
        .chain(shm)
        .collect()
}
