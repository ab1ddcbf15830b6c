//! The evidence directory as the audit sees it: every plain file under DIR, read once, and
//! nothing else. The walk never follows a symlink (it looks with `symlink_metadata` and opens
//! with `O_NOFOLLOW`), so a link to a file outside DIR is a problem and its target is never
//! opened; every later check reads from this snapshot, not from the disk.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path};

use serde::de::DeserializeOwned;

use super::Report;

/// The largest evidence file the audit reads: a run's files are kilobytes, a chaos log or a
/// kept database megabytes.
const FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;
/// All files together: the audit holds them in memory.
const TOTAL_BYTES_MAX: u64 = 1024 * 1024 * 1024;
/// Entries (files and directories) walked: a run writes hundreds at most.
const ENTRIES_MAX: usize = 200_000;
/// Evidence is at most three levels deep (`db/<scenario>/<file>`).
const DEPTH_MAX: usize = 8;

pub const SYMLINK: &str = "is a symlink; evidence holds plain files only";

pub struct Tree {
    /// Every plain file, relative with `/`, and its bytes (`None`: listed but not read, and
    /// the reason is a problem already).
    files: BTreeMap<String, Option<Vec<u8>>>,
}

impl Tree {
    /// Walk `dir` (which the caller found to be a directory) and read every plain file.
    pub fn load(report: &mut Report, dir: &Path) -> Tree {
        let mut tree = Tree {
            files: BTreeMap::new(),
        };
        let mut total_bytes = 0u64;
        let mut entries = 0usize;
        // (relative path, depth); the root is "".
        let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
        while let Some((rel, depth)) = stack.pop() {
            let path = if rel.is_empty() {
                dir.to_path_buf()
            } else {
                dir.join(&rel)
            };
            let listing = match fs::read_dir(&path) {
                Ok(l) => l,
                Err(e) => {
                    report.problem(shown(&rel), format!("cannot list: {e}"));
                    continue;
                }
            };
            let mut names = Vec::new();
            for entry in listing {
                match entry {
                    Ok(e) => names.push(e.file_name().to_string_lossy().into_owned()),
                    Err(e) => report.problem(shown(&rel), format!("cannot list: {e}")),
                }
            }
            names.sort();
            for name in names.into_iter().rev() {
                entries += 1;
                if entries > ENTRIES_MAX {
                    report.problem(
                        ".",
                        format!("more than {ENTRIES_MAX} entries: not evidence"),
                    );
                    return tree;
                }
                let child = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                let meta = match fs::symlink_metadata(dir.join(&child)) {
                    Ok(m) => m,
                    Err(e) => {
                        report.problem(&child, format!("cannot stat: {e}"));
                        continue;
                    }
                };
                let kind = meta.file_type();
                if kind.is_symlink() {
                    report.problem(&child, SYMLINK);
                } else if kind.is_dir() {
                    if depth + 1 > DEPTH_MAX {
                        report.problem(&child, "nested too deep to be evidence");
                        continue;
                    }
                    stack.push((child, depth + 1));
                } else if !kind.is_file() {
                    report.problem(&child, "is not a plain file");
                } else if meta.len() > FILE_BYTES_MAX {
                    report.problem(
                        &child,
                        format!("{} bytes exceed the bound of {FILE_BYTES_MAX}", meta.len()),
                    );
                    tree.files.insert(child, None);
                } else if total_bytes + meta.len() > TOTAL_BYTES_MAX {
                    report.problem(
                        &child,
                        format!("the evidence exceeds {TOTAL_BYTES_MAX} bytes in all"),
                    );
                    tree.files.insert(child, None);
                } else {
                    total_bytes += meta.len();
                    let bytes = match read_nofollow(&dir.join(&child)) {
                        Ok(b) => Some(b),
                        Err(e) => {
                            report.problem(&child, format!("unreadable: {e}"));
                            None
                        }
                    };
                    tree.files.insert(child, bytes);
                }
            }
        }
        tree
    }

    /// The files under `prefix/`, named relative to it: a part of the run (a study's seed)
    /// judged from this snapshot, not read again.
    pub fn under(&self, prefix: &str) -> Tree {
        let head = format!("{prefix}/");
        Tree {
            files: self
                .files
                .iter()
                .filter_map(|(rel, bytes)| {
                    Some((rel.strip_prefix(&head)?.to_string(), bytes.clone()))
                })
                .collect(),
        }
    }

    /// Every plain file, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    pub fn has_file(&self, rel: &str) -> bool {
        self.files.contains_key(rel)
    }

    /// The bytes of a plain file; a problem when it is absent (a symlink in its place was
    /// reported by the walk, and is reported again here as missing evidence).
    pub fn bytes(&self, report: &mut Report, rel: &str) -> Option<&[u8]> {
        if !plain(rel) {
            report.problem(rel, "path leaves the evidence directory");
            return None;
        }
        match self.files.get(rel) {
            Some(Some(b)) => Some(b.as_slice()),
            Some(None) => None,
            None => {
                report.problem(rel, "missing");
                None
            }
        }
    }

    /// The bytes of a file that may be absent, without a problem when it is.
    pub fn get(&self, rel: &str) -> Option<&[u8]> {
        self.files.get(rel).and_then(|b| b.as_deref())
    }

    pub fn text(&self, report: &mut Report, rel: &str) -> Option<String> {
        self.bytes(report, rel)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    pub fn json<T: DeserializeOwned>(&self, report: &mut Report, rel: &str) -> Option<T> {
        let bytes = self.bytes(report, rel)?;
        match serde_json::from_slice(bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                report.problem(rel, format!("malformed or truncated JSON: {e}"));
                None
            }
        }
    }
}

/// The replay reads the same snapshot: no second open of a path in DIR.
impl crate::engine::replay::Evidence for Tree {
    fn bytes(&self, rel: &str) -> Result<&[u8], String> {
        match self.files.get(rel) {
            Some(Some(bytes)) => Ok(bytes),
            // Why it was not read is a problem of the walk's already.
            Some(None) => Err("not read (see its own problem)".to_string()),
            None => Err("missing".to_string()),
        }
    }
}

/// A path recorded in evidence must be plain: relative, no `..`, no `.`.
pub fn plain(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

fn shown(rel: &str) -> &str {
    if rel.is_empty() {
        "."
    } else {
        rel
    }
}

/// Read a file without following a symlink in its last component (the walk saw no symlink
/// above it), only when it is still a plain file once open, and never waiting on one that
/// is not (a FIFO swapped in).
pub(super) fn read_nofollow(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::common::read_plain(path, FILE_BYTES_MAX)
}

/// Is `dir` evidence at all? It must hold one of the files every kind of run writes (a
/// symlink in its place counts: that is evidence with a problem, not a stranger).
pub fn looks_like_evidence(dir: &Path) -> bool {
    [
        crate::engine::evidence::MANIFEST,
        crate::engine::evidence::PROCESSES,
        super::EXPLORE,
        super::CHAOS,
        crate::probe::records::PROBE,
    ]
    .iter()
    .any(|name| fs::symlink_metadata(dir.join(name)).is_ok())
}
