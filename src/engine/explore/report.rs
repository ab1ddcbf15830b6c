//! A run of explore end to end: the cases, the verdict, and `explore.json`, `explore.md`,
//! `explore.svg` and the manifest in the run's directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::evidence;
use crate::engine::explore::case::CaseResult;
use crate::engine::explore::export;
use crate::engine::explore::invariant::Status;
use crate::engine::explore::plan::{ExplorePlan, Prediction, Words};
use crate::engine::explore::run::{self, HITS_MAX};
use crate::engine::explore::steps::Env;
use crate::engine::explore::verdict::{self, Design};
use crate::engine::explore::Run;
use crate::engine::nemesis::Nemesis;
use crate::engine::LabStack;

/// One design's probe and the hits it saw.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Probe {
    pub variant: &'static str,
    pub result: CaseResult,
}

/// One design in Jepsen's words: how many judged cases were valid (no bad anomaly), and
/// the anomalies over all of them, by kind.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub variant: &'static str,
    pub cases: usize,
    pub judged: usize,
    pub valid: usize,
    pub anomalies: BTreeMap<&'static str, usize>,
    pub bad_anomalies: BTreeMap<&'static str, usize>,
}

/// The states of every case's cut (`--cut exhaustive`), in all.
#[derive(Debug, Clone, Serialize)]
pub struct StatesRun {
    pub run: usize,
    pub broke: usize,
    /// Crash points whose states were more than the bound.
    pub bounded: usize,
    pub states_per_s: f64,
}

/// Everything a run found, for the exporters.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub lab: String,
    pub crashlab_version: String,
    pub git: Option<evidence::Git>,
    pub sqlite_version: String,
    pub command: Vec<String>,
    pub crash_mode: &'static str,
    /// `--shard`: the bucket of the matrix this run judged (`hash:1/4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub jobs: usize,
    /// The file system the databases lived on while the cases ran (`tmpfs`, `ext4`, …).
    pub work_fs: String,
    pub hits_max: u32,
    pub variants: Vec<&'static str>,
    pub points: Vec<&'static str>,
    pub predictions: Vec<Prediction>,
    pub probes: Vec<Probe>,
    pub cases: Vec<CaseResult>,
    /// Per design, in Jepsen's words.
    pub summary: Vec<Summary>,
    /// Each way the run differs from what the designs predict; empty when it exits 0.
    pub differences: Vec<String>,
    /// What the designs showed, one line each (predicted or not).
    pub findings: Vec<String>,
    pub ok: bool,
    pub processes: usize,
    pub wall_ms: f64,
    pub cases_per_s: f64,
    /// Under `--cut exhaustive`: the states run over every case, and how fast.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<StatesRun>,
    /// The lab's words for the exporters.
    #[serde(skip)]
    pub words: &'static Words,
    /// Whether every design and every point of the lab ran: only then may the verdict line
    /// speak of them all, as the lab's words do.
    #[serde(skip)]
    pub whole: bool,
}

impl Report {
    /// The verdict line of a passing run: the lab's own words when the whole matrix ran; a
    /// run narrowed by `--variants` or `--points` says only what it ran.
    pub fn pass_line(&self, svg: bool) -> String {
        debug_assert!(self.ok, "a pass line for a passing run only");
        if self.whole {
            let words = if svg {
                self.words.svg_pass
            } else {
                self.words.pass
            };
            return words.to_string();
        }
        format!(
            "PASS: {} held or broke exactly where predicted at the {} run ({}not the whole matrix)",
            self.variants.join(", "),
            crate::out::plural(self.points.len(), "point", "points"),
            self.shard
                .as_ref()
                .map_or(String::new(), |s| format!("shard {s}, "))
        )
    }
}

fn summary(variant: &'static str, cases: &[CaseResult]) -> Summary {
    let mine: Vec<&CaseResult> = cases.iter().filter(|c| c.variant == variant).collect();
    let judged: Vec<&&CaseResult> = mine
        .iter()
        .filter(|c| matches!(c.status, Status::Holds | Status::Breaks))
        .collect();
    let mut s = Summary {
        variant,
        cases: mine.len(),
        judged: judged.len(),
        valid: judged.iter().filter(|c| c.bad_anomalies.is_empty()).count(),
        anomalies: BTreeMap::new(),
        bad_anomalies: BTreeMap::new(),
    };
    for c in &judged {
        for f in &c.anomalies {
            *s.anomalies.entry(f.anomaly.name()).or_default() += 1;
        }
        for f in &c.bad_anomalies {
            *s.bad_anomalies.entry(f.anomaly.name()).or_default() += 1;
        }
    }
    s
}

fn states_run(cases: &[CaseResult], wall_s: f64) -> Option<StatesRun> {
    let states: Vec<&super::states::Summary> =
        cases.iter().filter_map(|c| c.states.as_ref()).collect();
    if states.is_empty() {
        return None;
    }
    let run: usize = states.iter().map(|s| s.run).sum();
    Some(StatesRun {
        run,
        broke: states.iter().map(|s| s.broke).sum(),
        bounded: states.iter().filter(|s| s.bounded).count(),
        states_per_s: ((run as f64 / wall_s.max(1e-9)) * 10.0).round() / 10.0,
    })
}

fn progress() -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "cases [{bar:40}] {pos}/{len}, {per_sec}, {elapsed}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

pub fn explore(
    lab: &LabStack,
    plan: &dyn ExplorePlan,
    nemesis: &dyn Nemesis,
    run: &Run<'_>,
    dir: &Path,
) -> Result<Report> {
    let started = Instant::now();
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    // The children run in their work directories and write their events here.
    let dir = &std::path::absolute(dir).context("resolving the output directory")?;
    let env = Env {
        exe: &exe,
        dir,
        work_root: run.root,
        nemesis,
        timeout: run.timeout,
        store: lab.store,
        power: run.power,
        profile: crate::power::profile::DEFAULT,
        session: run.session,
        states: None,
    };
    let bar = progress();
    bar.inc_length(run.designs.len() as u64);
    let shard = run.shard.map(|s| (s, &run.identity));
    let (probes, cases) = run::run_all(plan, run.designs, run.points, &env, run.jobs, shard, &bar)?;
    bar.finish_and_clear();
    if let Some(s) = run.shard {
        // The whole matrix, as every probe gives it: the plan the shards share.
        let all: Vec<String> = run
            .designs
            .iter()
            .zip(&probes)
            .flat_map(|(d, p)| run::cases_of(d, run.points, p))
            .map(|c| run.identity.identity_of(&c))
            .collect();
        let mine = cases.iter().map(|c| identity(run, c)).collect();
        super::shard::write(dir, s, lab, all, mine)?;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let report = conclude(lab, plan, nemesis.name(), run, probes, cases, wall_s)?;
    write(lab, &report, dir)?;
    // A lab on servers: the servers' startups and the kills made, listed in the manifest.
    if let Some(session) = run.session {
        session.write(dir)?;
    }
    evidence::write_manifest(dir)?;
    Ok(report)
}

/// A case's identity line (`shard::Plan::identity`).
pub fn identity(run: &Run<'_>, c: &CaseResult) -> String {
    run.identity
        .identity(c.variant, c.point.unwrap_or("probe"), c.hit)
}

/// `explore.json`, `explore.md` and `explore.svg` of a report.
pub fn write(lab: &LabStack, report: &Report, dir: &Path) -> Result<()> {
    std::fs::write(
        dir.join("explore.json"),
        export::json::render(report)? + "\n",
    )
    .context("writing explore.json")?;
    std::fs::write(
        dir.join("explore.md"),
        export::markdown::render(lab, report),
    )
    .context("writing explore.md")?;
    std::fs::write(dir.join("explore.svg"), export::svg::render(report))
        .context("writing explore.svg")
}

/// The verdict over a run's probes and cases (a shard's own, or every shard's merged), and
/// the report the exporters write.
pub fn conclude(
    lab: &LabStack,
    plan: &dyn ExplorePlan,
    crash_mode: &'static str,
    run: &Run<'_>,
    probes: Vec<CaseResult>,
    cases: Vec<CaseResult>,
    wall_s: f64,
) -> Result<Report> {
    let designs_all = match run.power.is_empty() {
        true => plan.designs().len(),
        // Exhaustive is a study of its own: its designs are every profile under it; one
        // seeded style is part of the study of all three.
        false => {
            let styles = match run.cut {
                Some(crate::power::cut::Style::Exhaustive) => 1,
                _ => crate::power::cut::STYLES.len(),
            };
            crate::power::profile::PROFILES.len() * styles
        }
    };
    let whole = run.designs.len() == designs_all
        && run.points.len() == lab.points.len()
        && run.shard.is_none();
    let predictions = match (run.power.is_empty(), run.server) {
        (false, _) => plan.power_predictions(),
        (true, Some(server)) => super::server_kill::predictions(plan, server, run.queue_type),
        (true, None) => plan.predictions(),
    };
    let mut differences = Vec::new();
    for p in &probes {
        // A power design runs the lab's own design: that one is asked whether it breaks
        // without a crash, never the power design's name, which the plan does not know.
        let design = run
            .power
            .iter()
            .find(|d| d.name == p.variant)
            .map_or(p.variant, |d| d.lab_design);
        if plan.breaks_without_crash(design) {
            differences.extend(verdict::probe_breaks_as_predicted(p, plan.predictions()));
        } else if p.status != Status::Holds {
            differences.push(format!(
                "{}: the run without a crash does not hold ({})",
                p.variant,
                p.problems.join("; ")
            ));
        }
    }
    // A shard judges its own cases: a predicted hit in another shard is that one's.
    let mine: Vec<BTreeSet<(&'static str, u32)>> = run
        .designs
        .iter()
        .map(|d| {
            let of = cases.iter().filter(|c| c.variant == *d);
            of.filter_map(|c| c.point.map(|p| (p, c.hit))).collect()
        })
        .collect();
    let designs: Vec<Design<'_>> = run
        .designs
        .iter()
        .zip(&probes)
        .zip(&mine)
        .map(|((name, probe), mine)| Design {
            name,
            predictions: predictions.iter().filter(|p| p.variant == *name).collect(),
            probe_hits: &probe.hits,
            shard: run.shard.map(|_| mine),
        })
        .collect();
    let (more, findings) = verdict::verdict(&designs, run.points, &cases);
    differences.extend(more);
    let processes = cases.iter().map(|c| c.processes).sum::<usize>()
        + probes.iter().map(|c| c.processes).sum::<usize>();
    let report = Report {
        lab: lab.full_name(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: evidence::build_checkout().and_then(|c| evidence::git_state(&c)),
        sqlite_version: crate::store::sqlite_version(),
        command: run.command.clone(),
        crash_mode,
        shard: run.shard.map(|s| s.to_string()),
        jobs: run.jobs,
        work_fs: run.work_fs.clone(),
        hits_max: HITS_MAX,
        variants: run.designs.to_vec(),
        points: run.points.to_vec(),
        predictions: predictions
            .iter()
            .filter(|p| run.designs.contains(&p.variant))
            .copied()
            .collect(),
        summary: run.designs.iter().map(|d| summary(d, &cases)).collect(),
        probes: run
            .designs
            .iter()
            .zip(probes)
            .map(|(v, result)| Probe { variant: v, result })
            .collect(),
        ok: differences.is_empty(),
        differences,
        findings,
        processes,
        // The time covers probes, cases and their evidence; the exports after it are small.
        wall_ms: (wall_s * 1e6).round() / 1000.0,
        cases_per_s: ((cases.len() as f64 / wall_s.max(1e-9)) * 10.0).round() / 10.0,
        states: states_run(&cases, wall_s),
        cases,
        words: if run.power.is_empty() {
            plan.words()
        } else {
            super::power::words(plan.words())
        },
        whole,
    };
    Ok(report)
}
