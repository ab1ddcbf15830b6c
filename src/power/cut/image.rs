//! A cut made on copies in memory, for `--cut exhaustive`: the work directory is read once at
//! the crash (its files and the undo log), then each state's images are built from that
//! capture, hashed (states that leave identical files are one), and written into a fresh work
//! directory to be recovered from. The files on disk are never cut in place but once, for
//! the state the case itself goes on with (`install`).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::plan::{self, Action, Start, Survival, SECTOR_BYTES};
use super::record;
use super::write::{mark, restore, shm_names, FileCut};
use crate::fail;
use crate::power::states::{Act, Fate};
use crate::power::undo::{self, Log, Op};
use crate::power::LOG_NAME;

/// The most bytes a capture holds (files and undo log): a lab's work directory is a few MB.
pub const CAPTURE_BYTES_MAX: u64 = 1 << 30;

/// The work directory at the crash, before any cut.
pub struct Crashed {
    log: Log,
    /// The undo log's bytes: the old bytes every restore copies.
    bytes: Vec<u8>,
    /// Every plain file of the work directory (not the undo log or its stash), by name.
    files: BTreeMap<String, Vec<u8>>,
    /// The SHA-256 of each of `files`.
    digests: BTreeMap<String, [u8; 32]>,
    /// The stashed unlinked files, by their stash path.
    stash: BTreeMap<String, Vec<u8>>,
    /// The unsynced acts, as record indices in issue order.
    unsynced: Vec<usize>,
}

/// What one state leaves: the files it changes (None: absent) over the capture, and what
/// it did, as a cut's summary says it.
pub struct State {
    pub changed: BTreeMap<String, Option<Vec<u8>>>,
    pub files: Vec<FileCut>,
    pub shm_removed: Vec<String>,
    /// SHA-256 over every file's name and the SHA-256 of its content after the cut.
    pub sha256: String,
}

fn read_bounded(path: &Path, total: &mut u64) -> Result<Vec<u8>> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    *total += bytes.len() as u64;
    if *total > CAPTURE_BYTES_MAX {
        return Err(fail::usage(format!(
            "--cut exhaustive: the work directory holds more than {CAPTURE_BYTES_MAX} bytes at the crash"
        )));
    }
    Ok(bytes)
}

impl Crashed {
    /// Read `work_dir` as the crash left it. A file in a subdirectory the log names, or a
    /// symlink: refused (one line, exit 2); nothing is changed.
    pub fn capture(work_dir: &Path) -> Result<Crashed> {
        let mut total = 0u64;
        let bytes = read_bounded(&work_dir.join(LOG_NAME), &mut total)?;
        let log = undo::parse(&bytes[..], bytes.len() as u64).map_err(|(at, what)| {
            fail::usage(format!(
                "undo log {LOG_NAME} is corrupt at byte {at}: {what}"
            ))
        })?;
        let mut files = BTreeMap::new();
        for entry in fs::read_dir(work_dir).context("listing the work directory")? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if name == LOG_NAME || name == undo::STASH_DIR || kind.is_dir() {
                continue;
            }
            if !kind.is_file() {
                return Err(fail::usage(format!(
                    "--cut exhaustive: {name} in the work directory is not a plain file"
                )));
            }
            files.insert(name, read_bounded(&entry.path(), &mut total)?);
        }
        for r in &log.records[plan::first_live(&log)..] {
            let name = log.path(r);
            if name.contains('/') || name == LOG_NAME || name.starts_with(undo::STASH_DIR) {
                return Err(fail::usage(format!(
                    "--cut exhaustive: the undo log names '{name}', which is no plain file of the work directory"
                )));
            }
        }
        let unsynced = plan::analyze(&log).unsynced(&log);
        // Only an unsynced unlink can be undone: its stash holds the file it took.
        let mut stash = BTreeMap::new();
        for s in unsynced.iter().filter_map(|&i| log.records[i].stash) {
            let name = &log.paths[s as usize];
            let content = read_bounded(&work_dir.join(name), &mut total)?;
            stash.insert(name.clone(), content);
        }
        let digests = files
            .iter()
            .map(|(name, content)| (name.clone(), Sha256::digest(content).into()))
            .collect();
        Ok(Crashed {
            log,
            bytes,
            files,
            digests,
            stash,
            unsynced,
        })
    }

    /// The unsynced acts, for `states::enumerate`: each with its file and the sectors it spans.
    pub fn acts(&self) -> Vec<Act> {
        self.unsynced
            .iter()
            .map(|&i| {
                let r = &self.log.records[i];
                let sectors = match r.op {
                    Op::Write { offset, len, .. } => {
                        (offset + len - 1) / SECTOR_BYTES - offset / SECTOR_BYTES + 1
                    }
                    _ => 0,
                };
                Act {
                    file: r.path,
                    sectors,
                }
            })
            .collect()
    }

    /// The unsynced acts as the evidence names them: `(record index after the last cut,
    /// what, file)`.
    pub fn named_acts(&self) -> Vec<(usize, String, String)> {
        let from = plan::first_live(&self.log);
        let record = record::of(&self.log);
        self.unsynced
            .iter()
            .map(|&i| {
                let e = &record[i - from];
                (i - from, e.op.clone(), e.path.clone())
            })
            .collect()
    }

    /// The undo log's records the states are cut from, for the evidence.
    pub fn record(&self) -> record::Record {
        record::of(&self.log)
    }

    /// The index in the run's undo log of the first record after the last cut marker.
    pub fn first_record(&self) -> usize {
        plan::first_live(&self.log)
    }

    /// Records after the last cut marker.
    pub fn records(&self) -> usize {
        self.log.records.len() - plan::first_live(&self.log)
    }

    pub fn torn_tail_bytes(&self) -> u64 {
        self.log.torn_bytes
    }

    /// One fate per record (synced ones kept: no cut asks of them) from one per unsynced act.
    fn by_record(&self, state: &[Fate]) -> Vec<Fate> {
        assert_eq!(
            state.len(),
            self.unsynced.len(),
            "one fate per unsynced act"
        );
        let mut fates = vec![Fate::Kept; self.log.records.len()];
        for (&i, &f) in self.unsynced.iter().zip(state) {
            fates[i] = f;
        }
        fates
    }

    /// The files `state` leaves (one fate per unsynced act).
    pub fn state(&self, state: &[Fate]) -> Result<State> {
        let fates = self.by_record(state);
        let plans = plan::plan(&self.log, Survival::Chosen(&fates));
        let mut changed: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
        let mut files = Vec::with_capacity(plans.len());
        for p in &plans {
            let before = self.files.get(&p.path);
            let mut done = FileCut::begun(p, before.map(|b| b.len() as u64));
            let Action::Keep {
                start,
                restores,
                size,
                dropped_acts,
            } = &p.action
            else {
                changed.insert(p.path.clone(), None);
                done.action = "removed";
                files.push(done);
                continue;
            };
            done.dropped_writes = *dropped_acts;
            let mut image = match start {
                Start::Current => match before {
                    Some(b) => b.clone(),
                    None => {
                        done.action = "missing";
                        files.push(done);
                        continue;
                    }
                },
                Start::Unlinked(stash) => {
                    done.action = "restored";
                    let name = &self.log.paths[*stash as usize];
                    self.stash.get(name).cloned().ok_or_else(|| {
                        fail::usage(format!("--cut exhaustive: the stash lacks {name}"))
                    })?
                }
            };
            done.dropped_ranges = restore(restores, *size, &self.bytes[..], &mut image)
                .with_context(|| format!("cutting an image of {}", p.path))?;
            done.size_after = Some(image.len() as u64);
            changed.insert(p.path.clone(), Some(image));
            files.push(done);
        }
        let mut shm_removed = Vec::new();
        for shm in shm_names(&self.log) {
            if self.files.contains_key(&shm) {
                changed.insert(shm.clone(), None);
                shm_removed.push(shm);
            }
        }
        // The digest of every file, each by its own digest: a file no state changes is
        // hashed once, at the capture.
        let mut hash = Sha256::new();
        for (name, content) in self.images(&changed) {
            let digest = match changed.contains_key(name) {
                true => Sha256::digest(content).into(),
                false => self.digests[name],
            };
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name.as_bytes());
            hash.update(digest);
        }
        Ok(State {
            changed,
            files,
            shm_removed,
            sha256: crate::common::hex(&hash.finalize()),
        })
    }

    /// Every file a state leaves, by name, with its content.
    fn images<'a>(
        &'a self,
        changed: &'a BTreeMap<String, Option<Vec<u8>>>,
    ) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        let mut names: Vec<&str> = self
            .files
            .keys()
            .chain(changed.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        names.into_iter().filter_map(move |n| {
            let content = match changed.get(n) {
                Some(c) => c.as_deref(),
                None => self.files.get(n).map(Vec::as_slice),
            };
            content.map(|c| (n, c))
        })
    }

    /// Write what `state` leaves into `dir`: into a fresh directory, every file; into the
    /// crashed work directory itself (`in_place`), the changed files, the removed ones gone,
    /// the stash gone and the undo log marked, as the cut on disk does.
    pub fn install(&self, state: &State, dir: &Path, in_place: bool) -> Result<()> {
        for (name, content) in self.images(&state.changed) {
            if in_place && !state.changed.contains_key(name) {
                continue;
            }
            fs::write(dir.join(name), content)
                .with_context(|| format!("writing {name} of a cut state"))?;
        }
        for (name, content) in &state.changed {
            if content.is_none() {
                match fs::remove_file(dir.join(name)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(e).with_context(|| format!("removing {name}"))
                    }
                    _ => {}
                }
            }
        }
        if in_place {
            match fs::remove_dir_all(dir.join(undo::STASH_DIR)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).context("removing the stash of unlinked files")
                }
                _ => {}
            }
            mark(&dir.join(LOG_NAME), &self.log)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
