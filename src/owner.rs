//! Who owns a directory crashlab made, so that nothing stays for good after a SIGKILL.
//!
//! - **Temporary directories** are named for their owner: `crashlab-<kind>-<pid>-<start>-<random>`
//!   (start: the process's start time in clock ticks since boot, `/proc/PID/stat` field 22,
//!   which with the pid names it even after the pid is reused). A process killed with SIGKILL
//!   cannot remove its own. The first one a run makes first sweeps those whose owner is gone,
//!   and says in one line what it removed and how many bytes.
//! - **A directory in use** (`DIR.partial` while a run writes it, a `servers --work`) is
//!   locked (`flock`) for the owner's life: the kernel drops the lock when the process ends,
//!   however it ends, so a lock that can be taken means the owner is gone.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::servers::process::{self, Proc};

/// Every owned temporary directory's name starts so.
const PREFIX: &str = "crashlab-";
/// Entries of a root looked at in one sweep: a temp directory holds thousands at most.
const ROOT_ENTRIES_MAX: usize = 100_000;
/// Entries counted inside one directory for its size: a server's is a few thousand files.
const SIZE_ENTRIES_MAX: usize = 200_000;
/// Names the sweep's line lists; the rest are counted.
const NAMES_SHOWN_MAX: usize = 4;

/// This process, as the names of its temporary directories carry it.
fn me() -> Proc {
    static ME: std::sync::OnceLock<Proc> = std::sync::OnceLock::new();
    *ME.get_or_init(|| {
        let pid = std::process::id() as i32;
        let start_ticks = process::start_ticks(pid).expect("this process is alive");
        Proc { pid, start_ticks }
    })
}

/// A temporary directory of `kind` (`work`, `servers`, …) in the system's temp directory.
pub fn tempdir(kind: &str) -> Result<tempfile::TempDir> {
    tempdir_in(kind, &std::env::temp_dir())
}

/// A temporary directory of `kind` under `root`, named for this process. The first one
/// this process makes under a root sweeps that root (and the usual ones) first.
pub fn tempdir_in(kind: &str, root: &Path) -> Result<tempfile::TempDir> {
    assert!(
        !kind.is_empty() && kind.bytes().all(kind_byte),
        "a kind is lowercase words: {kind}"
    );
    sweep_once(root);
    let me = me();
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-{}-{}-", me.pid, me.start_ticks))
        .tempdir_in(root)
        .with_context(|| format!("creating a {kind} directory in {}", root.display()))
}

/// A kind is lowercase words and digits joined by `-` (`work`, `bench-e2e`).
fn kind_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// The owner a directory's name carries, if it is one of ours.
fn owner_of(name: &str) -> Option<Proc> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.rsplitn(4, '-');
    let random = parts.next()?;
    let start_ticks = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    let kind = parts.next()?;
    let words = |s: &str, ok: fn(u8) -> bool| !s.is_empty() && s.bytes().all(ok);
    (words(kind, kind_byte) && words(random, |b| b.is_ascii_alphanumeric()))
        .then_some(Proc { pid, start_ticks })
}

/// What a sweep removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub names: Vec<String>,
    pub bytes: u64,
}

impl Swept {
    /// The one line a run prints, or None when nothing was removed.
    pub fn line(&self) -> Option<String> {
        if self.names.is_empty() {
            return None;
        }
        let mut shown: Vec<&str> = self
            .names
            .iter()
            .take(NAMES_SHOWN_MAX)
            .map(String::as_str)
            .collect();
        let more = self.names.len().saturating_sub(NAMES_SHOWN_MAX);
        let more = format!("and {more} more");
        if self.names.len() > NAMES_SHOWN_MAX {
            shown.push(&more);
        }
        Some(format!(
            "sweep: removed {} left by crashlab runs that are gone, {} bytes ({:.1} MB): {}",
            crate::out::plural(self.names.len(), "directory", "directories"),
            self.bytes,
            self.bytes as f64 / 1e6,
            shown.join(", ")
        ))
    }
}

/// Remove every directory of ours under `root` whose owner no longer runs. A directory that
/// cannot be removed (another user's) is left and not counted.
pub fn sweep(root: &Path) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(root) else {
        return swept;
    };
    let mut found = Vec::new();
    for entry in entries.take(ROOT_ENTRIES_MAX).flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(owner) = owner_of(&name) else {
            continue;
        };
        // A symlink or a file of that name is no directory of ours.
        let is_dir = std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir());
        if is_dir && !process::alive(owner) {
            found.push(name);
        }
    }
    found.sort();
    for name in found {
        let path = root.join(&name);
        let bytes = size(&path);
        if std::fs::remove_dir_all(&path).is_ok() {
            swept.bytes += bytes;
            swept.names.push(name);
        }
    }
    swept
}

/// The bytes of the files under `dir` (no symlink followed), bounded.
fn size(dir: &Path) -> u64 {
    let mut bytes = 0;
    let mut seen = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SIZE_ENTRIES_MAX {
                return bytes;
            }
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                bytes += meta.len();
            }
        }
    }
    bytes
}

/// Sweep `root`, and on the first call the system's temp directory and /dev/shm (where
/// explore's cases work), once per process each; one line for what the call removed.
fn sweep_once(root: &Path) {
    static SWEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
    let roots = [
        root.to_path_buf(),
        std::env::temp_dir(),
        PathBuf::from("/dev/shm"),
    ];
    let mut all = Swept::default();
    for root in roots {
        if swept.insert(root.clone()) {
            let one = sweep(&root);
            all.bytes += one.bytes;
            all.names.extend(one.names);
        }
    }
    if let Some(line) = all.line() {
        crate::out::warn(&line);
    }
}

/// Held locks: each lasts as long as this process (the kernel drops it when it ends).
static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

fn flock(dir: &Path) -> std::io::Result<Option<File>> {
    // std opens with O_CLOEXEC: no child inherits the descriptor, so none holds the lock.
    let file = File::open(dir)?;
    // SAFETY: flock on a descriptor `file` owns; no memory is passed.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if taken {
        return Ok(Some(file));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(None),
        _ => Err(e),
    }
}

/// Lock directory `dir` for the rest of this process's life. False: a live process holds it.
pub fn lock_for_life(dir: &Path) -> std::io::Result<bool> {
    match flock(dir)? {
        Some(file) => {
            HELD.lock().unwrap_or_else(|p| p.into_inner()).push(file);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Whether a live process holds `dir`'s lock (probed by taking it and letting it go).
pub fn held(dir: &Path) -> std::io::Result<bool> {
    Ok(flock(dir)?.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_carries_its_owner_and_only_ours_parse() {
        let p = owner_of("crashlab-bench-e2e-123-456-aB3xYz").unwrap();
        assert_eq!((p.pid, p.start_ticks), (123, 456));
        for other in [
            "crashlab-work-aB3xYz",
            "crashlab-work-12-x-aB3",
            "crashlab--12-34-aB3",
            "other-work-1-2-ab",
            "crashlab-Work-1-2-ab",
            "crashlab-work-1-2-",
        ] {
            assert!(owner_of(other).is_none(), "{other}");
        }
    }

    #[test]
    fn a_sweep_removes_only_directories_of_owners_that_are_gone() {
        let root = tempfile::tempdir().unwrap();
        let mine = tempdir_in("work", root.path()).unwrap();
        std::fs::write(mine.path().join("f"), [0u8; 10]).unwrap();
        // A pid that runs, with another start time: a process that is gone.
        let me = me();
        let gone = root.path().join(format!(
            "crashlab-servers-{}-{}-Zz9",
            me.pid,
            me.start_ticks + 1
        ));
        std::fs::create_dir_all(gone.join("sub")).unwrap();
        std::fs::write(gone.join("sub").join("g"), [0u8; 1000]).unwrap();
        let stranger = root.path().join("crashlab-work-abc");
        std::fs::create_dir(&stranger).unwrap();
        let file = root.path().join("crashlab-work-1-1-ab");
        std::fs::write(&file, "a file, not a directory").unwrap();
        let swept = sweep(root.path());
        assert_eq!(swept.bytes, 1000);
        assert_eq!(swept.names.len(), 1);
        assert!(!gone.exists() && mine.path().exists() && stranger.exists() && file.exists());
        let line = swept.line().unwrap();
        assert!(line.starts_with("sweep: removed 1 directory left by crashlab runs that are gone, 1000 bytes (0.0 MB): crashlab-servers-"), "{line}");
        assert_eq!(sweep(root.path()), Swept::default());
        assert!(Swept::default().line().is_none());
    }

    #[test]
    fn a_lock_is_held_for_the_process_life_and_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let other = flock(dir.path()).unwrap().expect("free at first");
        // flock locks belong to the open file: a second open of the same directory, in this
        // process or another, cannot take it while the first is open.
        assert!(held(dir.path()).unwrap());
        assert!(!lock_for_life(dir.path()).unwrap());
        drop(other);
        assert!(!held(dir.path()).unwrap());
        assert!(lock_for_life(dir.path()).unwrap());
        assert!(held(dir.path()).unwrap());
    }
}
