//! Walk the recorded and the rerun evidence directories side by side and compare each file
//! as its scope says: text line by line, JSON field by field, databases row by row.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use super::compare::{self, Comparison};
use super::normalise;
use super::rows;
use super::scope::{self, Rule, Scope};

/// Evidence is at most a few levels deep (explore's cases/<variant>/<case>/).
const DEPTH_MAX: usize = 8;
/// The most files listed in one directory tree.
const FILES_MAX: usize = 200_000;
/// The largest file read.
const FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// A listed entry: a regular file, or something the rerun never reads (a symbolic link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    File,
    Link,
}

/// Every file under `root`, relative with `/`, without following a symbolic link.
fn list(root: &Path) -> Result<Vec<(String, Entry)>> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        anyhow::ensure!(depth <= DEPTH_MAX, "{} is nested too deep", dir.display());
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry
                .with_context(|| format!("listing {}", dir.display()))?
                .path();
            let meta = fs::symlink_metadata(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let rel = path
                .strip_prefix(root)
                .expect("listed under root")
                .to_string_lossy()
                .replace('\\', "/");
            if meta.file_type().is_symlink() {
                out.push((rel, Entry::Link));
            } else if meta.is_dir() {
                stack.push((path, depth + 1));
            } else {
                out.push((rel, Entry::File));
            }
            anyhow::ensure!(out.len() <= FILES_MAX, "more than {FILES_MAX} files");
        }
    }
    out.sort();
    Ok(out)
}

/// A listed file as text: a plain file, bounded, never a FIFO swapped in after the listing.
fn read(path: &Path) -> Result<String> {
    let bytes = crate::common::read_plain(path, FILE_BYTES_MAX)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Compare the two trees; the problems of reading are differences too (named by file).
pub fn compare(recorded: &Path, rerun: &Path, scope: &Scope, cmp: &mut Comparison) -> Result<()> {
    let a = list(recorded).context("listing the recorded evidence")?;
    let b = list(rerun).context("listing the rerun's evidence")?;
    let (a, b): (BTreeMap<_, _>, BTreeMap<_, _>) =
        (a.into_iter().collect(), b.into_iter().collect());
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for rel in names {
        let rule = scope.rule(rel);
        if matches!(rule, Rule::Skip | Rule::Side) {
            continue;
        }
        match (a.get(rel), b.get(rel)) {
            (Some(Entry::File), Some(Entry::File)) => {}
            (Some(Entry::Link), Some(_)) => {
                cmp.differ(rel, "file", "a symbolic link (never followed)", "a file");
                continue;
            }
            (Some(Entry::File), Some(Entry::Link)) => {
                cmp.differ(rel, "file", "a file", "a symbolic link (never followed)");
                continue;
            }
            (Some(_), None) => {
                cmp.differ(rel, "file", "present", "absent");
                continue;
            }
            (None, Some(_)) => {
                cmp.differ(rel, "file", "absent", "present");
                continue;
            }
            (None, None) => unreachable!("a name of the union is in one of them"),
        }
        cmp.files += 1;
        let (pa, pb) = (recorded.join(rel), rerun.join(rel));
        if let Err(e) = file(rel, &pa, &pb, &rule, scope, cmp) {
            cmp.differ(rel, "file", &format!("unreadable: {e:#}"), "");
        }
    }
    Ok(())
}

fn file(
    rel: &str,
    pa: &Path,
    pb: &Path,
    rule: &Rule,
    scope: &Scope,
    cmp: &mut Comparison,
) -> Result<()> {
    if rows::is_database(pa) || rows::is_database(pb) {
        let (ra, rb) = (rows::dump(pa), rows::dump(pb));
        let (ra, rb) = match (ra, rb) {
            (Ok(ra), Ok(rb)) => (ra, rb),
            (ra, rb) => {
                let say = |r: &Result<Vec<String>>| match r {
                    Ok(_) => "readable".to_string(),
                    Err(e) => format!("unreadable: {e:#}"),
                };
                cmp.differ(rel, "rows", &say(&ra), &say(&rb));
                return Ok(());
            }
        };
        compare::text(
            cmp,
            &format!("{rel} (rows)"),
            &ra.join("\n"),
            &rb.join("\n"),
        );
        return Ok(());
    }
    let (ta, tb) = (read(pa)?, read(pb)?);
    if rel.ends_with(".events.jsonl") {
        // One event a line: each is normalised as JSON is, by key (the `pid` of `start`,
        // the `port` of `ready`), then compared line by line.
        compare::text(cmp, rel, &events_lines(&ta), &events_lines(&tb));
        return Ok(());
    }
    let parsed = rel.ends_with(".json").then(|| {
        (
            serde_json::from_str::<Value>(&ta),
            serde_json::from_str::<Value>(&tb),
        )
    });
    let Some((Ok(ja), Ok(mut jb))) = parsed else {
        compare::text(cmp, rel, &ta, &tb);
        return Ok(());
    };
    scope.relabel(rel, &mut jb);
    let (ja, jb) = match rule {
        Rule::Only(paths) => (scope::only(&ja, paths), scope::only(&jb, paths)),
        Rule::AllBut(keys) => (scope::all_but(&ja, keys), scope::all_but(&jb, keys)),
        _ => (ja, jb),
    };
    let unsettled = |v: &Value| scope.unsettled(rel, v);
    cmp.fields += compare::leaves(&ja);
    compare::json(cmp, rel, "", &ja, &jb, &unsettled);
    Ok(())
}

/// The lines of an events file, each JSON line normalised by key; a line that is no JSON is
/// kept as it is (and differs).
fn events_lines(text: &str) -> String {
    text.lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) => normalise::json(&value).to_string(),
            Err(_) => line.to_string(),
        })
        .map(|line| line + "\n")
        .collect()
}
