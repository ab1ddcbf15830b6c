//! The evidence files of one run (README, "Evidence"), written and read back.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::engine::state::{sha256_file, FileRow};

include!(concat!(env!("OUT_DIR"), "/sources.rs"));

pub const PROCESSES: &str = "processes.json";
pub const DATABASE_FILES: &str = "database-files.json";
pub const RESULTS: &str = "results.json";
pub const MANIFEST: &str = "manifest.json";

// Every record read back refuses a field it does not know (`deny_unknown_fields`): the audit
// re-derives the fields it knows, and a field added by hand ("verdict": "FAIL") would
// otherwise pass it unread while a reader takes it for part of the record.

/// One process the driver ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub scenario: String,
    pub step: String,
    pub argv: Vec<String>,
    pub expected_exit: i32,
    pub exit: i32,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub crash_point: Option<String>,
    pub crash_mode: Option<String>,
    pub stdout: String,
    pub stderr: String,
    pub wall_ms: f64,
    pub max_rss_kb: i64,
    pub timed_out: bool,
}

/// The tests' chaos process: step `step` of scenario `chaos`, ended with `exit` (the exit
/// it was expected to have) and `signal`, with nothing else recorded of it.
#[cfg(test)]
impl Process {
    pub fn chaos(step: &str, argv: Vec<String>, exit: i32, signal: Option<i32>) -> Process {
        Process {
            scenario: "chaos".into(),
            step: step.into(),
            argv,
            expected_exit: exit,
            exit,
            signal,
            crash_point: None,
            crash_mode: None,
            stdout: String::new(),
            stderr: String::new(),
            wall_ms: 1.0,
            max_rss_kb: 1,
            timed_out: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Git {
    pub commit: String,
    pub dirty: bool,
}

/// `processes.json`: the processes and what reproduces the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Processes {
    pub lab: String,
    pub crashlab_version: String,
    pub git: Option<Git>,
    pub sqlite_version: String,
    pub pragmas: BTreeMap<String, String>,
    /// The driver's own command line, `argv[0]` recorded as `crashlab`.
    pub command: Vec<String>,
    pub crash_mode: String,
    pub step_timeout_ms: u64,
    pub moved_crashes: Vec<String>,
    pub total_wall_ms: f64,
    pub processes: Vec<Process>,
}

/// One row of `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepResult {
    pub scenario: String,
    pub step: String,
    pub ok: bool,
    pub expected: serde_json::Value,
    pub observed: serde_json::Value,
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    pub lab: String,
    pub ok: bool,
    pub steps: Vec<StepResult>,
    /// Each scenario in Jepsen's words: its anomalies, the bad ones, the expected ones.
    pub scenarios: Vec<crate::engine::observed::ScenarioFindings>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub sources: BTreeMap<String, String>,
    pub files: BTreeMap<String, String>,
}

/// The digests of the sources this binary was built from.
pub fn build_sources() -> BTreeMap<String, String> {
    SOURCES
        .iter()
        .map(|(p, h)| (p.to_string(), h.to_string()))
        .collect()
}

/// SHA-256 of `bytes`, lowercase hex, as build.rs writes it.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// SHA-256 of a source file with CRLF turned into LF, as build.rs computes it.
pub fn source_sha256(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let text = bytes.windows(2).filter(|w| w == b"\r\n").count();
    if text == 0 {
        return Ok(sha256_hex(&bytes));
    }
    let mut lf = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        lf.push(bytes[i]);
        i += 1;
    }
    Ok(sha256_hex(&lf))
}

pub fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("serializing evidence")?;
    text.push('\n');
    let path = dir.join(name);
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Every file under `dir`, relative, with `/` separators, sorted.
pub fn list_files(dir: &Path) -> Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>, depth: usize) -> Result<()> {
        // Evidence is at most two levels deep (lab 13's scenario dirs, `db/`); a bound on
        // depth keeps a symlink loop or a foreign tree from running forever.
        anyhow::ensure!(
            depth <= 8,
            "{} is nested too deep to be evidence",
            dir.display()
        );
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()
            .with_context(|| format!("listing {}", dir.display()))?;
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out, depth + 1)?;
            } else {
                let rel = path
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out, 0)?;
    Ok(out)
}

/// Write `manifest.json` last: the build's sources and every other file in `dir`.
pub fn write_manifest(dir: &Path) -> Result<Manifest> {
    let mut files = BTreeMap::new();
    for rel in list_files(dir)? {
        if rel == MANIFEST {
            continue;
        }
        let (_, sha) = sha256_file(&dir.join(&rel))?;
        files.insert(rel, sha);
    }
    let manifest = Manifest {
        sources: build_sources(),
        files,
    };
    write_json(dir, MANIFEST, &manifest)?;
    Ok(manifest)
}

pub fn write_database_files(dir: &Path, rows: &[FileRow]) -> Result<()> {
    write_json(dir, DATABASE_FILES, &rows)
}

/// The source files of a checkout, as build.rs lists them: the build files and all of `src/`.
pub fn source_files(checkout: &Path) -> Vec<String> {
    let mut files: Vec<String> = ["Cargo.toml", "Cargo.lock", "run-lab.sh", "build.rs"]
        .iter()
        .filter(|f| checkout.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    if let Ok(under) = list_files(&checkout.join("src")) {
        files.extend(under.into_iter().map(|rel| format!("src/{rel}")));
    }
    files.sort();
    files
}

/// A path as evidence records it: an absolute path by its last component only, so no path
/// of the machine is written; a relative one as given.
pub fn recorded_path(path: &Path) -> String {
    if path.is_absolute() {
        path.file_name()
            .map_or("/".to_string(), |n| n.to_string_lossy().into_owned())
    } else {
        path.display().to_string()
    }
}

/// The checkout this binary was built from, when it is still there.
pub fn build_checkout() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    dir.join("Cargo.toml").is_file().then_some(dir)
}

/// The commit of the checkout and whether its tracked files differ from it.
pub fn git_state(checkout: &Path) -> Option<Git> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(checkout)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    // Dirty means the sources differ from the commit (the files the manifest digests); an
    // archive being regenerated under evidence/ does not make a run dirty.
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--",
        "src",
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "run-lab.sh",
    ])
    .is_some_and(|s| !s.is_empty());
    Some(Git { commit, dirty })
}

/// Make a finished `DIR.partial` durable and give it its final name: every file and every
/// directory in it is fsync'd, then the rename, then the parent directory is fsync'd. Without
/// the first syncs a power cut after the rename could leave `DIR` with empty or missing
/// files; without the last, the rename itself could be lost. So `DIR` appears whole or not at
/// all after a process crash and after a power loss alike.
pub fn publish(partial: &Path, out: &Path) -> Result<()> {
    sync_tree(partial)?;
    rename_noreplace(partial, out)?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    sync_path(parent)
}

/// Rename without ever replacing: a name that appeared at `out` while the run wrote (the run
/// refused an existing one at its start) is refused, and the evidence stays in `partial`.
fn rename_noreplace(partial: &Path, out: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes());
    let (Ok(from), Ok(to)) = (c(partial), c(out)) else {
        anyhow::bail!("{} holds a NUL byte", out.display());
    };
    // SAFETY: both pointers are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let mut err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EINVAL) && !out.exists() {
        // A file system without RENAME_NOREPLACE: the check and the rename are two steps.
        match fs::rename(partial, out) {
            Ok(()) => return Ok(()),
            Err(e) => err = e,
        }
    }
    if err.raw_os_error() == Some(libc::EEXIST) || err.raw_os_error() == Some(libc::ENOTEMPTY) {
        return Err(crate::fail::usage(format!(
            "{} appeared while the run wrote; the evidence is in {} (evidence is never overwritten)",
            out.display(),
            partial.display()
        )));
    }
    Err(anyhow::Error::new(err).context(format!(
        "moving {} to {}; the evidence is in {}",
        partial.display(),
        out.display(),
        partial.display()
    )))
}

fn sync_path(path: &Path) -> Result<()> {
    fs::File::open(path)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("syncing {}", path.display()))
}

/// fsync every file under `dir` and every directory, the deepest first.
pub fn sync_tree(dir: &Path) -> Result<()> {
    for rel in list_files(dir)? {
        sync_path(&dir.join(rel))?;
    }
    let mut dirs = vec![dir.to_path_buf()];
    let mut at = 0;
    // Bounded by the tree, which list_files has already walked with its depth bound.
    while at < dirs.len() {
        let entries =
            fs::read_dir(&dirs[at]).with_context(|| format!("listing {}", dirs[at].display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", dirs[at].display()))?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path());
            }
        }
        at += 1;
    }
    for d in dirs.iter().rev() {
        sync_path(d)?;
    }
    Ok(())
}
