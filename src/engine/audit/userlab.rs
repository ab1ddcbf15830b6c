//! The audit of a lab file's `driver`, `explore` or `chaos` run (labfile.json): the lab file's copy
//! parses and is the one recorded; each role step's events give the points and crash
//! recorded, and a crash's exit is its crash mode's code; each check and invariant query,
//! re-run offline on the kept stores, gives the value and rows recorded; each verdict,
//! judged again from all that, is the one recorded.

use std::path::Path;

use super::tree::{plain, Tree};
use super::Report;
use crate::labfile::evidence::{self, Record, RunRecord, COPY, COPY_DIR, RECORD};
use crate::labfile::run::{self, StepRun};
use crate::labfile::stores::{self, STORE_SUFFIXES};
use crate::labfile::{chaos, driver, explore, ScenarioDef, StepDef, StoreDef, UserLab};

pub(super) fn check(report: &mut Report, tree: &Tree) {
    report.kind = "lab file".to_string();
    let Some(record) = tree.json::<Record>(report, RECORD) else {
        return;
    };
    // The page is drawn from the record alone: drawn again, it is the same, byte for byte.
    let drawn = crate::labfile::report::render(&record);
    match tree.get(crate::labfile::report::REPORT) {
        Some(bytes) if bytes == drawn.as_bytes() => {}
        Some(_) => report.problem(
            crate::labfile::report::REPORT,
            format!("is not the page {RECORD} draws"),
        ),
        None => report.problem(
            crate::labfile::report::REPORT,
            format!("missing: the run draws it from {RECORD}"),
        ),
    }
    let Some(text) = tree.text(report, COPY) else {
        return;
    };
    if evidence::lab_sha256(&text) != record.lab_sha256 {
        report.problem(
            COPY,
            format!(
                "sha256 {} differs from {RECORD} ({})",
                evidence::lab_sha256(&text),
                record.lab_sha256
            ),
        );
    }
    let Some(lab) = parse_copy(report, tree) else {
        return;
    };
    report.lab = Some(lab.id.clone());
    if record.kind == "chaos" {
        check_chaos_runs(report, &lab, &record);
    }
    let (mut steps, mut crashes) = (0, 0);
    for rec in &record.runs {
        check_run(report, tree, &lab, &record, rec);
        steps += rec.run.steps.len();
        crashes += rec.run.steps.iter().filter(|s| s.crashed.is_some()).count();
    }
    report.processes = steps;
    report.crashes = crashes;
    // A chaos run's faults are kills from outside, not crashes at points.
    let faults = match record.kind.as_str() {
        "chaos" => {
            let killed = record
                .runs
                .iter()
                .flat_map(|r| &r.run.steps)
                .filter(|s| s.killed_after_ms.is_some())
                .count();
            format!("{killed} killed")
        }
        _ => crate::out::plural(crashes, "crash", "crashes"),
    };
    report.summary = format!(
        "lab file {} ({}), {}, {}, {faults}, checks and invariants re-run on the kept stores, verdicts, hashes",
        lab.id,
        record.kind,
        crate::out::plural(record.runs.len(), "scenario run", "scenario runs"),
        crate::out::plural(steps, "step", "steps"),
    );
}

/// The lab file's copy, with the schema files beside it, validated as `lab check` validates
/// it.
fn parse_copy(report: &mut Report, tree: &Tree) -> Option<UserLab> {
    let parsed = crate::owner::tempdir("audit").and_then(|tmp| {
        let prefix = format!("{COPY_DIR}/");
        for rel in tree.files().filter(|r| r.starts_with(&prefix)) {
            let to = tmp.path().join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&to, tree.get(rel).unwrap_or_default())?;
        }
        crate::labfile::load(&tmp.path().join(COPY))
    });
    match parsed {
        Ok(lab) => Some(lab),
        Err(e) => {
            let why = format!("{e:#}");
            let why = why
                .rsplit_once("crashlab.toml:")
                .map_or(why.as_str(), |w| w.1);
            report.problem(
                COPY,
                format!("does not parse as a lab file: {}", why.trim()),
            );
            None
        }
    }
}

fn check_run(report: &mut Report, tree: &Tree, lab: &UserLab, record: &Record, rec: &RunRecord) {
    let dir = rec.dir.as_str();
    if !plain(dir) {
        report.problem(
            RECORD,
            format!("run directory '{dir}' leaves the evidence directory"),
        );
        return;
    }
    let Some(scenario) = lab.scenarios.iter().find(|s| s.name == rec.scenario) else {
        report.problem(
            RECORD,
            format!("{dir}: the lab file has no scenario '{}'", rec.scenario),
        );
        return;
    };
    let Some(design) = lab.designs.iter().find(|d| d.name == rec.design) else {
        report.problem(
            RECORD,
            format!("{dir}: the lab file has no design '{}'", rec.design),
        );
        return;
    };
    if scenario.steps.len() != rec.run.steps.len() {
        report.problem(
            RECORD,
            format!(
                "{dir}: {} steps recorded, scenario {} has {}",
                rec.run.steps.len(),
                scenario.name,
                scenario.steps.len()
            ),
        );
        return;
    }
    let mode = record.mode;
    let mut derived = rec.run.clone();
    for (i, (def, step)) in scenario
        .steps
        .iter()
        .zip(derived.steps.iter_mut())
        .enumerate()
    {
        let at = format!("{dir}/{}", run::stem(i, def.name()));
        match def {
            StepDef::Run { role, .. } => {
                // The command line is recorded with its placeholders, so the lab file's copy
                // gives it again, word for word.
                let argv = run::argv(lab, design, role, &run::Places::recorded(lab));
                if argv != step.argv {
                    report.problem(
                        RECORD,
                        format!(
                            "{dir}: step {}: command {:?} recorded, the lab file's role {role} in design {} gives {argv:?}",
                            step.name, step.argv, design.name
                        ),
                    );
                }
                let events = format!("{at}.events.jsonl");
                tree.bytes(report, &format!("{at}.stdout.txt"));
                let Some(bytes) = tree.bytes(report, &events) else {
                    continue;
                };
                let mut seen = StepRun {
                    points: Vec::new(),
                    crashed: None,
                    faults: Vec::new(),
                    ..step.clone()
                };
                run::parse_events(&String::from_utf8_lossy(bytes), &mut seen);
                if seen.points != step.points || seen.crashed != step.crashed {
                    report.problem(
                        &events,
                        format!(
                            "step {}: {RECORD} records points {:?} and crash {:?}, its events give {:?} and {:?}",
                            step.name, step.points, step.crashed, seen.points, seen.crashed
                        ),
                    );
                }
                // What the events show wrong is in the record too: a fault cannot be dropped.
                let torn_kept = step.killed_after_ms.is_none();
                for fault in seen
                    .faults
                    .iter()
                    .filter(|f| torn_kept || f.as_str() != run::TORN)
                {
                    if !step.faults.contains(fault) {
                        report.problem(
                            &events,
                            format!("step {}: its events show the fault '{fault}', which {RECORD} does not record", step.name),
                        );
                    }
                }
                if let Some((point, hit)) = &seen.crashed {
                    if step.exit != mode.expected_exit() {
                        report.problem(
                            RECORD,
                            format!(
                                "{dir}: step {}: exit {} recorded, but its events show the crash at {point}@{hit}, which exits {} in crash mode {}",
                                step.name,
                                step.exit,
                                mode.expected_exit(),
                                mode.name()
                            ),
                        );
                    }
                }
                step.points = seen.points;
                step.crashed = seen.crashed;
            }
            // A stop step's record is its own timing; the background step it ended is
            // audited at its own place.
            StepDef::Stop { .. } => {}
            StepDef::Check { check, .. } => {
                let Some(def) = lab.check(check) else {
                    continue;
                };
                let kept = format!("{dir}/{}", run::stores_dir(i, &step.name));
                let unread = step
                    .check
                    .as_ref()
                    .and_then(|c| c.0.strip_prefix("error: "))
                    .unwrap_or("");
                let Some(value) = on_kept(report, tree, &kept, &lab.stores, unread, |d| {
                    run::check_value(d, &lab.stores, &def.sql)
                }) else {
                    continue;
                };
                let recorded = step.check.as_ref().map(|c| c.0.as_str());
                // A store that could not be read back left no copy: what the run recorded of
                // it stands, as the kept stores can only show the copy missing.
                let value = match recorded {
                    Some(r) if stores::unread_agrees(&lab.stores, r, &value) => r.to_string(),
                    _ => value,
                };
                if recorded != Some(value.as_str()) {
                    report.problem(
                        &kept,
                        format!(
                            "step {}: check {check} (query `{}`) on the kept stores {} gives {value}, recorded {}",
                            step.name,
                            def.sql,
                            store_files(&lab.stores),
                            recorded.unwrap_or("nothing")
                        ),
                    );
                }
                step.exit = i32::from(value != def.expect);
                step.check = Some((value, def.expect.clone()));
            }
        }
    }
    let unread = rec.run.unreadable.as_deref().unwrap_or("");
    let found = on_kept(report, tree, dir, &lab.stores, unread, |d| {
        run::invariants(d, &lab.stores, &lab.invariants).map_err(|e| format!("{e:#}"))
    });
    match found {
        Some(Ok(found)) => {
            for (inv, got) in lab.invariants.iter().zip(&found) {
                let recorded = rec.run.found.iter().find(|f| f.invariant == inv.name);
                if recorded.map(|r| (r.rows, &r.examples, &r.sql))
                    != Some((got.rows, &got.examples, &got.sql))
                {
                    report.problem(
                        dir,
                        format!(
                            "invariant {} (query `{}`) on the kept stores {} gives {} rows {:?}, recorded {}",
                            inv.name,
                            inv.sql,
                            store_files(&lab.stores),
                            got.rows,
                            got.examples,
                            recorded.map_or("nothing".to_string(), |r| {
                                let mut text = format!("{} rows {:?}", r.rows, r.examples);
                                if r.sql != got.sql {
                                    text.push_str(&format!(" of the query `{}`", r.sql));
                                }
                                text
                            })
                        ),
                    );
                }
            }
            derived.found = found;
        }
        Some(Err(e)) if rec.run.unreadable.is_none() => {
            report.problem(
                dir,
                format!("the invariants cannot be read on the kept stores: {e}"),
            );
        }
        _ => {}
    }
    check_kills(report, scenario, rec, record.kind == "chaos");
    let verdict = match record.kind.as_str() {
        "driver" => driver::verdict(design, scenario, &derived, &rec.arms, mode),
        "chaos" => chaos::verdict(lab, design, scenario, &derived, &rec.kills),
        _ => explore::judge(lab, design, scenario, &derived, rec.arms.first(), mode).2,
    };
    if verdict != rec.verdict {
        report.problem(
            RECORD,
            format!(
                "{dir}: verdict '{}' recorded, the evidence gives '{verdict}'",
                rec.verdict
            ),
        );
    }
}

/// A chaos run holds exactly the runs its command gives: each scenario without a kill, then
/// each seed's, in order (up to the seed `--timeout-ms` stopped it before), in the design it
/// names; a run without a kill records none, and each seed's kills are the ones its seed
/// draws in the walls of the run without a kill.
fn check_chaos_runs(report: &mut Report, lab: &UserLab, record: &Record) {
    let options = crate::cli::Cli::parse_recorded(&record.command)
        .ok()
        .and_then(|cli| cli.command.into_chaos());
    let Some((_, options)) = options else {
        report.problem(
            RECORD,
            format!(
                "command {:?} is not a chaos command",
                record.command.join(" ")
            ),
        );
        return;
    };
    let design = options
        .variant
        .clone()
        .or_else(|| lab.designs.first().map(|d| d.name.clone()))
        .unwrap_or_default();
    let last = options.seed.saturating_add(options.runs - 1);
    let end = match record.stopped_before_seed {
        Some(stop) if (options.seed..=last).contains(&stop) => stop.checked_sub(1),
        Some(stop) => {
            report.problem(
                RECORD,
                format!("stopped before seed {stop}, not a seed of the command"),
            );
            return;
        }
        None => Some(last),
    };
    let seeds: Vec<u64> = match end {
        Some(end) if end >= options.seed => (options.seed..=end).collect(),
        _ => Vec::new(),
    };
    let mut expected: Vec<(Option<u64>, usize)> =
        (0..lab.scenarios.len()).map(|i| (None, i)).collect();
    expected.extend(
        seeds
            .iter()
            .flat_map(|&seed| (0..lab.scenarios.len()).map(move |i| (Some(seed), i))),
    );
    let dirs = |e: &[(Option<u64>, usize)]| -> Vec<String> {
        e.iter()
            .map(|(seed, i)| chaos::dir_of(*seed, &lab.scenarios[*i]))
            .collect()
    };
    let recorded: Vec<String> = record.runs.iter().map(|r| r.dir.clone()).collect();
    if recorded != dirs(&expected) {
        report.problem(
            RECORD,
            format!(
                "runs {recorded:?} recorded; the command's --seed {} --runs {} gives {:?}",
                options.seed,
                options.runs,
                dirs(&expected)
            ),
        );
        return;
    }
    for (rec, (seed, index)) in record.runs.iter().zip(&expected) {
        let scenario = &lab.scenarios[*index];
        if rec.design != design || rec.scenario != scenario.name {
            report.problem(
                RECORD,
                format!(
                    "{}: design {} and scenario {} recorded, the command runs design {design}",
                    rec.dir, rec.design, rec.scenario
                ),
            );
            continue;
        }
        let drawn = match seed {
            None => Vec::new(),
            Some(seed) => {
                let walls = chaos::walls_of(scenario, &record.runs[*index].run);
                chaos::draw(*seed, *index, &walls, options.kills)
            }
        };
        if rec.kills != drawn {
            report.problem(
                RECORD,
                format!(
                    "{}: kills {:?} recorded, its seed draws {:?}",
                    rec.dir, rec.kills, drawn
                ),
            );
        }
    }
}

/// A chaos run's kills: each names, once, a step a later step of its role restarts; a step
/// recorded as killed has its kill, at the moment recorded, and exits as a SIGKILL does; no
/// other run records a kill.
fn check_kills(report: &mut Report, scenario: &ScenarioDef, rec: &RunRecord, is_chaos: bool) {
    let dir = rec.dir.as_str();
    let killed = rec.run.steps.iter().any(|s| s.killed_after_ms.is_some());
    if !is_chaos && (killed || !rec.kills.is_empty()) {
        report.problem(
            RECORD,
            format!("{dir}: a kill recorded in a run that is not chaos"),
        );
    }
    let killable = chaos::killable(scenario);
    for (n, kill) in rec.kills.iter().enumerate() {
        let may = killable.get(kill.step).copied().unwrap_or(false);
        if !may || rec.kills[..n].iter().any(|k| k.step == kill.step) {
            report.problem(
                RECORD,
                format!(
                    "{dir}: kill {} names step {}, not a step of scenario {} that a later step of its role restarts, killed once",
                    n + 1,
                    kill.step,
                    scenario.name
                ),
            );
        }
    }
    for (i, step) in rec.run.steps.iter().enumerate() {
        let Some(after_ms) = step.killed_after_ms else {
            continue;
        };
        let planned = rec.kills.iter().find(|k| k.step == i);
        if planned.map(|k| k.after_ms) != Some(after_ms) {
            report.problem(
                RECORD,
                format!("{dir}: step {} recorded as killed after {after_ms} ms, which no kill of the run plans", step.name),
            );
        }
        if step.exit != chaos::MODE.expected_exit() || step.crashed.is_some() {
            report.problem(
                RECORD,
                format!(
                    "{dir}: step {} recorded as killed exits {} with crash {:?}; a kill exits {} and announces no crash",
                    step.name,
                    step.exit,
                    step.crashed,
                    chaos::MODE.expected_exit()
                ),
            );
        }
        if step.wall_ms < after_ms as f64 {
            report.problem(
                RECORD,
                format!(
                    "{dir}: step {} recorded as killed after {after_ms} ms ran only {:.1} ms",
                    step.name, step.wall_ms
                ),
            );
        }
    }
}

fn store_files(stores: &[StoreDef]) -> String {
    stores
        .iter()
        .map(|s| s.file.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Run `read` on a copy of the stores kept under `prefix`, in a temporary directory. A store
/// the run could not read back, as `unread` records (`stores::unread`), has no copy to keep.
fn on_kept<T>(
    report: &mut Report,
    tree: &Tree,
    prefix: &str,
    stores: &[StoreDef],
    unread: &str,
    read: impl FnOnce(&Path) -> T,
) -> Option<T> {
    let tmp = match crate::owner::tempdir("audit") {
        Ok(t) => t,
        Err(e) => {
            report.problem(
                prefix,
                format!("cannot make a directory to read its stores: {e}"),
            );
            return None;
        }
    };
    for store in stores {
        for suffix in STORE_SUFFIXES {
            let name = format!("{}{suffix}", store.file);
            if let Some(bytes) = tree.get(&format!("{prefix}/{name}")) {
                if let Err(e) = std::fs::write(tmp.path().join(&name), bytes) {
                    report.problem(prefix, format!("cannot copy {name} to read it: {e}"));
                    return None;
                }
            } else if suffix.is_empty() && !stores::unread(store, unread) {
                report.problem(
                    &format!("{prefix}/{name}"),
                    format!("store '{}' is not kept", store.name),
                );
                return None;
            }
        }
    }
    Some(read(tmp.path()))
}
