//! `crashlab explore`: move the crash point everywhere. For every design of a lab (its
//! explore plan names them and what each predicts), a probe run counts how often each point is
//! reached; then every point at every hit `@N` (up to a bound) is a case run from empty files
//! as real processes, recovered to quiescence and checked end to end, in the lab's invariants
//! and in Jepsen's anomalies. One verdict rule for every lab (`verdict`). The matrix (points ×
//! invariants) goes to stdout, `explore.json`, `explore.md` and `explore.svg`; each case's
//! processes, outputs and events under `cases/`.
//!
//! The engine owns the loop; a lab gives an `ExplorePlan` (`plan`) through `Lab::explore`.

pub mod case;
pub mod export;
pub mod invariant;
mod judged;
pub mod merge;
pub mod plan;
mod power;
pub mod report;
pub mod run;
mod server_kill;
pub mod shard;
pub mod states;
pub mod steps;
pub mod verdict;
#[cfg(test)]
mod verdict_tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;

use crate::engine::crash_mode::{self, CrashMode};
use crate::engine::driver;
use crate::engine::LabStack;
use crate::fail;
use crate::power::cut::Style;
use plan::ExplorePlan;
use report::Report;

/// `crashlab explore LAB …`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The lab to explore: its number or its name (see `crashlab points`), or a lab file
    /// (crashlab.toml; docs/own-system.md)
    pub lab: String,
    /// Designs to explore: `all`, or names separated by commas (lab 14's variants: correct,
    /// mark-before-send, memory-inbox, split-inbox-tx, ack-before-apply; lab 13's modes:
    /// keyed, unkeyed, unkeyed-hold)
    #[arg(long, default_value = "all", value_name = "all|NAME,...")]
    pub variants: String,
    /// Only these points: names or phases separated by commas (default: every point)
    #[arg(long, value_name = "POINT|PHASE,...")]
    pub points: Option<String>,
    /// How the crash stops the process (`hang` waits for --step-timeout-ms in every case:
    /// give it a short one); power-loss: --variants names store profiles, every case is a
    /// power cut (docs/power-loss.md)
    #[arg(long, value_enum, default_value_t = CrashMode::Exit)]
    pub crash_mode: CrashMode,
    /// With --crash-mode power-loss: only this cut style (default: drop, torn and prefix;
    /// exhaustive: every state each cut may leave, recovered and judged)
    #[arg(long, value_enum)]
    pub cut: Option<Style>,
    /// With --crash-mode power-loss: the seed of every cut (exhaustive: of the order of the
    /// states past --max-states)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// With --cut exhaustive: the most states run per crash point (default 4096); a point
    /// with more is explored to the bound in a seeded order and reported bounded
    #[arg(long, value_name = "N")]
    pub max_states: Option<usize>,
    /// Cases run at once (default: the number of cores; for a lab file, 1)
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print explore.json to stdout (one JSON document) instead of the table
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
    /// Run only bucket K of N of the matrix: hash (by each case's identity: adding a design
    /// moves no other case) or count (round-robin, even sizes); `crashlab merge` joins the
    /// shards (docs/running-in-ci.md)
    #[arg(long, value_name = "hash:K/N|count:K/N", value_parser = shard::parse)]
    pub shard: Option<shard::Shard>,
    /// Also write a JUnit XML report: one test case per case, failed where it differs
    /// from its design's prediction
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    #[command(flatten)]
    pub stack: Box<crate::engine::stack::StackArgs>,
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
            let usable = shm.is_dir() && crate::owner::tempdir_in("probe", shm).is_ok();
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

/// The most cases run at once.
pub const JOBS_MAX: usize = 64;

/// `--jobs N`, refused (exit 2) outside 1 to JOBS_MAX.
pub fn check_jobs(jobs: usize) -> Result<usize> {
    if jobs == 0 || jobs > JOBS_MAX {
        return Err(fail::usage(format!(
            "--jobs {jobs} is out of range (1 to {JOBS_MAX})"
        )));
    }
    Ok(jobs)
}

/// The plan of a lab, or a usage error for a lab without one.
pub fn plan_of(lab: &LabStack) -> Result<&'static dyn ExplorePlan> {
    lab.explore.ok_or_else(|| {
        fail::usage(format!(
            "lab {} ({}) has no explore plan",
            lab.id(),
            lab.slug()
        ))
    })
}

/// `all` or `NAME,NAME`: known names only, each once, in the order of the plan's designs.
pub fn parse_designs(plan: &dyn ExplorePlan, spec: &str) -> Result<Vec<&'static str>> {
    let all = plan.designs();
    if spec == "all" {
        return Ok(all.to_vec());
    }
    let mut chosen = Vec::new();
    for name in spec.split(',').map(str::trim) {
        if name == "all" {
            return Err(fail::usage(format!(
                "'all' stands alone in --variants (it means every variant); got '{spec}'"
            )));
        }
        let Some(design) = all.iter().find(|d| **d == name) else {
            return Err(fail::usage(format!(
                "unknown variant '{name}'; known: all, {}",
                all.join(", ")
            )));
        };
        if !chosen.contains(design) {
            chosen.push(*design);
        }
    }
    Ok(all.iter().copied().filter(|d| chosen.contains(d)).collect())
}

/// The points to explore: every point of the lab, or those named (by name or by phase).
pub fn parse_points(lab: &LabStack, spec: Option<&str>) -> Result<Vec<&'static str>> {
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
                lab.id(),
                all.join(", ")
            )));
        }
        chosen.extend(matched);
    }
    Ok(all.into_iter().filter(|p| chosen.contains(p)).collect())
}

/// `--max-states` belongs to `--cut exhaustive` and is at least 1, at most
/// `states::MAX_STATES_MAX` (one line, exit 2).
fn check_max_states(cut: Option<Style>, max: Option<usize>) -> Result<()> {
    use crate::power::states::MAX_STATES_MAX;
    match (cut, max) {
        (_, None) => Ok(()),
        (Some(Style::Exhaustive), Some(n)) if (1..=MAX_STATES_MAX).contains(&n) => Ok(()),
        (Some(Style::Exhaustive), Some(n)) => Err(fail::usage(format!(
            "--max-states {n} is out of range (1 to {MAX_STATES_MAX})"
        ))),
        (_, Some(_)) => Err(fail::usage(
            "--max-states is for --crash-mode power-loss --cut exhaustive only",
        )),
    }
}

/// The designs `args` asks for, and under power loss what each is (profile, cut).
pub fn designs_of(
    plan: &dyn ExplorePlan,
    args: &Args,
) -> Result<(Vec<steps::PowerDesign>, Vec<&'static str>)> {
    if args.crash_mode != CrashMode::PowerLoss {
        return Ok((Vec::new(), parse_designs(plan, &args.variants)?));
    }
    let power = power::designs(plan, &args.variants, args.cut, args.seed, args.max_states)?;
    let designs = power.iter().map(|d| d.name).collect();
    Ok((power, designs))
}

/// What every case's identity line shares in a run of `args`.
pub fn identity_of(lab: &LabStack, args: &Args) -> shard::Plan {
    shard::Plan {
        lab: lab.full_name(),
        stack: lab.stack_name(),
        crash_mode: args.crash_mode.name(),
        cut: args.cut.map_or("-".to_string(), |c| c.name().to_string()),
        seed: args.seed.map_or("-".to_string(), |s| s.to_string()),
    }
}

/// What `command` resolved from the arguments.
pub struct Run<'a> {
    pub designs: &'a [&'static str],
    pub points: &'a [&'static str],
    pub jobs: usize,
    pub root: &'a Path,
    pub work_fs: String,
    pub command: Vec<String>,
    pub timeout: Duration,
    /// Under power loss: what each design is (profile, cut).
    pub power: &'a [steps::PowerDesign],
    /// Under power loss: the one cut style asked for, if any.
    pub cut: Option<Style>,
    /// A lab on servers: the run's servers.
    pub session: Option<&'a crate::engine::fleet::Session>,
    /// Under server kills: the server killed at every armed point.
    pub server: Option<crate::engine::stack::Server>,
    /// A lab on a broker: its queues' type (server-kill predictions may differ by it).
    pub queue_type: crate::engine::stack::QueueType,
    /// What every case's identity shares, and the bucket this run keeps (`--shard`).
    pub identity: shard::Plan,
    pub shard: Option<shard::Shard>,
}

pub fn command(args: &Args, recorded: Vec<String>) -> Result<i32> {
    let lab = crate::engine::registry::find_on(&args.lab, args.stack.stack.as_deref())?;
    crash_mode::supported(lab, args.crash_mode)?;
    let plan = plan_of(lab)?;
    crash_mode::check_cut_flags(args.crash_mode, args.cut, args.seed)?;
    check_max_states(args.cut, args.max_states)?;
    let (power, designs) = designs_of(plan, args)?;
    let points = parse_points(lab, args.points.as_deref())?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = check_jobs(args.jobs.unwrap_or(cores.min(JOBS_MAX)))?;
    if args.step_timeout_ms == 0 || args.step_timeout_ms > driver::STEP_TIMEOUT_MS_MAX {
        return Err(fail::usage(format!(
            "--step-timeout-ms {} is out of range (1 to {})",
            args.step_timeout_ms,
            driver::STEP_TIMEOUT_MS_MAX
        )));
    }
    // The run-wide nemesis makes one cut per case; an exhaustive design forks at it instead.
    let cut = args.cut.filter(|c| *c != Style::Exhaustive);
    let nemesis = crash_mode::choose_on(args.crash_mode, cut, args.seed, args.stack.server)?;
    crate::engine::fleet::check(lab, &args.stack)?;
    if let Some(server) = args.stack.server {
        crate::engine::fleet::check_kill(lab, &args.stack, server)?;
    }
    // A server kill stops every case on that server: cases that kill one run one at a
    // time, as do a plan's whose cases see each other on one server.
    let jobs = match server_kill::serial(plan, nemesis) {
        true => 1,
        false => jobs,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("target").join("lab").join(format!(
            "{}-explore-{}",
            lab.full_name(),
            driver::utc_stamp()
        ))
    });
    let (root, work_fs) = work_root(args.work_dir.as_deref())?;
    if let Some(junit) = &args.junit {
        crate::junit::check_path(junit)?;
    }
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let partial = driver::claim_out(&out)?;
    let session = match crate::engine::fleet::Session::start(lab, &args.stack) {
        Ok(session) => session,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    let mut command = vec!["crashlab".to_string()];
    command.extend(recorded);
    let run = Run {
        designs: &designs,
        points: &points,
        jobs,
        root: &root,
        work_fs,
        command,
        timeout: Duration::from_millis(args.step_timeout_ms),
        power: &power,
        cut: args.cut,
        session: session.as_ref(),
        server: args.stack.server,
        queue_type: args.stack.queue_type.unwrap_or_default(),
        identity: identity_of(lab, args),
        shard: args.shard,
    };
    let result = report::explore(lab, plan, nemesis, &run, &partial);
    let result = match (result, session) {
        (Ok(report), Some(session)) => session.finish().map(|()| report),
        (result, _) => result,
    };
    // SIGINT or SIGTERM: every case's children were killed and its work directory removed
    // as the run unwound; what it wrote goes too (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::engine::process::interrupted(signal, Some(&partial)));
    }
    let report: Report = match result {
        Ok(report) => report,
        Err(e) => {
            return Err(e.context(format!(
                "explore stopped; what it wrote is in {}",
                partial.display()
            )))
        }
    };
    crate::engine::evidence::publish(&partial, &out)?;
    if let Some(junit) = &args.junit {
        export::junit::suite(&report).write(junit)?;
    }
    if args.json {
        // One JSON document on stdout, the content of explore.json; nothing else.
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
