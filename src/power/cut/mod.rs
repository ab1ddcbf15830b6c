//! The power cut: apply the undo log to a run's work directory as a rebooted machine would
//! find it, then mark the log so the next cut starts from here.
//!
//! Every path is checked before anything changes (relative, inside the work directory, no
//! symlink on the way): a log that names anything else is refused whole, one line, exit 2.

pub mod derive;
pub mod image;
mod plan;
mod ranges;
pub mod record;
#[cfg(test)]
mod tests;
mod write;

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use write::{mark, restore};
pub use write::{shm_names, FileCut};

pub use plan::{
    analyze, first_live, plan, Action, FilePlan, Restore, Source, Start, Survival, SECTOR_BYTES,
};

use crate::fail;
use crate::power::undo;
use crate::power::LOG_NAME;
use crate::rng::SplitMix64;

/// How unsynced writes fare in the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    /// Everything unsynced is lost (LazyFS's clear-cache).
    Drop,
    /// A seeded subset of unsynced sector-sized pieces survives (SQLite's test6).
    Torn,
    /// Unsynced writes survive in issue order up to a seeded cut.
    Prefix,
    /// Every state a cut may leave, each recovered and judged (explore only; --max-states)
    Exhaustive,
}

/// The styles of one seeded cut each: explore's default set under power loss.
pub const STYLES: &[Style] = &[Style::Drop, Style::Torn, Style::Prefix];

impl Style {
    pub fn name(self) -> &'static str {
        match self {
            Style::Drop => "drop",
            Style::Torn => "torn",
            Style::Prefix => "prefix",
            Style::Exhaustive => "exhaustive",
        }
    }

    /// A style by name (`--cut NAME`); an unknown one is one line, exit 2.
    pub fn parse(name: &str) -> Result<Style> {
        STYLES
            .iter()
            .copied()
            .chain([Style::Exhaustive])
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                fail::usage(format!(
                    "unknown cut style '{name}'; known: drop, torn, prefix, exhaustive"
                ))
            })
    }
}

/// What one cut did, for the evidence.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub cut: Style,
    pub seed: u64,
    /// For `prefix`: the record index the surviving prefix ends before.
    pub prefix_at: Option<usize>,
    /// Records considered (after the previous cut), the unsynced acts among them, and the
    /// bytes of a torn last record.
    pub records: usize,
    /// The index in the run's undo log of the first record considered (`prefix_at` and the
    /// torn cut's coins count from the log's start).
    pub first_record: usize,
    pub unsynced: usize,
    pub torn_tail_bytes: u64,
    pub files: Vec<FileCut>,
    /// `-shm` files removed: shared memory does not survive a power cut.
    pub shm_removed: Vec<String>,
    /// The undo log's records the cut read, without their old bytes: what the audit
    /// derives the cut from (`record`).
    pub log: record::Record,
}

/// Apply a cut of `style` seeded by `seed` to `work_dir` from the undo log at `log_path`.
pub fn apply(work_dir: &Path, log_path: &Path, style: Style, seed: u64) -> Result<Summary> {
    let root = work_dir.canonicalize().map_err(|e| {
        fail::usage(format!(
            "work directory {} cannot be resolved: {e}",
            work_dir.display()
        ))
    })?;
    let log = undo::read(log_path)?;
    let from = plan::first_live(&log);
    let unsynced = plan::analyze(&log).unsynced(&log);
    let survival = seeded(style, seed, &unsynced, log.records.len())?;
    let plans = plan::plan(&log, survival);
    // Every target is checked before the first change: a refused log changes nothing.
    let mut targets = Vec::with_capacity(plans.len());
    for p in &plans {
        targets.push(target(&root, &p.path, log_path)?);
    }
    let stash_dir = root.join(undo::STASH_DIR);
    if stash_dir.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
        return Err(fail::usage(format!(
            "{} in the work directory is not a directory; nothing was cut",
            undo::STASH_DIR
        )));
    }
    let source =
        File::open(log_path).with_context(|| format!("opening undo log {}", log_path.display()))?;
    let mut files = Vec::with_capacity(plans.len());
    for (p, path) in plans.iter().zip(&targets) {
        files.push(cut_file(p, path, &source, &root, &log.paths)?);
    }
    let mut shm_removed = Vec::new();
    for shm in shm_names(&log) {
        let path = target(&root, &shm, log_path)?;
        match std::fs::remove_file(&path) {
            Ok(()) => shm_removed.push(shm),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    }
    // Every stashed file before the marker is now either back or gone for good.
    match std::fs::remove_dir_all(root.join(undo::STASH_DIR)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).context("removing the stash of unlinked files"),
    }
    mark(log_path, &log)?;
    Ok(Summary {
        cut: style,
        seed,
        prefix_at: match survival {
            Survival::Prefix { at } => Some(at),
            _ => None,
        },
        records: log.records.len() - from,
        first_record: from,
        unsynced: unsynced.len(),
        torn_tail_bytes: log.torn_bytes,
        files,
        shm_removed,
        log: record::of(&log),
    })
}

/// The survival of a seeded cut of `style` over a log of `records` records whose unsynced
/// acts are `unsynced` (record indices, in issue order). Exhaustive is no single cut.
pub fn seeded(
    style: Style,
    seed: u64,
    unsynced: &[usize],
    records: usize,
) -> Result<Survival<'static>> {
    Ok(match style {
        Style::Drop => Survival::Drop,
        Style::Torn => Survival::Torn { seed },
        Style::Prefix => {
            // How many unsynced acts survive, 0 to all of them, uniform.
            let kept = SplitMix64::new(seed).range(0, unsynced.len() as u64) as usize;
            Survival::Prefix {
                at: unsynced.get(kept).copied().unwrap_or(records),
            }
        }
        Style::Exhaustive => {
            return Err(fail::usage(
                "--cut exhaustive enumerates every state of a crash point: explore runs them (crashlab explore LAB --crash-mode power-loss --cut exhaustive)",
            ))
        }
    })
}

/// The file a recorded path names, refused unless it is a plain path inside `root` that is
/// not the undo log and has no symlink in its directories or as itself.
fn target(root: &Path, path: &str, log_path: &Path) -> Result<PathBuf> {
    let refuse = |why: &str| {
        fail::usage(format!(
            "undo log {} names '{path}', {why}; nothing was cut",
            log_path.display()
        ))
    };
    if path.is_empty() || !undo::path_ok(path) {
        return Err(refuse("which is outside the work directory"));
    }
    if path == LOG_NAME || path.starts_with(undo::STASH_DIR) {
        return Err(refuse("which is the undo log or its stash"));
    }
    let full = root.join(path);
    let dir = full.parent().expect("a joined path has a parent");
    match dir.canonicalize() {
        Ok(real) if real.starts_with(root) => {}
        Ok(_) => return Err(refuse("whose directory leads outside the work directory")),
        Err(_) => return Err(refuse("whose directory does not exist")),
    }
    if full
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(refuse("which is a symbolic link"));
    }
    Ok(full)
}

fn cut_file(
    p: &FilePlan,
    path: &Path,
    log: &File,
    root: &Path,
    stashes: &[String],
) -> Result<FileCut> {
    let shown = path.display();
    let size_before = std::fs::metadata(path).ok().map(|m| m.len());
    let mut done = FileCut::begun(p, size_before);
    let Action::Keep {
        start,
        restores,
        size,
        dropped_acts,
    } = &p.action
    else {
        if size_before.is_some() {
            std::fs::remove_file(path).with_context(|| format!("removing {shown}"))?;
        }
        done.action = "removed";
        return Ok(done);
    };
    done.dropped_writes = *dropped_acts;
    let file = match start {
        Start::Current if size_before.is_none() => {
            // Nothing on disk to roll back (removed after the log's last word about it).
            done.action = "missing";
            return Ok(done);
        }
        Start::Current => OpenOptions::new().read(true).write(true).open(path),
        Start::Unlinked(stash) => {
            // The stash holds the unlinked file itself (a hard link): move it back.
            let from = root.join(&stashes[*stash as usize]);
            std::fs::rename(&from, path)
                .with_context(|| format!("restoring {shown} from {}", from.display()))?;
            done.action = "restored";
            OpenOptions::new().read(true).write(true).open(path)
        }
    }
    .with_context(|| format!("opening {shown} for the cut"))?;
    let mut file = file;
    done.dropped_ranges =
        restore(restores, *size, log, &mut file).with_context(|| format!("writing {shown}"))?;
    done.size_after = Some(file.metadata()?.len());
    Ok(done)
}
