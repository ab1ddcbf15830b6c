//! `crashlab audit DIR`: re-check a run's evidence offline, trusting nothing it can re-derive.
//!
//! It reads only DIR (through one snapshot of its plain files that never follows a symlink,
//! tree.rs) and, for the source comparison, the checkout, and reports every problem, not just
//! the first: (1) manifest digests, nothing unlisted, nothing the run does not write; (2) the
//! recorded command, parsed as the binary parses it, rebuilds every process record (run.rs,
//! chaos.rs); (3) each output is bound to its own process (output.rs, ending.rs,
//! statements.rs); (4) the driver's checker judges the raw output again and results.json must
//! be that judgement field by field (results.rs); (5) the replay of the SQL history
//! (replayed.rs); (6) database-files.json in the driver's order and consistent, kept databases
//! by their rows (database.rs, kept.rs); (7) sources against the checkout. Fields no file can
//! prove are listed as attested. A lab file's run (labfile.json) has its own checks
//! (userlab.rs).

mod chaos;
mod chaos_kept;
mod chaos_logs;
mod command;
mod cuts;
mod database;
mod ending;
mod events;
mod findings;
mod kept;
mod manifest;
mod output;
mod output_events;
mod output_sql;
#[cfg(test)]
mod output_tests;
mod pictures;
mod probe;
mod record;
mod replayed;
mod report;
mod results;
mod run;
mod seeds;
mod sequence;
mod servers;
mod shards;
pub(crate) use shards::MERGED;
mod sources;
mod statements;
mod states;
mod traced;
pub(crate) mod tree;
mod userlab;

use std::path::Path;

use serde::Serialize;

use crate::engine::evidence::{self, Manifest};

pub use report::run;

use tree::Tree;

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
    /// A power-loss run whose store profile is not the lab's design: its failures are the
    /// run's findings, as a moved crash's are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lossy_profile: Option<String>,
    /// `lab`, or `chaos` for a chaos run.
    pub kind: String,
    /// The PASS line's description, when the kind writes its own.
    #[serde(skip)]
    pub summary: String,
    /// `match`, `differ`, or `no checkout`.
    pub sources: String,
    pub sources_changed: Vec<String>,
    /// Fields no raw file can prove, by file: recorded, shown, not checked.
    pub attested: Vec<String>,
    pub problems: Vec<Problem>,
}

impl Report {
    pub(crate) fn problem(&mut self, file: &str, problem: impl Into<String>) {
        self.problems.push(Problem {
            file: file.to_string(),
            problem: problem.into(),
        });
    }

    /// One line per distinct problem, in the order found (two checks may see the same).
    fn dedup(&mut self) {
        let mut seen = std::collections::BTreeSet::new();
        self.problems
            .retain(|p| seen.insert((p.file.clone(), p.problem.clone())));
    }
}

/// A report before any check: sources not compared, a lab run until the files say otherwise.
fn fresh() -> Report {
    Report {
        sources: "not compared (no manifest)".to_string(),
        kind: "lab".to_string(),
        ..Report::default()
    }
}

pub fn audit(dir: &Path, strict_sources: bool) -> Report {
    let mut report = fresh();
    if !dir.is_dir() {
        report.problem(
            &dir.display().to_string(),
            "not a directory: nothing to audit",
        );
        return report;
    }
    // Every check reads from this one snapshot of DIR's plain files: no check opens a path
    // of its own, so none can follow a symlink.
    let tree = Tree::load(&mut report, dir);
    judge(
        report,
        &tree,
        dir,
        Sources::Compared {
            strict: strict_sources,
        },
    )
}

/// Whether a judged directory's sources are compared with the checkout: a study's seed is
/// not (the study's are; looking for a checkout from inside DIR would open a path in it).
#[derive(Clone, Copy)]
enum Sources {
    Compared { strict: bool },
    NotCompared,
}

/// The audit of `dir` from its snapshot `tree` (a study's seed: the part of the study's
/// snapshot under it, so that no file is read twice). `dir` only locates the checkout the
/// sources are compared with, when they are.
fn judge(mut report: Report, tree: &Tree, dir: &Path, sources: Sources) -> Report {
    let manifest: Option<Manifest> = tree.json(&mut report, evidence::MANIFEST);
    if let Some(m) = &manifest {
        manifest::check_files(&mut report, tree, m);
    }
    if tree.has_file(crate::labfile::evidence::RECORD) {
        userlab::check(&mut report, tree);
        // A lab file's stores, named by the user: every file that begins like SQLite.
        kept::sound(&mut report, tree, &|_| true);
    } else if tree.has_file(EXPLORE) {
        // An explore run: its files are checked against the manifest; the cases' verdicts
        // are not re-derived here (each case keeps its databases only when it broke).
        report.kind = "explore".to_string();
        let explore: Option<serde_json::Value> = tree.json(&mut report, EXPLORE);
        if let Some(e) = explore {
            // A broken case keeps its databases under `cases/<design>/<case>/db/`. Under
            // power loss a corrupt file can be the case's finding (sync-off), so there the
            // audit leaves their soundness to the case's own verdict.
            if e["crash_mode"] != "power-loss" {
                let kept_db = |rel: &str| {
                    let parts: Vec<&str> = rel.split('/').collect();
                    parts.len() == 5 && parts[0] == "cases" && parts[3] == "db"
                };
                kept::sound(&mut report, tree, &kept_db);
            }
            let lab = e["lab"].as_str().unwrap_or("?").to_string();
            report.lab = Some(lab.clone());
            report.summary = format!(
                "explore {}, {} files, hashes (the cases' claims are not re-checked by the audit)",
                lab.split('-').next().unwrap_or("?"),
                manifest.as_ref().map_or(0, |m| m.files.len())
            );
        }
        report.attested = vec![format!("{EXPLORE} and every case's claims")];
        shards::note(&mut report, tree);
        if states::check(&mut report, tree) {
            // `--cut exhaustive`: each case's states are enumerated again from its record.
            report
                .summary
                .push_str(", every kept state derived again from its cut's record");
            report.attested.push(states::ATTESTED.to_string());
        }
    } else if tree.has_file(crate::engine::load::chaos::seeds::SEEDS) {
        seeds::check(&mut report, tree, dir);
        shards::note(&mut report, tree);
    } else if tree.has_file(CHAOS) {
        chaos::check_chaos(&mut report, tree);
    } else if tree.has_file(crate::probe::records::PROBE) {
        probe::check_probe(&mut report, tree);
    } else {
        run::check_run(&mut report, tree);
    }
    if let (Some(m), Sources::Compared { strict }) = (&manifest, sources) {
        sources::check_sources(&mut report, dir, m, strict);
    }
    report.dedup();
    report.ok = report.problems.is_empty();
    report
}

/// A seed of a chaos study, audited from the study's own snapshot: `tree` holds its files.
pub(super) fn audit_part(tree: &Tree, dir: &Path) -> Report {
    judge(fresh(), tree, dir, Sources::NotCompared)
}

/// The audit's one snapshot of `dir`, as its walk reads it: what the replay's tests read.
#[cfg(test)]
pub(crate) fn snapshot(dir: &Path) -> Tree {
    Tree::load(&mut Report::default(), dir)
}

/// The report of a `crashlab chaos` run; its presence marks a chaos evidence directory.
pub(crate) const CHAOS: &str = "chaos.json";
pub(crate) const KILLS: &str = "kills.json";
/// The report of a `crashlab explore` run.
pub(crate) const EXPLORE: &str = "explore.json";
