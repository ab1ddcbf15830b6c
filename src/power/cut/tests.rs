//! The cut on synthetic logs: a small simulator acts on real files in a temporary work
//! directory and records each act the way the shim VFS does, then a cut is applied.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::*;
use crate::power::undo::{encode, Op};

pub(super) struct Sim {
    dir: tempfile::TempDir,
    log: File,
}

impl Sim {
    pub(super) fn new() -> Sim {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join(LOG_NAME))
            .expect("log");
        Sim { dir, log }
    }

    pub(super) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn log_path(&self) -> PathBuf {
        self.root().join(LOG_NAME)
    }

    pub(super) fn record(&self, op: Op, path: &str, payload: &[u8]) {
        undo::append(&self.log, &encode(op, path, payload)).expect("append");
    }

    pub(super) fn create(&self, path: &str) {
        self.record(Op::Create, path, &[]);
        File::create(self.root().join(path)).expect("create");
    }

    /// A file a cut cannot take back: created with `bytes`, synced, its directory entry too.
    pub(super) fn durable(&self, path: &str, bytes: &[u8]) {
        self.create(path);
        self.write(path, 0, bytes);
        self.sync(path);
        self.dir_sync();
    }

    pub(super) fn write(&self, path: &str, offset: u64, bytes: &[u8]) {
        let full = self.root().join(path);
        let old = fs::read(&full).unwrap_or_default();
        let old_size = old.len() as u64;
        let kept_end = (offset + bytes.len() as u64).min(old_size);
        let payload = if offset < kept_end {
            old[offset as usize..kept_end as usize].to_vec()
        } else {
            Vec::new()
        };
        let op = Op::Write {
            offset,
            len: bytes.len() as u64,
            old_size,
        };
        self.record(op, path, &payload);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(full);
        file.expect("open")
            .write_all_at(bytes, offset)
            .expect("write");
    }

    pub(super) fn truncate(&self, path: &str, new_size: u64) {
        let full = self.root().join(path);
        let old = fs::read(&full).expect("read");
        let tail = old.get(new_size as usize..).unwrap_or_default().to_vec();
        let op = Op::Truncate {
            new_size,
            old_size: old.len() as u64,
        };
        self.record(op, path, &tail);
        OpenOptions::new()
            .write(true)
            .open(full)
            .unwrap()
            .set_len(new_size)
            .unwrap();
    }

    pub(super) fn sync(&self, path: &str) {
        self.record(Op::Sync, path, &[]);
    }

    pub(super) fn dir_sync(&self) {
        self.record(Op::DirSync, "", &[]);
    }

    pub(super) fn unlink(&self, path: &str) {
        let full = self.root().join(path);
        fs::create_dir_all(self.root().join(undo::STASH_DIR)).unwrap();
        let stash = format!("{}/{path}", undo::STASH_DIR);
        fs::hard_link(&full, self.root().join(&stash)).expect("stash");
        self.record(Op::Unlink { existed: true }, path, stash.as_bytes());
        fs::remove_file(full).expect("unlink");
    }

    pub(super) fn read(&self, path: &str) -> Option<Vec<u8>> {
        fs::read(self.root().join(path)).ok()
    }

    pub(super) fn cut(&self, style: Style, seed: u64) -> Result<Summary> {
        apply(self.root(), &self.log_path(), style, seed)
    }
}

pub(super) fn fill(byte: u8, len: usize) -> Vec<u8> {
    vec![byte; len]
}

/// A synced page of 'a', then unsynced: the page overwritten with 'b', a second page of 'c'.
pub(super) fn two_pages(sim: &Sim) {
    sim.durable("db", &fill(b'a', 4096));
    sim.write("db", 0, &fill(b'b', 4096));
    sim.write("db", 4096, &fill(b'c', 4096));
}

#[test]
fn drop_takes_back_every_write_after_the_last_sync() {
    let sim = Sim::new();
    two_pages(&sim);
    let summary = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(sim.read("db").unwrap(), fill(b'a', 4096));
    let file = &summary.files[0];
    assert_eq!((file.path.as_str(), file.action), ("db", "rolled-back"));
    assert_eq!(file.dropped_writes, 2);
    assert_eq!(file.dropped_ranges, [(0, 8192)]);
    assert_eq!(
        (file.size_before, file.size_after),
        (Some(8192), Some(4096))
    );
    // The marker: a second cut finds nothing left to take back.
    let again = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(again.records, 0);
    assert!(again.files.is_empty());
    assert_eq!(sim.read("db").unwrap(), fill(b'a', 4096));
}

#[test]
fn prefix_keeps_the_unsynced_writes_in_issue_order_up_to_the_seeded_cut() {
    let a = fill(b'a', 4096);
    let b = fill(b'b', 4096);
    let bc = [fill(b'b', 4096), fill(b'c', 4096)].concat();
    let mut seen = Vec::new();
    for seed in 0..40 {
        let sim = Sim::new();
        two_pages(&sim);
        let summary = sim.cut(Style::Prefix, seed).unwrap();
        let got = sim.read("db").unwrap();
        assert!(
            got == a || got == b || got == bc,
            "seed {seed}: not a prefix"
        );
        assert!(summary.prefix_at.is_some());
        if !seen.contains(&got) {
            seen.push(got);
        }
    }
    assert_eq!(seen.len(), 3, "forty seeds reach every prefix");
}

#[test]
fn torn_keeps_a_seeded_subset_of_sectors() {
    let mut mixed = 0;
    for seed in 0..20 {
        let sim = Sim::new();
        two_pages(&sim);
        sim.cut(Style::Torn, seed).unwrap();
        let got = sim.read("db").unwrap();
        assert!(
            got.len() == 4096 || got.len() == 8192,
            "seed {seed}: size {}",
            got.len()
        );
        let sectors: Vec<u8> = got.chunks(SECTOR_BYTES as usize).map(|s| s[0]).collect();
        for (i, s) in got.chunks(SECTOR_BYTES as usize).enumerate() {
            assert!(
                s.iter().all(|&x| x == s[0]),
                "seed {seed}: sector {i} is torn inside"
            );
            let allowed: &[u8] = if i < 8 { b"ab" } else { b"c\0" };
            assert!(
                allowed.contains(&s[0]),
                "seed {seed}: sector {i} holds {}",
                s[0]
            );
        }
        if sectors[..8].contains(&b'a') && sectors[..8].contains(&b'b') {
            mixed += 1;
        }
        // The same seed tears the same way.
        let again = Sim::new();
        two_pages(&again);
        again.cut(Style::Torn, seed).unwrap();
        assert_eq!(again.read("db").unwrap(), got);
    }
    assert!(mixed > 0, "some seed leaves a page half old, half new");
}

#[test]
fn a_create_without_a_directory_sync_is_removed_and_with_one_is_kept() {
    let sim = Sim::new();
    sim.durable("kept", b"k");
    sim.create("lost");
    sim.write("lost", 0, b"l");
    sim.sync("lost");
    let summary = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(sim.read("kept").unwrap(), b"k");
    assert_eq!(sim.read("lost"), None);
    let lost = summary.files.iter().find(|f| f.path == "lost").unwrap();
    assert_eq!(
        (lost.action, lost.undone.clone()),
        ("removed", vec!["create"])
    );
}

#[test]
fn an_unlink_without_a_directory_sync_comes_back_with_its_synced_content() {
    let sim = Sim::new();
    sim.create("gone");
    sim.sync("gone");
    sim.dir_sync();
    sim.unlink("gone");
    sim.dir_sync();
    sim.durable("j", b"synced");
    sim.write("j", 0, b"LATER!");
    sim.unlink("j");
    let summary = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(sim.read("j").unwrap(), b"synced");
    assert_eq!(
        sim.read("gone"),
        None,
        "an unlink followed by a directory sync stays"
    );
    // A directory sync makes every earlier unlink in it durable, not only its own file's.
    let j = &summary.files[0];
    assert_eq!((j.path.as_str(), j.action), ("j", "restored"));
    assert_eq!(j.undone, ["unlink"]);
    assert!(
        !sim.root().join(undo::STASH_DIR).exists(),
        "the stash goes with the cut"
    );
}

#[test]
fn a_truncate_after_the_last_sync_is_undone() {
    let sim = Sim::new();
    sim.write("wal", 0, &fill(b'w', 8192));
    sim.sync("wal");
    sim.truncate("wal", 0);
    sim.write("wal", 0, &fill(b'x', 100));
    sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(sim.read("wal").unwrap(), fill(b'w', 8192));
}

#[test]
fn shared_memory_is_lost_and_files_the_log_never_named_are_untouched() {
    let sim = Sim::new();
    sim.write("q.db-wal", 0, b"frame");
    fs::write(sim.root().join("q.db-shm"), b"index").unwrap();
    fs::write(sim.root().join("other"), b"mine").unwrap();
    let summary = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(summary.shm_removed, ["q.db-shm"]);
    assert_eq!(sim.read("q.db-shm"), None);
    assert_eq!(sim.read("other").unwrap(), b"mine");
    assert_eq!(sim.read("q.db-wal").unwrap(), b"");
}

#[test]
fn a_log_naming_a_path_outside_the_work_directory_is_refused_and_nothing_changes() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("victim"), b"keep").unwrap();
    for name in ["../victim", "/etc/passwd", "a/../../victim"] {
        let sim = Sim::new();
        sim.write("db", 0, b"new");
        sim.record(
            Op::Write {
                offset: 0,
                len: 4,
                old_size: 0,
            },
            name,
            &[],
        );
        let e = sim.cut(Style::Drop, 0).unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE, "{name}");
        let line = fail::one_line(&e);
        assert!(line.contains("outside the work directory"), "{line}");
        assert!(!line.contains('\n'));
        assert_eq!(sim.read("db").unwrap(), b"new", "nothing was cut");
    }
    // A symlinked directory inside the work directory that leads out is refused too.
    let sim = Sim::new();
    std::os::unix::fs::symlink(outside.path(), sim.root().join("link")).unwrap();
    sim.record(
        Op::Write {
            offset: 0,
            len: 4,
            old_size: 0,
        },
        "link/victim",
        &[],
    );
    let e = sim.cut(Style::Drop, 0).unwrap_err();
    assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    assert_eq!(fs::read(outside.path().join("victim")).unwrap(), b"keep");
}

#[test]
fn a_missing_or_corrupt_log_is_one_line_exit_2() {
    let sim = Sim::new();
    sim.write("db", 0, b"abc");
    fs::remove_file(sim.log_path()).unwrap();
    let e = sim.cut(Style::Drop, 0).unwrap_err();
    assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    assert!(fail::one_line(&e).contains("cannot be read"));
    let sim = Sim::new();
    sim.write("db", 0, b"abc");
    sim.write("db", 0, b"xyz");
    let mut bytes = fs::read(sim.log_path()).unwrap();
    bytes[20] ^= 0xff;
    fs::write(sim.log_path(), &bytes).unwrap();
    let e = sim.cut(Style::Drop, 0).unwrap_err();
    assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    let line = fail::one_line(&e);
    assert!(line.contains("is corrupt at byte"), "{line}");
    assert_eq!(sim.read("db").unwrap(), b"xyz");
    assert_eq!(
        fail::exit_code(&Style::parse("half").unwrap_err()),
        fail::EXIT_USAGE
    );
}

#[test]
fn a_stash_that_is_not_a_plain_directory_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let sim = Sim::new();
    sim.write("db", 0, b"new");
    std::os::unix::fs::symlink(outside.path(), sim.root().join(undo::STASH_DIR)).unwrap();
    let e = sim.cut(Style::Drop, 0).unwrap_err();
    assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    assert!(fail::one_line(&e).contains("is not a directory"));
    assert_eq!(sim.read("db").unwrap(), b"new", "nothing was cut");
}
