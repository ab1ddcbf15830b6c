//! States cut in memory against the cut on disk, on the synthetic logs of the cut's tests.

use std::fs;

use super::*;
use crate::power::cut::tests::{fill, two_pages, Sim};
use crate::power::cut::Style;
use crate::power::states::Fate::{Dropped as D, Kept as K, Torn as T};

#[test]
fn every_act_lost_is_exactly_the_drop_cut_on_disk() {
    let sim = Sim::new();
    two_pages(&sim);
    fs::write(sim.root().join("db-shm"), b"index").unwrap();
    let crashed = Crashed::capture(sim.root()).unwrap();
    assert_eq!(crashed.acts().len(), 2);
    // The page write at 0 spans 8 sectors, the one at 4096 too.
    assert!(crashed.acts().iter().all(|a| a.sectors == 8));
    let state = crashed.state(&[D, D]).unwrap();
    let on_disk = sim.cut(Style::Drop, 0).unwrap();
    assert_eq!(state.files, on_disk.files, "the same summary");
    assert_eq!(state.shm_removed, on_disk.shm_removed);
    let fresh = tempfile::tempdir().unwrap();
    crashed.install(&state, fresh.path(), false).unwrap();
    assert_eq!(fs::read(fresh.path().join("db")).unwrap(), fill(b'a', 4096));
    assert!(!fresh.path().join("db-shm").exists());
    assert!(!fresh.path().join(crate::power::LOG_NAME).exists());
}

#[test]
fn a_torn_write_keeps_its_first_sectors_and_identical_images_hash_alike() {
    let sim = Sim::new();
    two_pages(&sim);
    let crashed = Crashed::capture(sim.root()).unwrap();
    let torn = crashed.state(&[T(3), D]).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    crashed.install(&torn, fresh.path(), false).unwrap();
    let want = [fill(b'b', 3 * 512), fill(b'a', 4096 - 3 * 512)].concat();
    assert_eq!(fs::read(fresh.path().join("db")).unwrap(), want);
    assert_eq!(torn.files[0].dropped_ranges, [(1536, 8192)]);
    let all = crashed.state(&[K, K]).unwrap();
    assert!(all.files.is_empty(), "nothing to put back");
    assert_ne!(all.sha256, torn.sha256);
    // The same page written twice: losing the first write leaves what keeping both leaves.
    let sim = Sim::new();
    sim.create("db");
    sim.sync("db");
    sim.dir_sync();
    sim.write("db", 0, &fill(b'b', 512));
    sim.write("db", 0, &fill(b'c', 512));
    let crashed = Crashed::capture(sim.root()).unwrap();
    let (dk, kk) = (
        crashed.state(&[D, K]).unwrap(),
        crashed.state(&[K, K]).unwrap(),
    );
    assert_eq!(dk.sha256, kk.sha256);
    assert_ne!(crashed.state(&[K, D]).unwrap().sha256, kk.sha256);
}

#[test]
fn installed_in_place_a_state_is_a_cut_the_log_marks() {
    let sim = Sim::new();
    sim.durable("j", b"synced");
    sim.write("j", 0, b"LATER!");
    sim.unlink("j");
    let crashed = Crashed::capture(sim.root()).unwrap();
    assert_eq!(
        crashed.named_acts(),
        [
            (4, "write".into(), "j".into()),
            (5, "unlink".into(), "j".into())
        ]
    );
    // The unlink lost, the write kept: the file comes back with the later bytes.
    let state = crashed.state(&[K, D]).unwrap();
    assert_eq!(state.files[0].action, "restored");
    crashed.install(&state, sim.root(), true).unwrap();
    assert_eq!(sim.read("j").unwrap(), b"LATER!");
    assert!(!sim.root().join(undo::STASH_DIR).exists());
    let again = Crashed::capture(sim.root()).unwrap();
    assert_eq!(
        (again.records(), again.acts().len()),
        (0, 0),
        "the marker ends the log"
    );
}

#[test]
fn a_log_naming_the_log_itself_is_refused() {
    let sim = Sim::new();
    sim.record(
        Op::Write {
            offset: 0,
            len: 1,
            old_size: 0,
        },
        LOG_NAME,
        &[],
    );
    let e = Crashed::capture(sim.root()).err().expect("refused");
    assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
}
