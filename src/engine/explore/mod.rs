//! `crashlab explore`: move the crash point everywhere. For every design of a lab (lab 14's
//! variants, lab 13's receiver modes; a `Plan` says what a case of the lab runs and what the
//! designs predict), a probe run counts how often each point is reached; then every point at
//! every hit `@N` (up to a bound) is a case run from empty files as real processes, recovered
//! to quiescence and checked end to end. The matrix (points × invariants) goes to stdout,
//! `explore.json`, `explore.md` and `explore.svg`; each case's processes and outputs under
//! `cases/`.

pub mod case;
pub mod check;
pub mod dispatch;
pub mod export;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use serde::Serialize;

use crate::crash::Mode;
use crate::engine::driver;
use crate::engine::evidence;
use crate::engine::Lab;
use crate::fail;
use crate::labs::outbox_inbox::variant::Variant;
use case::{CaseDef, CaseResult, Status};
use check::Invariant;

/// `crashlab explore LAB …`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The lab to explore (14 or 13)
    pub lab: String,
    /// Designs to explore: `all`, or names separated by commas (lab 14: correct,
    /// mark-before-send, memory-inbox, split-inbox-tx, ack-before-apply; lab 13: the receiver
    /// modes keyed, unkeyed)
    #[arg(long, default_value = "all", value_name = "all|NAME,...")]
    pub variants: String,
    /// Only these points: names or phases separated by commas (default: every point)
    #[arg(long, value_name = "POINT|PHASE,...")]
    pub points: Option<String>,
    /// How the crash stops the process (`hang` waits for --step-timeout-ms in every case:
    /// give it a short one)
    #[arg(long, value_enum, default_value_t = Mode::Exit)]
    pub crash_mode: Mode,
    /// Cases run at once (default: the number of cores)
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print explore.json to stdout instead of the table
    #[arg(long)]
    pub json: bool,
    /// Output directory (must not exist); default target/lab/<lab>-explore-<UTC time>
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A process still running after this is killed and its case is an error
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub step_timeout_ms: u64,
    /// Where the cases' databases live while they run (default: /dev/shm when it is a
    /// writable directory, else the system's temp dir); see README, "What each crash mode does and does not flush"
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

/// The directory the cases' work directories go under, and the kind of file system it is on.
fn work_root(given: Option<&Path>) -> Result<(PathBuf, String)> {
    let root = match given {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(fail::usage(format!(
                    "--work-dir {} is not a directory",
                    dir.display()
                )));
            }
            dir.to_path_buf()
        }
        None => {
            let shm = Path::new("/dev/shm");
            let usable = shm.is_dir()
                && tempfile::Builder::new()
                    .prefix("crashlab-probe-")
                    .tempdir_in(shm)
                    .is_ok();
            if usable {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        }
    };
    let kind = fs_kind(&root);
    Ok((root, kind))
}

/// `tmpfs`, `ext4`, … from statfs: the evidence says whether fsync reached a disk.
fn fs_kind(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return "unknown".to_string();
    };
    // SAFETY: a zeroed statfs is a valid value for statfs to fill; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(path.as_ptr(), &mut st) } != 0 {
        return "unknown".to_string();
    }
    #[allow(clippy::unnecessary_cast)]
    match st.f_type as i64 {
        0x0102_1994 => "tmpfs".to_string(),
        0xEF53 => "ext4".to_string(),
        0x5846_5342 => "xfs".to_string(),
        0x9123_683E => "btrfs".to_string(),
        0x794C_7630 => "overlayfs".to_string(),
        other => format!("0x{other:x}"),
    }
}

/// The largest `@N` explored per point: the scenario reaches none more than 3 times.
pub const HITS_MAX: u32 = 8;
/// The most cases run at once.
pub const JOBS_MAX: usize = 64;

/// What each broken variant must show: the point, the invariant, and the design's words.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Prediction {
    pub variant: &'static str,
    pub point: &'static str,
    pub invariant: Invariant,
    pub says: &'static str,
}

pub const PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "mark-before-send",
        point: "publisher.after-mark-sent",
        invariant: Invariant::NoLostEffect,
        says: "lost message",
    },
    Prediction {
        variant: "memory-inbox",
        point: "consumer.after-receiver-commit",
        invariant: Invariant::NoDuplicateEffect,
        says: "double credit",
    },
    Prediction {
        variant: "split-inbox-tx",
        point: "consumer.after-inbox-commit",
        invariant: Invariant::NoLostEffect,
        says: "lost credit",
    },
    Prediction {
        variant: "ack-before-apply",
        point: "consumer.after-ack",
        invariant: Invariant::NoLostEffect,
        says: "lost effect",
    },
];

pub fn prediction(variant: Variant) -> Option<&'static Prediction> {
    PREDICTIONS.iter().find(|p| p.variant == variant.name())
}

/// `all` or `NAME,NAME`: known names only, each once, in the order of the plan's designs.
pub fn parse_designs(plan: &Plan, spec: &str) -> Result<Vec<&'static str>> {
    let all = (plan.designs)();
    if spec == "all" {
        return Ok(all);
    }
    let mut chosen = Vec::new();
    for name in spec.split(',').map(str::trim) {
        let Some(design) = all.iter().find(|d| **d == name) else {
            return Err(fail::usage(format!(
                "unknown {} '{name}'; known: all, {}",
                plan.design_word,
                all.join(", ")
            )));
        };
        if !chosen.contains(design) {
            chosen.push(*design);
        }
    }
    Ok(all.into_iter().filter(|d| chosen.contains(d)).collect())
}

/// One case of any lab: a design (lab 14's variant, lab 13's receiver mode), the crash (None
/// for the probe that counts hits), and whether the probe saw the point reached `hit` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub design: &'static str,
    pub crash: Option<(&'static str, u32)>,
    pub expect_reached: bool,
}

impl Case {
    /// `cases/<design>/<point>@<hit>`, or `cases/<design>/probe`.
    pub fn evidence_dir(&self) -> String {
        match self.crash {
            Some((point, hit)) => format!("cases/{}/{point}@{hit}", self.design),
            None => format!("cases/{}/probe", self.design),
        }
    }
}

/// The words the exporters use that differ from lab to lab.
#[derive(Debug)]
pub struct Words {
    /// The count columns, in the order of `CaseCounts::values`.
    pub count_titles: &'static [&'static str],
    /// The table's legend under the blocks.
    pub legend: &'static str,
    /// The verdict line of a passing run (table and markdown; the picture's own below).
    pub pass: &'static str,
    pub svg_pass: &'static str,
}

/// Designs, points and cases in; the differences (each makes the run exit 1) and the
/// findings out.
pub type Verdict =
    fn(&[&'static str], &[&'static str], &[CaseResult]) -> (Vec<String>, Vec<String>);

/// What explore needs to know of a lab: a lab is data, the generator, the parallel runner,
/// the matrix and the exporters are shared.
pub struct Plan {
    /// `variant` (lab 14) or `mode` (lab 13): how usage errors name a design.
    pub design_word: &'static str,
    pub designs: fn() -> Vec<&'static str>,
    pub predictions: &'static [Prediction],
    /// Run one case as real processes into `env.dir/<case.evidence_dir()>`.
    pub run: fn(&Case, &case::Env<'_>) -> Result<CaseResult>,
    /// Compare the cases with the predictions: (differences, findings).
    pub verdict: Verdict,
    pub words: &'static Words,
}

/// Lab 14: the correct design and its four broken variants.
pub static PLAN14: Plan = Plan {
    design_word: "variant",
    designs: || Variant::ALL.iter().map(|v| v.name()).collect(),
    predictions: PREDICTIONS,
    run: |c, env| {
        let variant = Variant::from_name(c.design).expect("a design of lab 14 is a variant");
        case::run(
            &CaseDef {
                variant,
                crash: c.crash,
                expect_reached: c.expect_reached,
            },
            env,
        )
    },
    verdict: |designs, points, cases| {
        let variants: Vec<Variant> = designs
            .iter()
            .filter_map(|d| Variant::from_name(d))
            .collect();
        verdict(&variants, points, cases)
    },
    words: &WORDS14,
};

static WORDS14: Words = Words {
    count_titles: &[
        "deliveries",
        "claims",
        "applied",
        "suppressed",
        "lost",
        "duplicated",
        "lost msgs",
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n\
         no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: nothing pending after recovery;\n\
         ack=>dur: every COMMITTED line printed is in the files; counts are summed over the hits",
    pass: "PASS: the correct design holds everywhere and every variant shows its predicted violation",
    svg_pass: "PASS: the correct design holds everywhere; every variant shows its predicted violation",
};

/// The plan of a lab explore knows.
pub fn plan(lab: &Lab) -> Result<&'static Plan> {
    match lab.id {
        "14" => Ok(&PLAN14),
        "13" => Ok(&dispatch::PLAN),
        other => Err(fail::usage(format!(
            "explore knows labs 14 and 13, not lab {other}"
        ))),
    }
}

/// The points to explore: every point of the lab, or those named (by name or by phase).
pub fn parse_points(lab: &Lab, spec: Option<&str>) -> Result<Vec<&'static str>> {
    let all: Vec<&'static str> = lab.points.iter().map(|p| p.name).collect();
    let Some(spec) = spec else {
        return Ok(all);
    };
    let mut chosen = Vec::new();
    for name in spec.split(',').map(str::trim) {
        let matched: Vec<&'static str> = lab
            .points
            .iter()
            .filter(|p| p.name == name || p.phase() == name)
            .map(|p| p.name)
            .collect();
        if matched.is_empty() {
            return Err(fail::usage(format!(
                "--points: '{name}' is neither a point nor a phase of lab {}; known points: {}",
                lab.id,
                all.join(", ")
            )));
        }
        chosen.extend(matched);
    }
    Ok(all.into_iter().filter(|p| chosen.contains(p)).collect())
}

/// One variant's probe and the hits it saw.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub variant: &'static str,
    pub result: CaseResult,
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
    pub jobs: usize,
    /// The file system the databases lived on while the cases ran (`tmpfs`, `ext4`, …).
    pub work_fs: String,
    pub hits_max: u32,
    pub variants: Vec<&'static str>,
    pub points: Vec<&'static str>,
    pub predictions: Vec<Prediction>,
    pub probes: Vec<Probe>,
    pub cases: Vec<CaseResult>,
    /// Each way the run differs from what the designs predict; empty when it exits 0.
    pub differences: Vec<String>,
    /// What the variants showed, one line each (predicted or not).
    pub findings: Vec<String>,
    pub ok: bool,
    pub processes: usize,
    pub wall_ms: f64,
    pub cases_per_s: f64,
    /// The lab's words for the exporters.
    #[serde(skip)]
    pub words: &'static Words,
}

pub fn command(args: &Args, recorded: Vec<String>) -> Result<i32> {
    let lab = crate::labs::find(&args.lab)?;
    let plan = plan(lab)?;
    let variants = parse_designs(plan, &args.variants)?;
    let points = parse_points(lab, args.points.as_deref())?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.unwrap_or(cores);
    if jobs == 0 || jobs > JOBS_MAX {
        return Err(fail::usage(format!(
            "--jobs {jobs} is out of range (1 to {JOBS_MAX})"
        )));
    }
    if args.step_timeout_ms == 0 || args.step_timeout_ms > driver::STEP_TIMEOUT_MS_MAX {
        return Err(fail::usage(format!(
            "--step-timeout-ms {} is out of range (1 to {})",
            args.step_timeout_ms,
            driver::STEP_TIMEOUT_MS_MAX
        )));
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("target").join("lab").join(format!(
            "{}-explore-{}",
            lab.full_name(),
            driver::utc_stamp()
        ))
    });
    let (root, work_fs) = work_root(args.work_dir.as_deref())?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let partial = driver::claim_out(&out)?;
    let mut command = vec!["crashlab".to_string()];
    command.extend(recorded);
    let run = Run {
        variants: &variants,
        points: &points,
        jobs,
        root: &root,
        work_fs,
        command,
    };
    let result = explore(lab, plan, args, &run, &partial);
    // SIGINT or SIGTERM: every case's children were killed and its work directory removed
    // as the run unwound; what it wrote goes too (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::interrupt::finish(signal, Some(&partial)));
    }
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            return Err(e.context(format!(
                "explore stopped; what it wrote is in {}",
                partial.display()
            )))
        }
    };
    crate::engine::evidence::publish(&partial, &out)?;
    if args.json {
        crate::say!("{}", export::json::render(&report)?);
    } else {
        crate::out::print(&export::table::render(lab, &report, &out));
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

/// Run `defs` on `jobs` threads; results come back in the order of `defs`.
fn run_all(
    plan: &Plan,
    defs: &[Case],
    env: &case::Env<'_>,
    jobs: usize,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<CaseResult>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<CaseResult>>>> =
        Mutex::new((0..defs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(defs.len()) {
            scope.spawn(|| {
                // Each index is taken once; the loop ends when the list is used up.
                for _ in 0..defs.len() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    // Interrupted: no new case; the ones running unwind on their own.
                    if i >= defs.len() || crate::interrupt::caught().is_some() {
                        break;
                    }
                    let result = (plan.run)(&defs[i], env);
                    bar.inc(1);
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(result);
                }
            });
        }
    });
    crate::interrupt::check()?;
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    assert_eq!(results.len(), defs.len(), "one result slot per case");
    results
        .into_iter()
        .zip(defs)
        .map(|(r, d)| {
            r.expect("every case ran")
                .with_context(|| format!("case {}", d.evidence_dir()))
        })
        .collect()
}

fn progress(len: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:40}] {pos}/{len} cases, {per_sec}, {elapsed}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

/// What `command` resolved from the arguments.
struct Run<'a> {
    variants: &'a [&'static str],
    points: &'a [&'static str],
    jobs: usize,
    root: &'a Path,
    work_fs: String,
    command: Vec<String>,
}

fn explore(lab: &Lab, plan: &Plan, args: &Args, run: &Run<'_>, dir: &Path) -> Result<Report> {
    let (variants, points, jobs) = (run.variants, run.points, run.jobs);
    let started = Instant::now();
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let env = case::Env {
        exe: &exe,
        dir,
        work_root: run.root,
        mode: args.crash_mode,
        timeout: Duration::from_millis(args.step_timeout_ms),
    };

    // Probes: every variant once without a crash, to count the hits of every point.
    let probe_defs: Vec<Case> = variants
        .iter()
        .map(|&design| Case {
            design,
            crash: None,
            expect_reached: false,
        })
        .collect();
    let bar = progress(probe_defs.len());
    bar.set_prefix("probes");
    let probe_results = run_all(plan, &probe_defs, &env, jobs, &bar)?;
    bar.finish_and_clear();
    let mut differences = Vec::new();
    for p in &probe_results {
        if p.status != Status::Holds {
            differences.push(format!(
                "{}: the run without a crash does not hold ({})",
                p.variant,
                p.problems.join("; ")
            ));
        }
    }

    // Cases: every point, every hit the probe saw (up to HITS_MAX); a point the probe never
    // saw gets one case at @1, to show that arming it crashes nothing.
    let mut defs = Vec::new();
    for (variant, probe) in variants.iter().zip(&probe_results) {
        for point in points {
            let seen = probe.hits.get(*point).copied().unwrap_or(0);
            if seen == 0 {
                defs.push(Case {
                    design: variant,
                    crash: Some((point, 1)),
                    expect_reached: false,
                });
            }
            for hit in 1..=seen.min(HITS_MAX) {
                defs.push(Case {
                    design: variant,
                    crash: Some((point, hit)),
                    expect_reached: true,
                });
            }
        }
    }
    let bar = progress(defs.len());
    bar.set_prefix("cases");
    let cases = run_all(plan, &defs, &env, jobs, &bar)?;
    bar.finish_and_clear();

    let (more, findings) = (plan.verdict)(variants, points, &cases);
    differences.extend(more);
    let processes = cases.iter().map(|c| c.processes).sum::<usize>()
        + probe_results.iter().map(|c| c.processes).sum::<usize>();
    let wall_s = started.elapsed().as_secs_f64();
    let mut report = Report {
        lab: lab.full_name(),
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: evidence::build_checkout().and_then(|c| evidence::git_state(&c)),
        sqlite_version: crate::store::sqlite_version(),
        command: run.command.clone(),
        crash_mode: args.crash_mode.name(),
        jobs,
        work_fs: run.work_fs.clone(),
        hits_max: HITS_MAX,
        variants: variants.to_vec(),
        points: points.to_vec(),
        predictions: plan
            .predictions
            .iter()
            .filter(|p| variants.contains(&p.variant))
            .copied()
            .collect(),
        probes: variants
            .iter()
            .zip(probe_results)
            .map(|(v, result)| Probe { variant: v, result })
            .collect(),
        ok: differences.is_empty(),
        differences,
        findings,
        processes,
        wall_ms: 0.0,
        cases_per_s: 0.0,
        cases,
        words: plan.words,
    };
    // The time covers probes, cases and their evidence; the exports after it are small.
    report.wall_ms = (wall_s * 1e6).round() / 1000.0;
    report.cases_per_s = ((report.cases.len() as f64 / wall_s.max(1e-9)) * 10.0).round() / 10.0;
    std::fs::write(
        dir.join("explore.json"),
        export::json::render(&report)? + "\n",
    )
    .context("writing explore.json")?;
    std::fs::write(
        dir.join("explore.md"),
        export::markdown::render(lab, &report),
    )
    .context("writing explore.md")?;
    std::fs::write(dir.join("explore.svg"), export::svg::render(&report))
        .context("writing explore.svg")?;
    evidence::write_manifest(dir)?;
    Ok(report)
}

/// Compare the cases with the designs' predictions: the differences (each makes the run
/// exit 1) and the findings (what every variant broke, and where).
fn verdict(
    variants: &[Variant],
    points: &[&'static str],
    cases: &[CaseResult],
) -> (Vec<String>, Vec<String>) {
    let mut differences = unproven(cases);
    let mut findings = Vec::new();
    for variant in variants {
        let mine: Vec<&CaseResult> = cases
            .iter()
            .filter(|c| c.variant == variant.name())
            .collect();
        let broken: Vec<String> = Invariant::ALL
            .iter()
            .skip(1)
            .filter_map(|inv| {
                let at: Vec<&&CaseResult> = mine
                    .iter()
                    .filter(|c| c.invariants.get(*inv) == Some(false))
                    .collect();
                if at.is_empty() {
                    return None;
                }
                let mut points: Vec<&str> = at.iter().filter_map(|c| c.point).collect();
                points.dedup();
                Some(if points.len() <= 3 {
                    let cases: Vec<String> = at
                        .iter()
                        .map(|c| format!("{}@{}", c.point.unwrap_or("?"), c.hit))
                        .collect();
                    format!("{} at {}", inv.key(), cases.join(", "))
                } else {
                    format!(
                        "{} in {} at {}",
                        inv.key(),
                        crate::out::plural(at.len(), "case", "cases"),
                        crate::out::plural(points.len(), "point", "points")
                    )
                })
            })
            .collect();
        match prediction(*variant) {
            None => {
                if broken.is_empty() {
                    findings.push(format!(
                        "{}: every invariant holds at every reached point",
                        variant.name()
                    ));
                } else {
                    differences.push(format!("{} breaks: {}", variant.name(), broken.join("; ")));
                }
            }
            Some(p) => {
                let at_point: Vec<String> = mine
                    .iter()
                    .filter(|c| {
                        c.point == Some(p.point) && c.invariants.get(p.invariant) == Some(false)
                    })
                    .map(|c| format!("@{}", c.hit))
                    .collect();
                if at_point.is_empty() {
                    let why = if points.contains(&p.point) {
                        "not observed"
                    } else {
                        "not explored (--points leaves the point out)"
                    };
                    differences.push(format!(
                        "{}: the predicted {} ({} broken at {}) was {why}",
                        p.variant,
                        p.says,
                        p.invariant.key(),
                        p.point
                    ));
                } else {
                    findings.push(format!(
                        "{}: predicted {} shown: {} breaks at {} {}; in all: {}",
                        p.variant,
                        p.says,
                        p.invariant.key(),
                        p.point,
                        at_point.join(" "),
                        broken.join("; ")
                    ));
                }
            }
        }
    }
    (differences, findings)
}

/// The cases that say nothing (an error) or whose crash was not proven: each is a difference.
pub fn unproven(cases: &[CaseResult]) -> Vec<String> {
    let mut differences = Vec::new();
    for c in cases {
        let at = format!("{} at {}@{}", c.variant, c.point.unwrap_or("?"), c.hit);
        match c.status {
            Status::Error => differences.push(format!("{at}: error: {}", c.problems.join("; "))),
            Status::NotReached if !c.problems.is_empty() => {
                differences.push(format!("{at}: {}", c.problems.join("; ")))
            }
            Status::Breaks if c.invariants.reached == Some(false) => differences.push(format!(
                "{at}: the crash was not proven: {}",
                c.problems.join("; ")
            )),
            _ => {}
        }
    }
    differences
}
