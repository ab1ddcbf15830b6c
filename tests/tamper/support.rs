//! Shared by the tamper suites: copy a run, change it, re-hash its manifest so the digests
//! alone cannot catch the change, and ask the audit.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{code, crashlab, files, json, stdout};

/// SHA-256 of bytes, computed here, not by the code under test.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for rel in files(from) {
        let target = to.join(&rel);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(from.join(&rel), target).unwrap();
    }
}

/// Every file under `dir`, relative, including symlinks (not followed into directories).
fn listed(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Rewrite manifest.json's `files` to the digests of the directory as it is now (a symlink
/// digested through to its target): the manifest agrees with every change.
pub fn rehash(dir: &Path) {
    let path = dir.join("manifest.json");
    let mut manifest = json(&path);
    let mut map = serde_json::Map::new();
    for rel in listed(dir) {
        if rel == "manifest.json" {
            continue;
        }
        let bytes = fs::read(dir.join(&rel)).unwrap();
        map.insert(rel, Value::String(sha256_hex(&bytes)));
    }
    manifest["files"] = Value::Object(map);
    fs::write(
        &path,
        serde_json::to_string_pretty(&manifest).unwrap() + "\n",
    )
    .unwrap();
}

pub fn audit(dir: &Path) -> (i32, String) {
    let out = crashlab(Path::new("."), &["audit", dir.to_str().unwrap()]);
    let err = crate::common::stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    (code(&out), stdout(&out))
}

/// Replace the first occurrence (or every one, with `all`) of `from` in a text file; the
/// text must be there, or the tamper would change nothing.
pub fn replace(dir: &Path, rel: &str, from: &str, to: &str) {
    let path = dir.join(rel);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(text.contains(from), "{rel} lacks {from:?}");
    fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

pub fn edit_json(dir: &Path, rel: &str, edit: impl FnOnce(&mut Value)) {
    let path = dir.join(rel);
    let mut value = json(&path);
    edit(&mut value);
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap() + "\n").unwrap();
}

/// The process record of a step (the first with that name, or of `scenario/step`).
pub fn process<'a>(v: &'a mut Value, step: &str) -> &'a mut Value {
    let (scenario, name) = step.split_once('/').unwrap_or(("", step));
    v["processes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["step"] == name && (scenario.is_empty() || p["scenario"] == scenario))
        .unwrap_or_else(|| panic!("no process {step}"))
}

pub fn result<'a>(v: &'a mut Value, step: &str) -> &'a mut Value {
    v["steps"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["step"] == step)
        .unwrap_or_else(|| panic!("no result {step}"))
}

pub fn swap_files(dir: &Path, a: &str, b: &str) {
    let (pa, pb) = (dir.join(a), dir.join(b));
    let (ta, tb) = (fs::read(&pa).unwrap(), fs::read(&pb).unwrap());
    assert_ne!(ta, tb, "swapping equal files changes nothing");
    fs::write(&pa, tb).unwrap();
    fs::write(&pb, ta).unwrap();
}

/// One meaning-changing edit and the files the audit must name for it.
pub struct Tamper {
    pub name: &'static str,
    /// Any of these must be named at the start of an audit line (`file: …`).
    pub names: Vec<String>,
    /// Caught only by the replay of the SQL history (src/engine/replay).
    pub replay: bool,
    pub edit: Box<dyn Fn(&Path)>,
}

pub fn tamper(
    name: &'static str,
    names: &[&str],
    replay: bool,
    edit: impl Fn(&Path) + 'static,
) -> Tamper {
    Tamper {
        name,
        names: names.iter().map(|s| s.to_string()).collect(),
        replay,
        edit: Box::new(edit),
    }
}

/// Apply each tamper to a fresh copy of `run`, re-hash, audit. Returns the misses, each with
/// what the audit said; prints one line per tamper.
pub fn run_all(run: &Path, scratch: &Path, tampers: &[Tamper]) -> Vec<String> {
    let (code_ok, text) = audit(run);
    assert_eq!(code_ok, 0, "the untouched run audits PASS: {text}");
    let mut misses = Vec::new();
    for (i, t) in tampers.iter().enumerate() {
        let dir: PathBuf = scratch.join(format!("t{i:02}"));
        copy_dir(run, &dir);
        (t.edit)(&dir);
        rehash(&dir);
        let (code, out) = audit(&dir);
        let named = out
            .lines()
            .find(|l| t.names.iter().any(|n| l.starts_with(&format!("{n}:"))));
        let caught = code == 1 && out.contains("FAIL: ") && named.is_some();
        let needs = if t.replay { " (replay)" } else { "" };
        println!(
            "{} {}{needs}: {}",
            if caught { "caught" } else { "MISSED" },
            t.name,
            named.unwrap_or("")
        );
        if !caught {
            misses.push(format!(
                "{}{needs}: exit {code}, names {:?}:\n{out}",
                t.name, t.names
            ));
        }
        fs::remove_dir_all(&dir).unwrap();
    }
    println!(
        "tampers caught: {} of {}",
        tampers.len() - misses.len(),
        tampers.len()
    );
    misses
}
