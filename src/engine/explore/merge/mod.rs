//! `crashlab merge DIR… --out DIR`: join the shards of one explore matrix (`explore
//! --shard`) into the run a single process would have made: every case's evidence copied as
//! it is, the verdict judged again over all of them, `explore.json`, `explore.md`,
//! `explore.svg`, and `merged.json` naming the shards. The merged directory audits as any
//! explore run's does.

pub mod read;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;

use crate::cli::{Cli, Command};
use crate::engine::evidence;
use crate::engine::explore::{self as explore, export, report, shard, Run};
use crate::fail;

/// `crashlab merge DIR… --out DIR`
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The shards' evidence directories (each written by `explore --shard` or `chaos --shard`)
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The merged run's directory (must not exist)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the merged explore.json (chaos: seeds.json) to stdout instead of the table
    #[arg(long)]
    pub json: bool,
    /// Also write a JUnit XML report: one test case per case (chaos: per seed)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

pub fn command(args: &Args, recorded: Vec<String>) -> Result<i32> {
    if args.dirs.len() > shard::SHARDS_MAX as usize {
        return Err(fail::usage(format!(
            "{} shards given; at most {}",
            args.dirs.len(),
            shard::SHARDS_MAX
        )));
    }
    read::check_out(&args.out, &args.dirs)?;
    let shards = args
        .dirs
        .iter()
        .map(|d| read::read(d))
        .collect::<Result<Vec<_>>>()?;
    let first = &shards[0];
    let cli = Cli::parse_recorded(&first.explore.command).ok();
    let Some(Command::Explore(given)) = cli.map(|c| c.command) else {
        return Err(fail::usage(format!(
            "{}: its recorded command is not an explore command",
            first.name
        )));
    };
    let lab = crate::engine::registry::find_on(&given.lab, given.stack.stack.as_deref())?;
    let plan = explore::plan_of(lab)?;
    let (power, designs) = explore::designs_of(plan, &given)?;
    let points = explore::parse_points(lab, given.points.as_deref())?;
    let cut = given
        .cut
        .filter(|c| *c != crate::power::cut::Style::Exhaustive);
    let nemesis = crate::engine::crash_mode::choose_on(
        given.crash_mode,
        cut,
        given.seed,
        given.stack.server,
    )?;
    let mut command = vec!["crashlab".to_string()];
    command.extend(recorded);
    let root = PathBuf::from(".");
    let run = Run {
        designs: &designs,
        points: &points,
        jobs: shards.iter().map(|s| s.explore.jobs).max().unwrap_or(1),
        root: &root,
        work_fs: first.explore.work_fs.clone(),
        command,
        timeout: Duration::from_millis(given.step_timeout_ms),
        power: &power,
        cut: given.cut,
        session: None,
        server: given.stack.server,
        queue_type: given.stack.queue_type.unwrap_or_default(),
        identity: explore::identity_of(lab, &given),
        shard: None,
    };
    read::check(&shards, &|c| report::identity(&run, c))?;
    if let Some(junit) = &args.junit {
        crate::junit::check_path(junit)?;
    }

    let partial = crate::engine::driver::claim_out(&args.out)?;
    let written = write(lab, plan, nemesis.name(), &run, &shards, &partial);
    let report = match written {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    evidence::publish(&partial, &args.out)?;
    if let Some(junit) = &args.junit {
        export::junit::suite(&report).write(junit)?;
    }
    if args.json {
        crate::say!("{}", export::json::render(&report)?);
    } else {
        crate::out::print(&export::table::render(lab, &report, &args.out));
    }
    Ok(match report.ok {
        true => fail::EXIT_OK,
        false => fail::EXIT_FAILED,
    })
}

/// The merged run into `dir`: the cases' evidence, the verdict, the exports, `merged.json`
/// and the manifest.
fn write(
    lab: &crate::engine::LabStack,
    plan: &dyn crate::engine::explore::plan::ExplorePlan,
    crash_mode: &'static str,
    run: &Run<'_>,
    shards: &[read::Shard],
    dir: &Path,
) -> Result<report::Report> {
    // The probes are the first shard's (every shard ran them; their plans agree).
    let first = &shards[0];
    let probes: Vec<_> = first
        .explore
        .probes
        .iter()
        .map(|p| p.result.clone())
        .collect();
    for p in &probes {
        copy_tree(&first.dir.join(&p.evidence), &dir.join(&p.evidence), 0)?;
    }
    let mut cases = Vec::new();
    for s in shards {
        for c in &s.explore.cases {
            copy_tree(&s.dir.join(&c.evidence), &dir.join(&c.evidence), 0)?;
            cases.push(c.clone());
        }
    }
    // The order a single run gives: designs, then points (the probe first), hits rising.
    let order = |c: &crate::engine::explore::case::CaseResult| {
        let d = run.designs.iter().position(|x| *x == c.variant);
        let p = c.point.map_or(0, |k| {
            1 + run.points.iter().position(|x| *x == k).unwrap_or(0)
        });
        (d, p, c.hit)
    };
    cases.sort_by_key(order);
    // The shards ran at once: the merged run took as long as the slowest.
    let wall_s = shards.iter().map(|s| s.explore.wall_ms).fold(0.0, f64::max) / 1000.0;
    let report = report::conclude(lab, plan, crash_mode, run, probes, cases, wall_s)?;
    report::write(lab, &report, dir)?;
    let merged = serde_json::json!({
        "plan": first.file.plan,
        "probes_from": first.name,
        "shards": shards.iter().map(|s| serde_json::json!({
            "dir": s.name,
            "shard": s.file.shard.to_string(),
            "cases": s.explore.cases.len(),
            "wall_ms": s.explore.wall_ms,
            "command": s.explore.command,
            "manifest_sha256": s.manifest_sha256,
        })).collect::<Vec<_>>(),
    });
    evidence::write_json(dir, crate::engine::audit::MERGED, &merged)?;
    evidence::write_manifest(dir)?;
    Ok(report)
}

/// Copy a case's evidence directory; evidence is a few levels deep, plain files only.
pub fn copy_tree(from: &Path, to: &Path, depth: usize) -> Result<()> {
    anyhow::ensure!(
        depth <= 8,
        "{} is nested too deep to be evidence",
        from.display()
    );
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let entries = std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, depth + 1)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        } else {
            anyhow::bail!(
                "{} is neither a file nor a directory",
                entry.path().display()
            );
        }
    }
    Ok(())
}
