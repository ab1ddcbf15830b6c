//! What a power cut takes back, decided from the undo log alone (pure: no file is read).
//!
//! The model, per file generation (a path between its create and its unlink): a write or
//! truncate made after the generation's last sync is unsynced; a create or unlink made after
//! the last sync of its directory is unsynced. The cut style decides which unsynced acts
//! survive. Walking an act list backwards, a dropped act is undone by putting back the old
//! bytes it recorded, and a surviving act "settles" its byte range: older acts no longer
//! touch it. So a range ends up holding what the newest surviving act wrote, or, when none
//! survived, what it held at the last sync.

use std::collections::HashMap;

use crate::power::states::Fate;
use crate::power::undo::{Log, Op, Span};
use crate::rng::SplitMix64;

use super::ranges::Ranges;

/// The sector a torn write is torn at: the unit that survives or not on its own.
pub const SECTOR_BYTES: u64 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Survival<'a> {
    /// Nothing unsynced survives (a file system that lost its whole page cache).
    Drop,
    /// Each unsynced sector-sized piece survives on its own seeded coin (test6's torn writes).
    Torn { seed: u64 },
    /// Unsynced acts survive in the order they were issued, up to record index `at`.
    Prefix { at: usize },
    /// Each act's fate given, by record index (`--cut exhaustive`: one state of
    /// `power::states`); a torn write keeps its first sectors.
    Chosen(&'a [Fate]),
}

impl Survival<'_> {
    /// Whether sector `sector` (absolute; `u64::MAX` for a create or unlink) of the act at
    /// record `index`, whose first sector is `first`, survives.
    fn survives(self, index: usize, first: u64, sector: u64) -> bool {
        match self {
            Survival::Drop => false,
            Survival::Prefix { at } => index < at,
            Survival::Torn { seed } => {
                // A coin per (record, sector), from the seed alone: order of asking is free.
                let mix = seed
                    ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ sector.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
                SplitMix64::new(mix).next_u64() & 1 == 1
            }
            Survival::Chosen(fates) => match fates[index] {
                Fate::Kept => true,
                Fate::Dropped => false,
                Fate::Torn(kept) => sector.saturating_sub(first) < u64::from(kept),
            },
        }
    }

    /// Whether the act at record `index` survives sector by sector.
    fn tears(self, index: usize) -> bool {
        match self {
            Survival::Torn { .. } => true,
            Survival::Chosen(fates) => matches!(fates[index], Fate::Torn(_)),
            Survival::Drop | Survival::Prefix { .. } => false,
        }
    }
}

/// Bytes to put back at `offset`: from the log (old bytes) or zeros (past the old end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Log(Span),
    Zeros(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    pub offset: u64,
    pub source: Source,
}

/// Where a surviving file's content starts from before the restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The file as it is on disk now.
    Current,
    /// An unlinked file brought back from the stash (a path index of the log): its content
    /// when it was unlinked.
    Unlinked(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The path ends up absent: a create whose directory entry was never made durable.
    Remove,
    /// The path ends up holding a file: restores applied newest first, then the size set.
    Keep {
        start: Start,
        restores: Vec<Restore>,
        size: Option<u64>,
        dropped_acts: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    pub path: String,
    pub action: Action,
    /// Creates and unlinks of this path that the cut undid, oldest first ("create", "unlink").
    pub undone: Vec<&'static str>,
}

#[derive(Debug, Default)]
struct Generation {
    path: u32,
    acts: Vec<usize>,
    last_sync: Option<usize>,
    unlinked: Option<usize>,
}

/// The log read as generations, names and directory syncs.
pub struct Analysis<'a> {
    gens: Vec<Generation>,
    /// Per path, its live generation at the end of the log.
    live: HashMap<u32, usize>,
    /// Per directory, the index of its last sync.
    dir_synced: HashMap<&'a str, usize>,
    /// Per path: its creates and unlinks with the generation each belongs to.
    names: HashMap<u32, Vec<(usize, usize)>>,
}

/// Read the records after the log's last cut marker.
pub fn analyze(log: &Log) -> Analysis<'_> {
    let mut a = Analysis {
        gens: Vec::new(),
        live: HashMap::new(),
        dir_synced: HashMap::new(),
        names: HashMap::new(),
    };
    for (i, r) in log.records.iter().enumerate().skip(first_live(log)) {
        match r.op {
            Op::Create => {
                a.gens.push(Generation {
                    path: r.path,
                    ..Generation::default()
                });
                a.live.insert(r.path, a.gens.len() - 1);
                a.names
                    .entry(r.path)
                    .or_default()
                    .push((i, a.gens.len() - 1));
            }
            Op::Write { .. } | Op::Truncate { .. } => {
                let g = current(&mut a.gens, &mut a.live, r.path);
                a.gens[g].acts.push(i);
            }
            Op::Sync => {
                let g = current(&mut a.gens, &mut a.live, r.path);
                a.gens[g].last_sync = Some(i);
            }
            Op::Unlink { .. } => {
                let g = current(&mut a.gens, &mut a.live, r.path);
                a.gens[g].unlinked = Some(i);
                a.live.remove(&r.path);
                a.names.entry(r.path).or_default().push((i, g));
            }
            Op::DirSync => {
                a.dir_synced.insert(log.path(r), i);
            }
            Op::Cut => unreachable!("records after the last cut marker hold none"),
        }
    }
    a
}

impl Analysis<'_> {
    /// The indices of every unsynced act (write, truncate, create, unlink), in issue order.
    pub fn unsynced(&self, log: &Log) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for g in &self.gens {
            out.extend(
                g.acts
                    .iter()
                    .filter(|&&i| g.last_sync.is_none_or(|s| i > s)),
            );
        }
        for (&path, ops) in &self.names {
            let synced_at = self.dir_synced.get(parent(&log.paths[path as usize]));
            out.extend(
                ops.iter()
                    .map(|&(i, _)| i)
                    .filter(|&i| synced_at.is_none_or(|&s| i > s)),
            );
        }
        out.sort_unstable();
        out
    }
}

/// The plan of a cut over the records after the log's last cut marker.
pub fn plan(log: &Log, survival: Survival) -> Vec<FilePlan> {
    let Analysis {
        gens,
        live,
        dir_synced,
        names,
    } = analyze(log);
    let mut paths: Vec<u32> = gens.iter().map(|g| g.path).collect();
    paths.sort_unstable();
    paths.dedup();
    let mut plans = Vec::new();
    for path in paths {
        let name = &log.paths[path as usize];
        let synced_at = dir_synced.get(parent(name)).copied();
        // The name: walk its unsynced creates and unlinks backwards until one survives.
        let mut present: Option<Option<usize>> = None; // None = as now; Some(None) = absent
        let mut undone = Vec::new();
        for &(i, g) in names
            .get(&path)
            .map_or(&[][..], |v| v.as_slice())
            .iter()
            .rev()
        {
            if synced_at.is_some_and(|s| i < s) || survival.survives(i, 0, u64::MAX) {
                break;
            }
            match log.records[i].op {
                Op::Create => {
                    present = Some(None);
                    undone.push("create");
                }
                _ => {
                    present = Some(Some(g));
                    undone.push("unlink");
                }
            }
        }
        undone.reverse();
        let (generation, start) = match present {
            None => match live.get(&path) {
                Some(&g) => (g, Start::Current),
                None if undone.is_empty() => continue,
                None => unreachable!("an undone act leaves the name decided"),
            },
            Some(None) => {
                plans.push(FilePlan {
                    path: name.clone(),
                    action: Action::Remove,
                    undone,
                });
                continue;
            }
            Some(Some(g)) => {
                let at = gens[g]
                    .unlinked
                    .expect("an undone unlink belongs to its generation");
                let stash = log.records[at]
                    .stash
                    .expect("an unlink of a file has its stash");
                (g, Start::Unlinked(stash))
            }
        };
        let (restores, size, dropped_acts) = content(log, &gens[generation], survival);
        if restores.is_empty() && size.is_none() && undone.is_empty() {
            continue;
        }
        plans.push(FilePlan {
            path: name.clone(),
            action: Action::Keep {
                start,
                restores,
                size,
                dropped_acts,
            },
            undone,
        });
    }
    plans
}

/// The live generation of `path`, begun now when the log had none (a file that existed
/// before the log started).
fn current(gens: &mut Vec<Generation>, live: &mut HashMap<u32, usize>, path: u32) -> usize {
    *live.entry(path).or_insert_with(|| {
        gens.push(Generation {
            path,
            ..Generation::default()
        });
        gens.len() - 1
    })
}

/// The index of the first record after the last cut marker.
pub fn first_live(log: &Log) -> usize {
    log.records
        .iter()
        .rposition(|r| r.op == Op::Cut)
        .map_or(0, |i| i + 1)
}

/// The directory part of a recorded path ("" for the work directory).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The restores and final size of one generation's unsynced writes and truncates.
fn content(
    log: &Log,
    generation: &Generation,
    survival: Survival,
) -> (Vec<Restore>, Option<u64>, usize) {
    let unsynced: Vec<usize> = generation
        .acts
        .iter()
        .copied()
        .filter(|&i| generation.last_sync.is_none_or(|s| i > s))
        .collect();
    let mut settled = Ranges::default();
    let mut restores = Vec::new();
    let mut size: Option<u64> = None;
    let mut size_decided = false;
    let mut dropped_acts = 0;
    for &i in unsynced.iter().rev() {
        let record = &log.records[i];
        let mut any_dropped = false;
        match record.op {
            Op::Write {
                offset,
                len,
                old_size,
            } => {
                let end = offset + len;
                let torn = survival.tears(i);
                let first = offset / SECTOR_BYTES;
                let last_sector = (end - 1) / SECTOR_BYTES;
                if !size_decided {
                    if survival.survives(i, first, if torn { last_sector } else { 0 }) {
                        size_decided = true;
                        if i != *unsynced.last().expect("non-empty") {
                            size = Some(old_size.max(end));
                        }
                    } else {
                        size = Some(old_size);
                    }
                }
                let mut a = offset;
                while a < end {
                    // A torn write survives sector by sector; the other styles, whole.
                    let b = if torn {
                        ((a / SECTOR_BYTES) + 1) * SECTOR_BYTES
                    } else {
                        end
                    }
                    .min(end);
                    if survival.survives(i, first, if torn { a / SECTOR_BYTES } else { 0 }) {
                        settled.add(a, b);
                    } else {
                        any_dropped = true;
                        let kept_end = offset + len.min(old_size.saturating_sub(offset));
                        for (x, y) in settled.missing(a, b) {
                            push_old(&mut restores, record.payload, offset, kept_end, x, y);
                        }
                    }
                    a = b;
                }
            }
            Op::Truncate { new_size, old_size } => {
                if survival.survives(i, 0, 0) {
                    if !size_decided {
                        size_decided = true;
                        if i != *unsynced.last().expect("non-empty") {
                            size = Some(new_size);
                        }
                    }
                    settled.add(new_size, old_size.max(new_size));
                } else {
                    any_dropped = true;
                    if !size_decided {
                        size = Some(old_size);
                    }
                    for (x, y) in settled.missing(new_size, old_size.max(new_size)) {
                        push_old(&mut restores, record.payload, new_size, old_size, x, y);
                    }
                }
            }
            _ => unreachable!("acts are writes and truncates"),
        }
        dropped_acts += usize::from(any_dropped);
    }
    (restores, size, dropped_acts)
}

/// Put back `[x, y)` of an act whose old bytes for `[base, kept_end)` are `payload`; bytes
/// past `kept_end` were past the file's end then: zeros.
fn push_old(restores: &mut Vec<Restore>, payload: Span, base: u64, kept_end: u64, x: u64, y: u64) {
    if x < kept_end {
        let to = y.min(kept_end);
        restores.push(Restore {
            offset: x,
            source: Source::Log(Span {
                at: payload.at + (x - base),
                len: to - x,
            }),
        });
    }
    if y > kept_end {
        let from = x.max(kept_end);
        restores.push(Restore {
            offset: from,
            source: Source::Zeros(y - from),
        });
    }
}
