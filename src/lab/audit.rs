//! `crashlab audit DIR`: re-check a run's evidence offline.
//!
//! It reads only DIR (and, for the source comparison, the checkout) and reports every problem,
//! not just the first: (1) manifest digests, and nothing unlisted; (2) every process exited as
//! expected and showed its crash or conflict line; (3) the claims: each readback is re-read
//! from raw stdout and checked against the lab's own stage definitions (the same data the
//! driver used); (4) database-files.json covers every step and readbacks changed no logical
//! digest; (5) sources compared with the checkout.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::crash::Mode;
use crate::fail;
use crate::lab::check::check;
use crate::lab::driver::apply_moves;
use crate::lab::evidence::{self, Manifest, Processes, Results};
use crate::lab::files::{sha256_file, FileRow};
use crate::lab::scenario::{Expect, Step};
use crate::lab::{self, Lab};

/// The largest evidence file the audit reads: a run's files are kilobytes.
const FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub problem: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub ok: bool,
    pub lab: Option<String>,
    pub processes: usize,
    pub crashes: usize,
    pub conflicts: usize,
    pub study: Vec<String>,
    /// `lab`, or `chaos` for a chaos run.
    pub kind: String,
    /// The PASS line's description, when the kind writes its own.
    #[serde(skip)]
    pub summary: String,
    /// `match`, `differ`, or `no checkout`.
    pub sources: String,
    pub sources_changed: Vec<String>,
    pub problems: Vec<Problem>,
}

impl Report {
    fn problem(&mut self, file: &str, problem: impl Into<String>) {
        self.problems.push(Problem {
            file: file.to_string(),
            problem: problem.into(),
        });
    }
}

/// A path recorded in evidence must stay inside DIR.
fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let path = Path::new(rel);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && !rel.is_empty()).then(|| dir.join(path))
}

fn read_text(report: &mut Report, dir: &Path, rel: &str) -> Option<String> {
    let Some(path) = inside(dir, rel) else {
        report.problem(rel, "path leaves the evidence directory");
        return None;
    };
    match fs::metadata(&path) {
        Ok(m) if m.len() > FILE_BYTES_MAX => {
            report.problem(
                rel,
                format!("{} bytes exceed the bound of {FILE_BYTES_MAX}", m.len()),
            );
            return None;
        }
        Ok(m) if !m.is_file() => {
            report.problem(rel, "is not a file");
            return None;
        }
        Ok(_) => {}
        Err(_) => {
            report.problem(rel, "missing");
            return None;
        }
    }
    match fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            report.problem(rel, format!("unreadable: {e}"));
            None
        }
    }
}

fn read_json<T: DeserializeOwned>(report: &mut Report, dir: &Path, rel: &str) -> Option<T> {
    let text = read_text(report, dir, rel)?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            report.problem(rel, format!("malformed or truncated JSON: {e}"));
            None
        }
    }
}

pub fn audit(dir: &Path, strict_sources: bool) -> Report {
    let mut report = Report {
        sources: "not compared (no manifest)".to_string(),
        kind: "lab".to_string(),
        ..Report::default()
    };
    if !dir.is_dir() {
        report.problem(
            &dir.display().to_string(),
            "not a directory: nothing to audit",
        );
        return report;
    }
    let manifest: Option<Manifest> = read_json(&mut report, dir, evidence::MANIFEST);
    if let Some(m) = &manifest {
        check_files(&mut report, dir, m);
    }
    if dir.join(EXPLORE).is_file() {
        // An explore run: its files are checked against the manifest; the cases' verdicts
        // are not re-derived here (each case keeps its databases only when it broke).
        report.kind = "explore".to_string();
        let explore: Option<serde_json::Value> = read_json(&mut report, dir, EXPLORE);
        if let Some(e) = explore {
            let lab = e["lab"].as_str().unwrap_or("?").to_string();
            report.lab = Some(lab.clone());
            report.summary = format!(
                "explore {}, {} files, hashes (the cases' claims are not re-checked by the audit)",
                lab.split('-').next().unwrap_or("?"),
                manifest.as_ref().map_or(0, |m| m.files.len())
            );
        }
        if let Some(m) = &manifest {
            check_sources(&mut report, dir, m, strict_sources);
        }
        report.ok = report.problems.is_empty();
        return report;
    }
    if dir.join(CHAOS).is_file() {
        let processes: Option<Processes> = read_json(&mut report, dir, evidence::PROCESSES);
        if let Some(p) = &processes {
            check_chaos(&mut report, dir, p);
        }
        if let Some(m) = &manifest {
            check_sources(&mut report, dir, m, strict_sources);
        }
        report.ok = report.problems.is_empty();
        return report;
    }
    let processes: Option<Processes> = read_json(&mut report, dir, evidence::PROCESSES);
    let results: Option<Results> = read_json(&mut report, dir, evidence::RESULTS);
    let rows: Option<Vec<FileRow>> = read_json(&mut report, dir, evidence::DATABASE_FILES);
    if let Some(p) = &processes {
        match lab::find(&p.lab) {
            Ok(lab) => check_run(&mut report, dir, lab, p, results.as_ref(), rows.as_deref()),
            Err(e) => report.problem(evidence::PROCESSES, fail::one_line(&e)),
        }
    }
    if let Some(m) = &manifest {
        check_sources(&mut report, dir, m, strict_sources);
    }
    report.ok = report.problems.is_empty();
    report
}

/// The report of a `crashlab chaos` run; its presence marks a chaos evidence directory.
const CHAOS: &str = "chaos.json";
const KILLS: &str = "kills.json";
/// The report of a `crashlab explore` run.
const EXPLORE: &str = "explore.json";

/// A chaos run: every process ended as the driver expected (0, or SIGKILL where kills.json
/// says the driver killed it), and the claims of chaos.json are re-derived from the kept
/// databases (read from a private copy, so the evidence is never touched) by the same check
/// the run used.
fn check_chaos(report: &mut Report, dir: &Path, processes: &Processes) {
    const P: &str = evidence::PROCESSES;
    report.kind = "chaos".to_string();
    report.lab = Some(processes.lab.clone());
    report.processes = processes.processes.len();
    let Some(chaos): Option<serde_json::Value> = read_json(report, dir, CHAOS) else {
        return;
    };
    let kills: Vec<serde_json::Value> = read_json(report, dir, KILLS).unwrap_or_default();
    let killed: BTreeSet<String> = kills
        .iter()
        .filter(|k| k["landed"] == true)
        .filter_map(|k| k["step"].as_str().map(str::to_string))
        .collect();
    report.crashes = killed.len();
    for record in &processes.processes {
        let by_driver = killed.contains(&record.step);
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
        if record.expected_exit != expected_exit && !busy {
            report.problem(
                P,
                format!(
                    "{}: expected_exit {} disagrees with kills.json",
                    record.step, record.expected_exit
                ),
            );
        }
        if record.timed_out {
            report.problem(P, format!("{}: killed after its timeout", record.step));
        }
    }
    for step in &killed {
        if !processes
            .processes
            .iter()
            .any(|p| &p.step == step && p.signal == Some(libc::SIGKILL))
        {
            report.problem(
                KILLS,
                format!("kill of {step} has no process ended by SIGKILL"),
            );
        }
    }
    let (Some(messages), Some(seed)) = (chaos["messages"].as_u64(), chaos["seed"].as_u64()) else {
        report.problem(CHAOS, "lacks messages or seed");
        return;
    };
    let scratch = match tempfile::tempdir() {
        Ok(s) => s,
        Err(e) => {
            report.problem(".", format!("no scratch directory: {e}"));
            return;
        }
    };
    for db in ["sender.db", "queue.db", "receiver.db"] {
        for suffix in ["", "-wal"] {
            let rel = format!("db/{db}{suffix}");
            let from = dir.join(&rel);
            if from.is_file() {
                if let Err(e) = fs::copy(&from, scratch.path().join(format!("{db}{suffix}"))) {
                    report.problem(&rel, format!("unreadable: {e}"));
                }
            } else if suffix.is_empty() {
                report.problem(&rel, "missing: the claims cannot be re-checked");
                return;
            }
        }
    }
    let check = match crate::load::chaos::check(scratch.path(), messages as usize, seed) {
        Ok(c) => c,
        Err(e) => {
            report.problem(
                "db/",
                format!("cannot read the databases: {}", fail::one_line(&e)),
            );
            return;
        }
    };
    for problem in &check.problems {
        report.problem(
            "db/receiver.db",
            format!("the kept databases show: {problem}"),
        );
    }
    let recorded = &chaos["check"];
    let derived = match serde_json::to_value(&check) {
        Ok(v) => v,
        Err(e) => {
            report.problem(CHAOS, format!("{e}"));
            return;
        }
    };
    for key in [
        "contracts",
        "inbox",
        "ledger",
        "ledger_expected",
        "outbox_pending",
        "queue_pending",
        "physical_deliveries",
        "duplicate_deliveries",
        "duplicates_suppressed",
        "lost_effects",
        "duplicated_effects",
        "wrong_balances",
    ] {
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
    if chaos["ok"] != serde_json::json!(check.problems.is_empty()) {
        report.problem(
            CHAOS,
            format!(
                "ok is {}, the kept databases say {}",
                chaos["ok"],
                check.problems.is_empty()
            ),
        );
    }
    report.summary = format!(
        "chaos {}, {messages} messages, {} processes, {} kills, {} lost, {} duplicated, claims, hashes",
        processes.lab.split('-').next().unwrap_or("?"),
        processes.processes.len(),
        killed.len(),
        check.lost_effects,
        check.duplicated_effects
    );
}

/// Check 1: every listed file has its digest, and every file is listed.
fn check_files(report: &mut Report, dir: &Path, manifest: &Manifest) {
    for (rel, expected) in &manifest.files {
        let Some(path) = inside(dir, rel) else {
            report.problem(rel, "manifest path leaves the evidence directory");
            continue;
        };
        if !path.is_file() {
            report.problem(rel, "listed in manifest.json but missing");
            continue;
        }
        match sha256_file(&path) {
            Ok((_, sha)) if &sha == expected => {}
            Ok((_, sha)) => report.problem(
                rel,
                format!("sha256 {sha} differs from manifest.json ({expected})"),
            ),
            Err(e) => report.problem(rel, format!("unreadable: {e}")),
        }
    }
    match evidence::list_files(dir) {
        Ok(present) => {
            for rel in present {
                if rel != evidence::MANIFEST && !manifest.files.contains_key(&rel) {
                    report.problem(
                        &rel,
                        "not listed in manifest.json (nothing may be slipped in)",
                    );
                }
            }
        }
        Err(e) => report.problem(".", format!("cannot list the directory: {e}")),
    }
}

fn parse_mode(name: &str) -> Option<Mode> {
    [Mode::Exit, Mode::Abort, Mode::Kill, Mode::Hang]
        .into_iter()
        .find(|m| m.name() == name)
}

/// Checks 2, 3 and 4, against the lab's own scenario definitions.
fn check_run(
    report: &mut Report,
    dir: &Path,
    lab: &Lab,
    processes: &Processes,
    results: Option<&Results>,
    rows: Option<&[FileRow]>,
) {
    const P: &str = evidence::PROCESSES;
    report.lab = Some(lab.full_name());
    report.study = processes.moved_crashes.clone();
    let Some(mode) = parse_mode(&processes.crash_mode) else {
        report.problem(P, format!("unknown crash_mode '{}'", processes.crash_mode));
        return;
    };
    let mut scenarios = (lab.scenarios)();
    if let Err(e) = apply_moves(lab, &mut scenarios, &processes.moved_crashes) {
        report.problem(P, format!("moved_crashes: {}", fail::one_line(&e)));
        return;
    }
    let steps: Vec<(&str, &Step)> = scenarios
        .iter()
        .flat_map(|s| s.steps.iter().map(move |step| (s.name.as_str(), step)))
        .collect();
    let study = !processes.moved_crashes.is_empty();
    if processes.processes.len() != steps.len() {
        report.problem(
            P,
            format!(
                "{} processes recorded, the lab's scenarios have {} steps",
                processes.processes.len(),
                steps.len()
            ),
        );
    }
    if let Some(r) = results {
        if r.steps.len() != steps.len() {
            report.problem(
                evidence::RESULTS,
                format!("{} steps recorded, expected {}", r.steps.len(), steps.len()),
            );
        }
    }
    report.processes = processes.processes.len();
    let mut recomputed_ok = true;
    for (index, record) in processes.processes.iter().enumerate() {
        let Some((scenario, step)) = steps.get(index).copied() else {
            break;
        };
        let at = format!("{P}: process {} ({})", index + 1, record.step);
        if record.scenario != scenario || record.step != step.name {
            report.problem(
                P,
                format!(
                    "process {} is {}/{}, the lab says {scenario}/{}",
                    index + 1,
                    record.scenario,
                    record.step,
                    step.name
                ),
            );
            continue;
        }
        let mut argv = vec!["crashlab".to_string()];
        argv.extend(step.argv(mode));
        if record.argv != argv {
            report.problem(
                P,
                format!("{at}: argv {:?} is not the lab's {:?}", record.argv, argv),
            );
        }
        if record.crash_point != step.crash {
            report.problem(
                P,
                format!(
                    "{at}: crash_point {:?}, the lab says {:?}",
                    record.crash_point, step.crash
                ),
            );
        }
        // Check 2: the exit code against the expectation (the lab's, not a recorded copy).
        let expected_exit = if step.crash.is_some() {
            mode.expected_exit()
        } else {
            step.expected_exit
        };
        if record.expected_exit != expected_exit {
            report.problem(
                P,
                format!(
                    "{at}: expected_exit {} is not the lab's {expected_exit}",
                    record.expected_exit
                ),
            );
        }
        let stdout = read_text(report, dir, &record.stdout);
        let stderr = read_text(report, dir, &record.stderr);
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            recomputed_ok = false;
            continue;
        };
        // Checks 2 and 3 from raw output, by the driver's own checker.
        let verdict = check(step, mode, record.exit, record.timed_out, &stdout, &stderr);
        // The PASS line counts what the raw output shows happened, not what was armed.
        if verdict.observed["crash_line"] == serde_json::json!(true) {
            report.crashes += 1;
        }
        if step.expected_exit == fail::EXIT_CONFLICT
            && verdict.observed["output"] == serde_json::json!(true)
        {
            report.conflicts += 1;
        }
        let file = match step.expect {
            Expect::Readback(_) | Expect::Crash | Expect::Output(_) => record.stdout.as_str(),
            Expect::Exit => P,
        };
        recomputed_ok &= verdict.problems.is_empty();
        let recorded = results.and_then(|r| r.steps.get(index));
        if let Some(recorded) = recorded {
            if recorded.step != step.name
                || recorded.problems != verdict.problems
                || recorded.ok != verdict.problems.is_empty()
            {
                report.problem(
                    evidence::RESULTS,
                    format!(
                        "{}: recorded {:?}, the raw output shows {:?}",
                        step.name, recorded.problems, verdict.problems
                    ),
                );
            }
        }
        if !study {
            for problem in verdict.problems {
                let whose = if problem.starts_with("exit ") {
                    P
                } else {
                    file
                };
                report.problem(whose, format!("{}: {problem}", step.name));
            }
        }
    }
    if let Some(r) = results {
        if r.ok != recomputed_ok {
            report.problem(
                evidence::RESULTS,
                format!("ok is {}, the raw output says {recomputed_ok}", r.ok),
            );
        }
    }
    if let Some(rows) = rows {
        check_database_files(report, lab, &steps, rows);
        check_kept(report, dir, lab, &scenarios, rows);
    }
    // The replay of the SQL history against every recorded state and claim.
    for (file, problem) in lab::replay::check(dir, lab, &scenarios, &processes.processes) {
        report.problem(&file, problem);
    }
}

/// Databases kept with `--keep-db` must be the files the last row of each describes: the
/// same raw bytes, and the same rows (logical digest, read without touching them).
fn check_kept(
    report: &mut Report,
    dir: &Path,
    lab: &Lab,
    scenarios: &[crate::lab::scenario::Scenario],
    rows: &[FileRow],
) {
    for scenario in scenarios {
        let kept = match &scenario.dir {
            Some(sub) => dir.join("db").join(sub),
            None => dir.join("db"),
        };
        if !kept.is_dir() {
            continue;
        }
        for db in lab.databases {
            let rel = match &scenario.dir {
                Some(sub) => format!("db/{sub}/{db}"),
                None => format!("db/{db}"),
            };
            let last = rows
                .iter()
                .rev()
                .find(|r| r.scenario == scenario.name && r.file == *db);
            let path = kept.join(db);
            match (last, path.is_file()) {
                (Some(row), true) => {
                    if let Ok((_, sha)) = sha256_file(&path) {
                        if row.sha256.as_deref() != Some(sha.as_str()) {
                            report.problem(&rel, format!("sha256 {sha} is not the last recorded one of {db} in database-files.json"));
                        }
                    }
                    let logical = crate::lab::files::logical_sha256_of_copy(&path).ok();
                    if logical != row.logical_sha256 {
                        report.problem(
                            &rel,
                            format!(
                                "its rows differ from the last recorded logical_sha256 of {db}"
                            ),
                        );
                    }
                }
                (Some(row), false) if row.exists => {
                    report.problem(&rel, "missing, though the last step left it")
                }
                _ => {}
            }
        }
    }
}

/// Check 4: a row for every database after every step; readbacks leave logical digests alone.
fn check_database_files(report: &mut Report, lab: &Lab, steps: &[(&str, &Step)], rows: &[FileRow]) {
    const F: &str = evidence::DATABASE_FILES;
    let mut by_step: BTreeMap<(&str, &str, &str), &FileRow> = BTreeMap::new();
    for row in rows {
        by_step.insert(
            (
                row.scenario.as_str(),
                row.after_step.as_str(),
                row.file.as_str(),
            ),
            row,
        );
    }
    let known: BTreeSet<(&str, &str)> = steps
        .iter()
        .map(|(s, step)| (*s, step.name.as_str()))
        .collect();
    for row in rows {
        if !known.contains(&(row.scenario.as_str(), row.after_step.as_str())) {
            report.problem(
                F,
                format!("row for unknown step {}/{}", row.scenario, row.after_step),
            );
        }
    }
    let mut previous: Option<(&str, &str)> = None;
    for (scenario, step) in steps {
        for db in lab.databases {
            let Some(row) = by_step.get(&(*scenario, step.name.as_str(), *db)) else {
                report.problem(F, format!("no row for {db} after step {}", step.name));
                continue;
            };
            let hex = |v: &Option<String>| {
                v.as_ref()
                    .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            };
            if row.exists && (!hex(&row.sha256) || !hex(&row.logical_sha256) || row.bytes == 0) {
                report.problem(
                    F,
                    format!(
                        "{db} after {}: exists but lacks a well-formed size or digest",
                        step.name
                    ),
                );
            }
            if row.exists && (row.sha256.is_none() || row.logical_sha256.is_none()) {
                report.problem(
                    F,
                    format!("{db} after {}: exists but lacks a digest", step.name),
                );
            }
            let is_readback = matches!(step.expect, Expect::Readback(_));
            if let (true, Some((prev_scenario, prev_step))) = (is_readback, previous) {
                if prev_scenario == *scenario {
                    let before = by_step
                        .get(&(prev_scenario, prev_step, *db))
                        .and_then(|r| r.logical_sha256.as_ref());
                    if before != row.logical_sha256.as_ref() {
                        report.problem(
                            F,
                            format!("{db}: logical_sha256 changed across readback step {} (readbacks are read-only)", step.name),
                        );
                    }
                }
            }
        }
        previous = Some((scenario, step.name.as_str()));
    }
}

/// The checkout to compare sources with: the one holding DIR, else the one this binary was built from.
fn find_checkout(dir: &Path) -> Option<PathBuf> {
    let start = fs::canonicalize(dir).ok()?;
    for candidate in start.ancestors().take(64) {
        let cargo = candidate.join("Cargo.toml");
        if let Ok(text) = fs::read_to_string(&cargo) {
            if text.contains("name = \"crashlab\"") {
                return Some(candidate.to_path_buf());
            }
        }
    }
    evidence::build_checkout()
}

/// Check 5: the sources that produced the run against the checkout.
fn check_sources(report: &mut Report, dir: &Path, manifest: &Manifest, strict: bool) {
    let Some(checkout) = find_checkout(dir) else {
        report.sources = "no checkout".to_string();
        if strict {
            report.problem(
                evidence::MANIFEST,
                "--strict-sources: no checkout to compare sources with",
            );
        }
        return;
    };
    let mut changed = Vec::new();
    for (rel, expected) in &manifest.sources {
        let path = match inside(&checkout, rel) {
            Some(p) => p,
            None => {
                changed.push(format!("{rel} (path leaves the checkout)"));
                continue;
            }
        };
        match evidence::source_sha256(&path) {
            Ok(sha) if &sha == expected => {}
            Ok(_) => changed.push(rel.clone()),
            Err(_) => changed.push(format!("{rel} (missing)")),
        }
    }
    let current = evidence::source_files(&checkout);
    for rel in current {
        if !manifest.sources.contains_key(&rel) {
            changed.push(format!("{rel} (new)"));
        }
    }
    if changed.is_empty() {
        report.sources = "match".to_string();
    } else {
        report.sources = "differ".to_string();
        if strict {
            for rel in &changed {
                report.problem(
                    evidence::MANIFEST,
                    format!("--strict-sources: source {rel} differs from the checkout"),
                );
            }
        }
        report.sources_changed = changed;
    }
}

pub fn run(dir: &Path, json: bool, strict_sources: bool) -> Result<i32> {
    if !dir.exists() {
        return Err(fail::usage(format!("{} does not exist", dir.display())));
    }
    let report = audit(dir, strict_sources);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for p in &report.problems {
            println!("{}: {}", p.file, p.problem);
        }
        match report.sources.as_str() {
            "differ" => println!("sources: differ: {}", report.sources_changed.join(", ")),
            other => println!("sources: {other}"),
        }
        if report.ok && !report.summary.is_empty() {
            println!("PASS: {}", report.summary);
        } else if report.ok {
            let lab = report
                .lab
                .as_deref()
                .map_or("?".to_string(), |l| l.replacen('-', " (", 1) + ")");
            let study = if report.study.is_empty() {
                String::new()
            } else {
                format!(
                    ", study with moved crash {} (its failures as recorded)",
                    report.study.join(", ")
                )
            };
            println!(
                "PASS: lab {lab}, {} processes, {} crashes, {} conflict{}, claims, hashes{study}",
                report.processes,
                report.crashes,
                report.conflicts,
                if report.conflicts == 1 { "" } else { "s" }
            );
        } else {
            let n = report.problems.len();
            println!("FAIL: {n} problem{}", if n == 1 { "" } else { "s" });
        }
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}
