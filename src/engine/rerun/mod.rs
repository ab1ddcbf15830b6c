//! `crashlab audit --rerun DIR`: run the command DIR records again, with this binary, in a
//! fresh temporary directory, and compare every deterministic line and field of the two
//! runs (README, "`audit --rerun`"). The offline audit runs first; both verdicts are
//! reported, and the exit code is 0 only when both pass.
//!
//! runner: what DIR records and the rerun itself; lab_file: a lab file's run found again; normalise: what legitimately varies;
//! compare: lines and JSON fields by normalised value; pair: which item of one run goes
//! with which of the other; rows: a kept database's rows as
//! lines; scope: what each kind of evidence can compare; tree: the two directories side by
//! side.

pub mod compare;
pub mod lab_file;
pub mod normalise;
pub mod pair;
pub mod rows;
pub mod runner;
pub mod scope;
pub mod tree;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::audit;
use crate::fail;
use compare::{Comparison, Difference};
use runner::Kind;

/// What the text output says is normalised (the README says why).
const NORMALISED: &str =
    "times, timestamps, pids, ports, temporary paths, digests, build and machine fields normalised";

#[derive(Debug, Serialize)]
pub struct Report {
    pub ok: bool,
    pub kind: &'static str,
    pub lab: String,
    /// The command rerun, as DIR records it.
    pub command: Vec<String>,
    pub exit: i32,
    pub timed_out: bool,
    /// The rerun's own run, spawn to exit.
    pub wall_ms: f64,
    /// Comparing the two directories.
    pub compare_ms: f64,
    pub files: usize,
    pub lines: usize,
    pub fields: usize,
    pub not_compared: Vec<String>,
    pub reordered: Vec<String>,
    pub unsettled_only: Vec<String>,
    pub differences: Vec<Difference>,
    pub differences_more: usize,
}

/// A command line as a user would type it (arguments with spaces or quotes in quotes).
fn shell_words(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+".contains(&b));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rerun and compare; the offline audit's report is the caller's.
fn rerun_and_compare(dir: &Path, recorded: &runner::Recorded) -> Result<Report> {
    let mut scope = scope::Scope::new(recorded.kind, &recorded.lab);
    if let Some(whole) = &recorded.lab_file {
        scope = scope.lab_file(whole, &recorded.lab);
    }
    let rerun = runner::rerun(recorded, dir)?;
    let started = Instant::now();
    let mut cmp = Comparison::default();
    let why = if rerun.stderr_first.is_empty() {
        String::new()
    } else {
        format!(": {}", rerun.stderr_first)
    };
    if rerun.ended.timed_out {
        cmp.differ(
            ".",
            "run",
            "completed",
            &format!("killed after {} ms", recorded_timeout_ms(recorded)),
        );
    }
    match &rerun.out {
        Some(out) => {
            if let Err(e) = tree::compare(dir, out, &scope, &mut cmp) {
                cmp.differ(".", "directory", "listed", &format!("{e:#}"));
            }
        }
        None => cmp.differ(
            ".",
            "directory",
            "an evidence directory",
            &format!("none written (exit {}{why})", rerun.ended.exit),
        ),
    }
    let mut not_compared = Vec::new();
    if recorded.kind == Kind::Driver && recorded.lab_file.is_none() {
        not_compared.push(scope::PICTURES_NOT_COMPARED.to_string());
    }
    if recorded.kind == Kind::Chaos {
        not_compared.push(scope::CHAOS_NOT_COMPARED.to_string());
        if let Ok(text) = runner::read_plain(&dir.join("chaos.json")) {
            if let Ok(value) = serde_json::from_str(&text) {
                let left = scope::left_out(&value, scope::CHAOS_SEEDED);
                if !left.is_empty() {
                    not_compared.push(format!(
                        "chaos.json {} (where the kills landed decides them)",
                        left.join(", ")
                    ));
                }
            }
        }
    }
    let compare_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    let wall_ms = (rerun.ended.wall_ms * 1e3).round() / 1e3;
    Ok(Report {
        ok: cmp.different() == 0,
        kind: recorded.kind.name(),
        lab: recorded.lab.clone(),
        command: recorded.command.clone(),
        exit: rerun.ended.exit,
        timed_out: rerun.ended.timed_out,
        wall_ms,
        compare_ms,
        files: cmp.files,
        lines: cmp.lines,
        fields: cmp.fields,
        not_compared,
        reordered: cmp.reordered,
        unsettled_only: cmp.unsettled_only,
        differences: cmp.differences,
        differences_more: cmp.differences_more,
    })
}

fn recorded_timeout_ms(recorded: &runner::Recorded) -> u128 {
    recorded.timeout().as_millis()
}

/// A note's list on one line: the first few names and how many more (--json has them all).
fn some(names: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

fn print(report: &Report) {
    crate::say!(
        "rerun: exit {} after {:.0} ms; compared {} files, {} lines, {} JSON fields in {:.0} ms ({NORMALISED})",
        report.exit, report.wall_ms, report.files, report.lines, report.fields, report.compare_ms
    );
    for what in &report.not_compared {
        crate::say!("rerun: not compared: {what}");
    }
    if !report.reordered.is_empty() {
        crate::say!(
            "rerun: same lines in another order (concurrent threads of one process), not a difference: {}",
            some(&report.reordered)
        );
    }
    if !report.unsettled_only.is_empty() {
        crate::say!(
            "rerun: in one run only, not a difference (SQLite side files and snapshots taken while a writer ran, which timing decides): {}",
            some(&report.unsettled_only)
        );
    }
    for d in &report.differences {
        crate::say!(
            "rerun: {}: {}: recorded {}, rerun {}",
            d.file,
            d.at,
            d.recorded,
            d.rerun
        );
    }
    if report.differences_more > 0 {
        crate::say!(
            "rerun: … and {}",
            crate::out::plural(
                report.differences_more,
                "more difference",
                "more differences"
            )
        );
    }
    if report.ok {
        crate::say!("rerun PASS: nothing deterministic differs");
    } else {
        let n = report.differences.len() + report.differences_more;
        crate::say!(
            "rerun FAIL: {n} difference{}",
            if n == 1 { "" } else { "s" }
        );
    }
}

/// `crashlab audit --rerun DIR [--json] [--strict-sources]`.
pub fn run(dir: &Path, json: bool, strict_sources: bool) -> Result<i32> {
    if !dir.exists() {
        return Err(fail::usage(format!("{} does not exist", dir.display())));
    }
    let recorded = runner::recorded(dir)?;
    // SIGINT or SIGTERM stops the rerun cleanly (runner::wait_then_stop): without a handler
    // this process would die at once and leave the temporary directory behind.
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    runner::outside(&std::env::temp_dir(), dir)?;
    if json {
        let audited = audit::audit(dir, strict_sources);
        let report = rerun_and_compare(dir, &recorded)?;
        let ok = audited.ok && report.ok;
        let mut value = serde_json::to_value(&audited)?;
        value["rerun"] = serde_json::to_value(&report)?;
        crate::say!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(if ok { fail::EXIT_OK } else { fail::EXIT_FAILED });
    }
    crate::say!(
        "rerun: {} ({} evidence of {}), again with this binary in a temporary directory",
        shell_words(&recorded.command),
        recorded.kind.name(),
        recorded.lab
    );
    let audit_code = audit::run(dir, false, strict_sources)?;
    let report = rerun_and_compare(dir, &recorded)?;
    print(&report);
    Ok(if audit_code == fail::EXIT_OK && report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_print_as_typed() {
        let id = crate::engine::registry::labs()[0].id;
        let c: Vec<String> = ["crashlab", "driver", id, "--out", "a b", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            shell_words(&c),
            format!(r"crashlab driver {id} --out 'a b' 'it'\''s'")
        );
    }
}
