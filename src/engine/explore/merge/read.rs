//! The shards `merge` reads, and each reason it refuses them: a shard that does not audit
//! PASS, shards of different plans, a case in two shards, a case in none. Each refusal is one
//! line and exit 2, before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::engine::explore::case::CaseResult;
use crate::engine::explore::report::Probe;
use crate::engine::explore::shard::{self, ShardFile, SHARD};
use crate::fail;

/// The largest `explore.json` merge reads (a full power-loss matrix is a few MB).
const EXPLORE_BYTES_MAX: u64 = 256 << 20;

/// What merge needs of a shard's `explore.json`.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "'de: 'static"))]
pub struct Explore {
    pub command: Vec<String>,
    pub jobs: usize,
    pub work_fs: String,
    pub wall_ms: f64,
    pub probes: Vec<Probe>,
    pub cases: Vec<CaseResult>,
}

/// One shard, read and audited.
pub struct Shard {
    pub dir: PathBuf,
    /// The directory as evidence records it (no machine path).
    pub name: String,
    pub file: ShardFile,
    pub explore: Explore,
    pub manifest_sha256: String,
}

/// A shard of either kind, audited: its recorded name, `shard.json`, and its manifest's
/// hash.
pub struct Opened {
    pub name: String,
    pub file: ShardFile,
    pub manifest_sha256: String,
}

/// Open one shard: it must be a directory with `shard.json` and audit PASS.
pub fn open(dir: &Path) -> Result<Opened> {
    let name = crate::engine::evidence::recorded_path(dir);
    if !dir.is_dir() {
        return Err(fail::usage(format!("{name} is not a directory")));
    }
    if !dir.join(SHARD).is_file() {
        return Err(fail::usage(format!(
            "{name} is not a shard (no {SHARD}: explore and chaos write one with --shard)"
        )));
    }
    let audit = crate::engine::audit::audit(dir, false);
    if !audit.ok {
        let first = audit.problems.first().map_or(String::new(), |p| {
            format!("; first: {}: {}", p.file, p.problem)
        });
        return Err(fail::usage(format!(
            "{name} does not audit PASS ({}{first}); merge joins only shards that do",
            crate::out::plural(audit.problems.len(), "problem", "problems")
        )));
    }
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        fail::usage(format!("{name}/{what} cannot be read as a shard's: {e}"))
    };
    let file: ShardFile = std::fs::read(dir.join(SHARD))
        .map_err(anyhow::Error::from)
        .and_then(|b| Ok(serde_json::from_slice(&b)?))
        .map_err(|e| bad(SHARD, &e))?;
    let manifest = std::fs::read(dir.join(crate::engine::evidence::MANIFEST))
        .map_err(|e| bad(crate::engine::evidence::MANIFEST, &e))?;
    Ok(Opened {
        name,
        file,
        manifest_sha256: crate::common::sha256_hex(&manifest),
    })
}

/// Read one explore shard: it must open as a shard and hold `explore.json`.
pub fn read(dir: &Path) -> Result<Shard> {
    let Opened {
        name,
        file,
        manifest_sha256,
    } = open(dir)?;
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        fail::usage(format!("{name}/{what} cannot be read as a shard's: {e}"))
    };
    let path = dir.join("explore.json");
    let size = std::fs::metadata(&path)
        .map_err(|e| bad("explore.json", &e))?
        .len();
    if size > EXPLORE_BYTES_MAX {
        return Err(bad(
            "explore.json",
            &format!("{size} bytes, more than {EXPLORE_BYTES_MAX}"),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| bad("explore.json", &e))?;
    // The names in a case borrow from its document, which lives until the process ends:
    // merge reads each shard once.
    let text: &'static str = Box::leak(text.into_boxed_str());
    let explore: Explore = serde_json::from_str(text).map_err(|e| bad("explore.json", &e))?;
    // Merge copies each case's evidence from the path explore.json gives: a path other than
    // the case's own directory (`../x`, `/x`) would copy from, and write to, outside the runs.
    let results = explore.probes.iter().map(|p| &p.result);
    if let Some(c) = results
        .chain(&explore.cases)
        .find(|c| c.evidence != c.evidence_dir() || !crate::engine::audit::tree::plain(&c.evidence))
    {
        return Err(bad(
            "explore.json",
            &format!(
                "a case's evidence is at {:?}, not at {:?}",
                c.evidence,
                c.evidence_dir()
            ),
        ));
    }
    Ok(Shard {
        dir: dir.to_path_buf(),
        name,
        file,
        explore,
        manifest_sha256,
    })
}

/// The shards are the buckets of one plan, each case in exactly one: the refusal otherwise.
/// `identity` gives a case's identity line.
pub fn check(shards: &[Shard], identity: &dyn Fn(&CaseResult) -> String) -> Result<()> {
    let ran: Vec<Ran> = shards
        .iter()
        .map(|s| Ran {
            name: &s.name,
            file: &s.file,
            ran: s.explore.cases.iter().map(identity).collect(),
        })
        .collect();
    check_plans(&ran, ("case", "cases"))
}

/// A shard as `check_plans` sees it: its name, `shard.json`, and the identity lines of
/// what its evidence holds (explore's cases, chaos's seeds).
pub struct Ran<'a> {
    pub name: &'a str,
    pub file: &'a ShardFile,
    pub ran: Vec<String>,
}

/// The shards are the buckets of one plan, each case (or seed) in exactly one: the refusal
/// otherwise, naming them by `noun` (singular, plural).
pub fn check_plans(shards: &[Ran<'_>], noun: (&str, &str)) -> Result<()> {
    let (one, many) = noun;
    let first = &shards[0];
    let plan = &first.file.plan;
    for s in shards {
        let other = &s.file.plan;
        let why = if other.fingerprint != plan.fingerprint {
            let short = |f: &str| f.get(..12).unwrap_or("?").to_string();
            Some(format!(
                "fingerprint {} vs {}",
                short(&plan.fingerprint),
                short(&other.fingerprint)
            ))
        } else if other.crashlab_version != plan.crashlab_version {
            Some(format!(
                "crashlab {} vs {}",
                plan.crashlab_version, other.crashlab_version
            ))
        } else if other.lab != plan.lab {
            Some("the lab's value differs".to_string())
        } else if other.cases != plan.cases || shard::fingerprint(&other.cases) != other.fingerprint
        {
            Some(format!("its {one} list is not its fingerprint's"))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(fail::usage(format!(
                "{} and {} are shards of different plans ({why})",
                first.name, s.name
            )));
        }
    }
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for s in shards {
        if s.ran != s.file.cases {
            return Err(fail::usage(format!(
                "{}: its evidence holds other {many} than the ones {SHARD} names",
                s.name
            )));
        }
        for id in &s.ran {
            if !plan.cases.contains(id) {
                return Err(fail::usage(format!(
                    "{}: {one} '{id}' is not in the plan",
                    s.name
                )));
            }
            if let Some(before) = owner.insert(id.clone(), s.name) {
                return Err(fail::usage(format!(
                    "{one} '{id}' is in two shards: {before} and {}",
                    s.name
                )));
            }
        }
    }
    let missing: Vec<&String> = plan
        .cases
        .iter()
        .filter(|c| !owner.contains_key(*c))
        .collect();
    if let Some(id) = missing.first() {
        return Err(fail::usage(format!(
            "{} of the plan's {} {many} are in no shard given (first: '{id}'); every shard is needed",
            missing.len(),
            plan.cases.len()
        )));
    }
    Ok(())
}

/// The merged run must not land inside one of its shards (writing into what it reads), nor a
/// shard inside it: the refusal otherwise. `out` need not exist yet.
pub fn check_out(out: &Path, dirs: &[PathBuf]) -> Result<()> {
    let out_abs = absolute(out);
    for dir in dirs {
        let dir_abs = absolute(dir);
        if out_abs.starts_with(&dir_abs) || dir_abs.starts_with(&out_abs) {
            return Err(fail::usage(format!(
                "--out {} and the shard {} are nested; the merged run goes beside its shards",
                out.display(),
                crate::engine::evidence::recorded_path(dir)
            )));
        }
    }
    Ok(())
}

/// `path` made absolute, component by component: what exists resolved (symlinks too), what
/// does not yet taken as written, `..` removing the last name either way (`x/../s1` is `s1`
/// even while `x` does not exist: making the output makes `x`, then lands in `s1`).
fn absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut at = std::env::current_dir().unwrap_or_default();
    // Bounded by the path's components: one step each.
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::CurDir => {}
            Component::RootDir => at = PathBuf::from("/"),
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                at.push(name);
                if let Ok(real) = at.canonicalize() {
                    at = real;
                }
            }
        }
    }
    at
}
