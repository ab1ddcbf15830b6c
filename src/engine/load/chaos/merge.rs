//! `crashlab merge DIR… --out DIR` of chaos shards (`chaos --runs N --shard hash:K/N`):
//! every seed's evidence copied as it is, `seeds.json` summing what the seeds lost and
//! duplicated, and `merged.json` naming the shards. The merged directory audits as the
//! unsharded study's does. The refusals are explore's (`merge::read`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::seeds::{self, Study, SEEDS};
use crate::engine::evidence;
use crate::engine::explore::merge::{copy_tree, read, Args};
use crate::fail;

/// Whether the first shard given is a chaos study's (explore's merge reads the others).
pub fn is_chaos(args: &Args) -> bool {
    args.dirs.first().is_some_and(|d| d.join(SEEDS).is_file())
}

/// One chaos shard, opened and audited.
struct Shard {
    dir: PathBuf,
    opened: read::Opened,
    study: Study,
}

pub fn command(args: &Args, recorded: Vec<String>) -> Result<i32> {
    let max = crate::engine::explore::shard::SHARDS_MAX as usize;
    if args.dirs.len() > max {
        return Err(fail::usage(format!(
            "{} shards given; at most {max}",
            args.dirs.len()
        )));
    }
    read::check_out(&args.out, &args.dirs)?;
    let mut shards = Vec::new();
    for dir in &args.dirs {
        let opened = read::open(dir)?;
        if !dir.join(SEEDS).is_file() {
            return Err(fail::usage(format!(
                "{} is not a chaos shard (no {SEEDS}); merge joins shards of one kind",
                opened.name
            )));
        }
        let study: Study = std::fs::read(dir.join(SEEDS))
            .map_err(anyhow::Error::from)
            .and_then(|b| Ok(serde_json::from_slice(&b)?))
            .map_err(|e| fail::usage(format!("{}/{SEEDS} cannot be read: {e}", opened.name)))?;
        shards.push(Shard {
            dir: dir.clone(),
            opened,
            study,
        });
    }
    let ran: Vec<read::Ran> = shards
        .iter()
        .map(|s| read::Ran {
            name: &s.opened.name,
            file: &s.opened.file,
            ran: s.study.seeds.iter().map(|x| x.identity.clone()).collect(),
        })
        .collect();
    read::check_plans(&ran, ("seed", "seeds"))?;
    if let Some(junit) = &args.junit {
        crate::junit::check_path(junit)?;
    }
    let partial = crate::engine::driver::claim_out(&args.out)?;
    let mut command = vec!["crashlab".to_string()];
    command.extend(recorded);
    let written = (|| -> Result<Study> {
        let mut all = Vec::new();
        for s in &shards {
            for seed in &s.study.seeds {
                anyhow::ensure!(
                    seed.dir == seeds::dir_of(seed.seed),
                    "{}: seed {} is in '{}'",
                    s.opened.name,
                    seed.seed,
                    seed.dir
                );
                copy_tree(&s.dir.join(&seed.dir), &partial.join(&seed.dir), 0)
                    .with_context(|| format!("copying {}'s seed {}", s.opened.name, seed.seed))?;
                all.push(seed.clone());
            }
        }
        let study = Study::new(shards[0].study.lab.clone(), command.clone(), all);
        evidence::write_json(&partial, SEEDS, &study)?;
        let merged = serde_json::json!({
            "plan": shards[0].opened.file.plan,
            "shards": shards.iter().map(|s| serde_json::json!({
                "dir": s.opened.name,
                "shard": s.opened.file.shard.to_string(),
                "seeds": s.study.seeds.len(),
                "command": s.study.command,
                "manifest_sha256": s.opened.manifest_sha256,
            })).collect::<Vec<_>>(),
        });
        evidence::write_json(&partial, crate::engine::audit::MERGED, &merged)?;
        evidence::write_manifest(&partial)?;
        Ok(study)
    })();
    let study = match written {
        Ok(study) => study,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    evidence::publish(&partial, &args.out)?;
    seeds::finish(&study, args.junit.as_deref(), args.json, &args.out)
}
