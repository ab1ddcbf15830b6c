//! A cut derived again from its record alone, as the audit does: the undo log's records the
//! cut read (`record`), and either its style and seed or one state's fates, give which acts
//! were unsynced and what the cut put back in each file. What cannot follow from the record
//! (a file's size before the cut, whether a `-shm` file was there to remove) is the
//! recorded summary's word.

use super::plan::{analyze, plan, Action, Source, Start};
use super::ranges::Ranges;
use super::record::{to_log, Entry};
use super::write::shm_names;
use super::{seeded, Style, Survival};
use crate::power::states::Fate;

/// How the cut chose what survived.
pub enum How<'a> {
    /// A seeded cut of this style.
    Seeded(Style, u64),
    /// One state of `--cut exhaustive`: a fate per unsynced act, in issue order.
    State(&'a [Fate]),
}

/// What one file went through, as a cut's summary says it (`FileCut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    /// `removed`, `restored`, or `rolled-back` (`missing` when there was nothing on disk is
    /// the summary's word: it depends on the disk).
    pub action: &'static str,
    pub undone: Vec<&'static str>,
    pub dropped_writes: usize,
    pub dropped_ranges: Vec<(u64, u64)>,
    /// The size it set, or None when it left the size as it was.
    pub size: Option<u64>,
}

/// A cut derived from its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    pub records: usize,
    /// The unsynced acts, as indices into the record.
    pub unsynced: Vec<usize>,
    /// For a prefix cut: the record index (in the run's whole log) its prefix ends before.
    pub prefix_at: Option<usize>,
    pub files: Vec<File>,
    /// The `-shm` files the cut may remove.
    pub shm: Vec<String>,
}

/// Derive the cut that read `record`, whose first record was number `first` of the run's
/// undo log. A record that is no undo log, or fates that are not one per unsynced act: why.
pub fn derive(record: &[Entry], first: usize, how: How<'_>) -> Result<Derived, String> {
    if first > crate::power::undo::RECORDS_MAX {
        return Err(format!(
            "first_record {first} is past the bound of an undo log"
        ));
    }
    let mut log = to_log(record)?;
    // The records before the cut read them are cut markers here: indices stay the run's.
    let mut all = vec![
        crate::power::undo::Record {
            op: crate::power::undo::Op::Cut,
            path: 0,
            payload: Default::default(),
            stash: None,
        };
        first
    ];
    if log.paths.is_empty() {
        log.paths.push(String::new());
    }
    all.append(&mut log.records);
    log.records = all;
    let unsynced = analyze(&log).unsynced(&log);
    let fates;
    let survival = match how {
        How::Seeded(style, seed) => {
            seeded(style, seed, &unsynced, log.records.len()).map_err(|e| e.to_string())?
        }
        How::State(state) => {
            if state.len() != unsynced.len() {
                return Err(format!(
                    "{} fates for {} unsynced acts",
                    state.len(),
                    unsynced.len()
                ));
            }
            let mut by_record = vec![Fate::Kept; log.records.len()];
            for (&i, &f) in unsynced.iter().zip(state) {
                by_record[i] = f;
            }
            fates = by_record;
            Survival::Chosen(&fates)
        }
    };
    let files = plan(&log, survival)
        .into_iter()
        .map(|p| {
            let mut file = File {
                path: p.path,
                action: "removed",
                undone: p.undone,
                dropped_writes: 0,
                dropped_ranges: Vec::new(),
                size: None,
            };
            if let Action::Keep {
                start,
                restores,
                size,
                dropped_acts,
            } = p.action
            {
                file.action = match start {
                    Start::Current => "rolled-back",
                    Start::Unlinked(_) => "restored",
                };
                file.dropped_writes = dropped_acts;
                file.size = size;
                let mut ranges = Ranges::default();
                for r in &restores {
                    let len = match r.source {
                        Source::Log(span) => span.len,
                        Source::Zeros(len) => len,
                    };
                    ranges.add(r.offset, r.offset + len);
                }
                file.dropped_ranges = ranges.spans().to_vec();
            }
            file
        })
        .collect();
    Ok(Derived {
        records: record.len(),
        unsynced: unsynced.iter().map(|i| i - first).collect(),
        prefix_at: match survival {
            Survival::Prefix { at } => Some(at),
            _ => None,
        },
        files,
        shm: shm_names(&log),
    })
}
