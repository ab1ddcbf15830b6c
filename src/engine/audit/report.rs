//! The audit's output: one line per problem, the sources line, and PASS or FAIL.

use std::path::Path;

use anyhow::Result;

use super::audit;
use super::tree::looks_like_evidence;
use crate::fail;

pub fn run(dir: &Path, json: bool, strict_sources: bool) -> Result<i32> {
    if !dir.exists() {
        return Err(fail::usage(format!("{} does not exist", dir.display())));
    }
    // A directory with none of the files any run writes is not evidence at all: one line and
    // a usage error, not a list of everything it lacks.
    if !dir.is_dir() {
        return Err(fail::usage(format!(
            "{} is not a crashlab evidence directory (not a directory)",
            dir.display()
        )));
    }
    if !looks_like_evidence(dir) {
        return Err(fail::usage(format!(
            "{} is not a crashlab evidence directory (no manifest.json)",
            dir.display()
        )));
    }
    let report = audit(dir, strict_sources);
    if json {
        crate::say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for p in &report.problems {
            crate::say!("{}: {}", p.file, p.problem);
        }
        if !report.attested.is_empty() {
            crate::say!("attested, not proven: {}", report.attested.join("; "));
        }
        match report.sources.as_str() {
            "differ" => crate::say!("sources: differ: {}", report.sources_changed.join(", ")),
            other => crate::say!("sources: {other}"),
        }
        if report.ok && !report.summary.is_empty() {
            crate::say!("PASS: {}", report.summary);
        } else if report.ok {
            let lab = report
                .lab
                .as_deref()
                .map_or("?".to_string(), |l| l.replacen('-', " (", 1) + ")");
            let mut studied = Vec::new();
            if !report.study.is_empty() {
                studied.push(format!("moved crash {}", report.study.join(", ")));
            }
            if let Some(profile) = &report.lossy_profile {
                studied.push(format!("store profile {profile} under power loss"));
            }
            let study = if studied.is_empty() {
                String::new()
            } else {
                format!(
                    ", study with {} (its failures as recorded)",
                    studied.join(" and ")
                )
            };
            crate::say!(
                "PASS: lab {lab}, {}, {}, {}, claims, hashes{study}",
                crate::out::plural(report.processes, "process", "processes"),
                crate::out::plural(report.crashes, "crash", "crashes"),
                crate::out::plural(report.conflicts, "conflict", "conflicts")
            );
        } else {
            let n = report.problems.len();
            crate::say!("FAIL: {}", crate::out::plural(n, "problem", "problems"));
        }
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}
