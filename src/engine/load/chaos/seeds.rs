//! `crashlab chaos LAB --runs N [--shard hash:K/N] --out DIR`: a chaos study of several
//! seeds. Each seed is an ordinary chaos run whose evidence is `DIR/seed-S/`; `seeds.json`
//! names every seed with what it lost and duplicated, and their sums. A shard runs only
//! the seeds in its bucket (the same FNV-1a hash explore's shards use, of the seed's replay
//! command) and writes `shard.json`; `crashlab merge` joins the shards.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{replay_command, Options};
use crate::engine::explore::shard;
use crate::engine::load::profile::LoadProfile;
use crate::engine::{evidence, LabStack};
use crate::fail;

/// The file a chaos study writes beside its seeds' directories.
pub const SEEDS: &str = "seeds.json";

/// One seed's outcome, as its `chaos.json` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seed {
    pub seed: u64,
    /// Its evidence directory, `seed-S`.
    pub dir: String,
    /// Its replay command: the seed's identity in the plan.
    pub identity: String,
    pub ok: bool,
    pub lost: i64,
    pub duplicated: i64,
    pub wall_ms: f64,
}

/// `seeds.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Study {
    pub lab: String,
    pub command: Vec<String>,
    pub seeds: Vec<Seed>,
    pub lost: i64,
    pub duplicated: i64,
    pub ok: bool,
}

impl Study {
    pub fn new(lab: String, command: Vec<String>, mut seeds: Vec<Seed>) -> Study {
        seeds.sort_by_key(|s| s.seed);
        Study {
            lab,
            command,
            lost: seeds.iter().map(|s| s.lost).sum(),
            duplicated: seeds.iter().map(|s| s.duplicated).sum(),
            ok: seeds.iter().all(|s| s.ok),
            seeds,
        }
    }
}

/// The directory of seed `seed`'s evidence.
pub fn dir_of(seed: u64) -> String {
    format!("seed-{seed}")
}

/// Every seed of the study with its identity line, in order.
fn plan(lab: &LabStack, o: &Options) -> Result<Vec<(u64, String)>> {
    (0..o.runs)
        .map(|i| {
            let seed = o.seed.checked_add(i).ok_or_else(|| {
                fail::usage(format!(
                    "--seed {} --runs {}: past the last seed",
                    o.seed, o.runs
                ))
            })?;
            let one = Options { seed, ..o.clone() };
            Ok((seed, replay_command(lab, &one)))
        })
        .collect()
}

/// The recorded command of one seed's run: the study's, for that seed and its directory
/// `out`.
fn seed_command(command: &[String], seed: u64, out: &str) -> Vec<String> {
    const DROP_VALUE: [&str; 5] = ["--runs", "--shard", "--out", "--junit", "--seed"];
    let mut kept = Vec::new();
    let mut skip = false;
    for arg in command {
        if std::mem::take(&mut skip) {
            continue;
        }
        if DROP_VALUE.contains(&arg.as_str()) {
            skip = true;
        } else if arg != "--json" && !DROP_VALUE.iter().any(|f| arg.starts_with(&format!("{f}="))) {
            kept.push(arg.clone());
        }
    }
    kept.extend(["--seed".to_string(), seed.to_string(), "--out".to_string()]);
    kept.push(out.to_string());
    kept
}

/// Run the study's seeds (the shard's only) into `--out`.
pub fn run(
    lab: &'static LabStack,
    profile: &dyn LoadProfile,
    o: &Options,
    command: Vec<String>,
) -> Result<i32> {
    let Some(out) = o.out.as_ref() else {
        return Err(fail::usage(
            "--runs and --shard need --out DIR: each seed's evidence goes in DIR/seed-S",
        ));
    };
    super::validate(lab, profile, o)?;
    if let Some(junit) = &o.junit {
        crate::junit::check_path(junit)?;
    }
    let all = plan(lab, o)?;
    let mine: Vec<(u64, String)> = match o.shard {
        Some(s) => all
            .iter()
            .enumerate()
            .filter(|(i, (_, id))| s.owns(id, "seeds", *i))
            .map(|(_, x)| x.clone())
            .collect(),
        None => all.clone(),
    };
    // Each seed's run publishes its own directory whole; the study's directory is made
    // first (refused if it exists) and goes again if a seed's run cannot finish.
    if out.exists() {
        return Err(fail::usage(format!(
            "output directory {} already exists; choose a new one (evidence is never overwritten)",
            out.display()
        )));
    }
    std::fs::create_dir(out).with_context(|| format!("creating {}", out.display()))?;
    let written = (|| -> Result<Study> {
        let mut seeds = Vec::new();
        for (seed, identity) in &mine {
            let dir = dir_of(*seed);
            let one = Options {
                seed: *seed,
                runs: 1,
                shard: None,
                json: false,
                quiet: o.json,
                junit: None,
                out: Some(out.join(&dir)),
                ..o.clone()
            };
            let recorded = evidence::recorded_path(&out.join(&dir));
            super::run(lab, profile, &one, seed_command(&command, *seed, &recorded))?;
            let chaos = read_chaos(&out.join(&dir))?;
            seeds.push(Seed {
                seed: *seed,
                dir,
                identity: identity.clone(),
                ok: chaos.ok,
                lost: chaos.lost,
                duplicated: chaos.duplicated,
                wall_ms: chaos.wall_ms,
            });
        }
        let mut full = vec!["crashlab".to_string()];
        full.extend(command.iter().cloned());
        let study = Study::new(lab.full_name(), full, seeds);
        evidence::write_json(out, SEEDS, &study)?;
        if let Some(s) = o.shard {
            let ids = |v: &[(u64, String)]| v.iter().map(|(_, id)| id.clone()).collect();
            shard::write(out, s, lab, ids(&all), ids(&mine))?;
        }
        evidence::write_manifest(out)?;
        Ok(study)
    })();
    let study = match written {
        Ok(study) => study,
        Err(e) => {
            let _ = std::fs::remove_dir_all(out);
            return Err(e);
        }
    };
    finish(&study, o.junit.as_deref(), o.json, out)
}

/// Write the JUnit report, print the study, and give its exit code.
pub fn finish(study: &Study, junit: Option<&Path>, json: bool, out: &Path) -> Result<i32> {
    if let Some(junit) = junit {
        suite(study).write(junit)?;
    }
    if json {
        crate::say!("{}", serde_json::to_string(study)?);
    } else {
        crate::say!(
            "chaos {}: {} seeds, lost {}, duplicated {}: {} (evidence: {})",
            study.lab,
            study.seeds.len(),
            study.lost,
            study.duplicated,
            if study.ok { "PASS" } else { "FAIL" },
            out.display()
        );
    }
    Ok(if study.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

/// What the study reads of a seed's `chaos.json`.
#[derive(Deserialize)]
pub struct Chaos {
    pub ok: bool,
    pub lost: i64,
    pub duplicated: i64,
    pub wall_ms: f64,
}

fn read_chaos(dir: &Path) -> Result<Chaos> {
    let path = dir.join(crate::engine::audit::CHAOS);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))
}

/// One JUnit test case per seed, failed with what it lost or duplicated.
pub fn suite(study: &Study) -> crate::junit::Suite {
    let cases = study
        .seeds
        .iter()
        .map(|s| {
            let outcome = if s.ok {
                crate::junit::Outcome::Passed
            } else {
                let message = if s.lost != 0 || s.duplicated != 0 {
                    format!("lost {}, duplicated {}", s.lost, s.duplicated)
                } else {
                    "the run failed (see its chaos.json)".to_string()
                };
                crate::junit::Outcome::Failed {
                    text: format!("{message}\nreplay: {}", s.identity),
                    message,
                }
            };
            crate::junit::Case {
                name: format!("seed {}", s.seed),
                classname: format!("crashlab.chaos.{}", study.lab),
                time_s: s.wall_ms / 1000.0,
                outcome,
                system_out: s.identity.clone(),
            }
        })
        .collect();
    crate::junit::Suite {
        name: format!("crashlab chaos {}", study.lab),
        time_s: study.seeds.iter().map(|s| s.wall_ms).sum::<f64>() / 1000.0,
        cases,
    }
}
