//! Power loss, the model against reality: a real sender process commits one contract per
//! transaction through the shim VFS and is SIGKILLed right after its K-th acknowledged
//! commit; the power-loss nemesis cuts the work directory (every style, several seeds);
//! then SQLite opens the files as a rebooted machine would find them and the contracts are
//! counted. What SQLite documents must show: WAL + FULL keeps every acknowledged commit under
//! every cut; WAL + NORMAL loses some; DELETE + FULL can lose the last, DELETE + EXTRA cannot.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{code, stderr, stdout, BIN};
use crashlab::engine::nemesis::{power_loss, Aftermath, POWER_CUTS_NAME};
use crashlab::power::cut::{Style, STYLES};
use crashlab::power::{LOG_ENV, LOG_NAME};

/// Contracts generated, and the commit the sender is killed right after.
const CONTRACTS: &str = "12";
const KILLED_AFTER: usize = 8;
/// Seeds per cut style (drop ignores its seed: one is enough).
const SEEDS: u64 = 6;

/// Run the sender in `work` under the shim with `profile`, killed after commit K.
fn crashed_sender(work: &Path, profile: &str) -> usize {
    let at = format!("sender.after-commit@{KILLED_AFTER}");
    let output = Command::new(BIN)
        .args([
            "sender",
            "--db",
            "sender.db",
            "--generate",
            CONTRACTS,
            "--batch",
            "1",
        ])
        .args(["--crash-at", &at, "--crash-mode", "kill", "--no-trace"])
        .env(LOG_ENV, work.join(LOG_NAME))
        .env("CRASHLAB_STORE_PROFILE", profile)
        .current_dir(work)
        .output()
        .expect("the crashlab binary runs");
    let signal = std::os::unix::process::ExitStatusExt::signal(&output.status);
    assert_eq!(signal, Some(9), "{profile}: {}", stderr(&output));
    let acknowledged = stdout(&output)
        .lines()
        .filter(|l| l.starts_with("COMMITTED sender"))
        .count();
    assert_eq!(
        acknowledged, KILLED_AFTER,
        "{profile}: one commit per contract"
    );
    acknowledged
}

/// Contracts a fresh process finds after the cut (hot journals rolled back, WAL replayed):
/// None when the file itself is gone; 0 when it holds no contracts table any more.
fn contracts_after(work: &Path) -> Option<usize> {
    let path = work.join("sender.db");
    if !path.exists() {
        return None;
    }
    let conn = rusqlite::Connection::open(&path).expect("a file the cut left opens");
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'contracts'",
            [],
            |r| r.get(0),
        )
        .expect("the schema reads");
    if tables == 0 {
        return Some(0);
    }
    let n: i64 = conn
        .query_row("SELECT count(*) FROM contracts", [], |r| r.get(0))
        .expect("the contracts read");
    Some(n as usize)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Per cut style, the contracts found after each seed's cut (None: the file is gone).
type ByStyle = Vec<(Style, Vec<Option<usize>>)>;

/// Per cut style, the contracts that survived each seed's cut of one crashed run.
fn survivors(profile: &str) -> (usize, ByStyle) {
    let root = tempfile::tempdir().unwrap();
    let crashed = root.path().join("crashed");
    fs::create_dir(&crashed).unwrap();
    let acknowledged = crashed_sender(&crashed, profile);
    // A sentinel beside the work directories: no cut may touch it.
    let sentinel = root.path().join("outside.db");
    fs::write(&sentinel, b"not the run's").unwrap();
    let mut by_style = Vec::new();
    for &style in STYLES {
        let mut counts = Vec::new();
        let seeds = if style == Style::Drop { 1 } else { SEEDS };
        for seed in 0..seeds {
            let work = root.path().join(format!("{}-{seed}", style.name()));
            copy_dir(&crashed, &work);
            let before: Vec<_> = common::files(&work);
            let aftermath = Aftermath {
                work_dir: &work,
                point: "sender.after-commit",
            };
            power_loss(style, seed).after_crash(&aftermath).unwrap();
            let line = fs::read_to_string(work.join(POWER_CUTS_NAME)).unwrap();
            let summary: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
            if style == Style::Drop {
                println!("{profile} drop cut: {}", line.trim());
            }
            // The cut only removed or rewrote the run's files, brought back unlinked ones it
            // names, and recorded itself.
            let restored: Vec<&str> = summary["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["action"] == "restored")
                .map(|f| f["path"].as_str().unwrap())
                .collect();
            for file in common::files(&work) {
                let name = file.to_string_lossy();
                let allowed = before.contains(&file)
                    || name == POWER_CUTS_NAME
                    || restored.contains(&name.as_ref());
                assert!(allowed, "{name}");
            }
            assert!(
                !work.join("sender.db-shm").exists(),
                "shared memory is lost"
            );
            assert_eq!(summary["cut"], style.name());
            assert_eq!(summary["seed"], seed);
            counts.push(contracts_after(&work));
        }
        by_style.push((style, counts));
    }
    assert_eq!(fs::read(&sentinel).unwrap(), b"not the run's");
    // Without a cut (a process crash) every profile keeps every acknowledged commit: only
    // the power cut tells them apart.
    assert_eq!(contracts_after(&crashed), Some(acknowledged), "{profile}");
    (acknowledged, by_style)
}

fn show(profile: &str, acknowledged: usize, by_style: &ByStyle) {
    for (style, counts) in by_style {
        let shown: Vec<String> = counts
            .iter()
            .map(|c| c.map_or("gone".to_string(), |n| n.to_string()))
            .collect();
        println!(
            "{profile:<22} cut {:<6} acknowledged {acknowledged}, contracts after each seed's cut: {}",
            style.name(),
            shown.join(" ")
        );
    }
}

#[test]
fn wal_full_keeps_every_acknowledged_commit_under_every_cut() {
    let (acknowledged, by_style) = survivors("default");
    show("wal+full", acknowledged, &by_style);
    for (style, counts) in &by_style {
        for c in counts {
            assert!(
                c.is_some_and(|n| n >= acknowledged),
                "{}: {c:?}",
                style.name()
            );
        }
    }
}

#[test]
fn wal_normal_loses_acknowledged_commits_under_a_cut() {
    let (acknowledged, by_style) = survivors("sync-normal");
    show("wal+normal", acknowledged, &by_style);
    let drop = &by_style[0].1[0];
    assert!(drop.is_none_or(|n| n < acknowledged), "drop: {drop:?}");
    let lost = by_style
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| c.is_none_or(|n| n < acknowledged))
        .count();
    assert!(
        lost > 1,
        "a cut loses acknowledged commits in more than one style"
    );
}

#[test]
fn delete_full_can_lose_the_last_commit_and_extra_cannot() {
    let (acknowledged, by_style) = survivors("journal-delete");
    show("journal-delete+full", acknowledged, &by_style);
    for (style, counts) in &by_style {
        for c in counts {
            // The unlink of the last journal is all a cut can take: never an older commit.
            let n = c.unwrap_or_else(|| panic!("{}: the file survives", style.name()));
            assert!(n + 1 >= acknowledged, "{}: {n}", style.name());
        }
    }
    assert_eq!(
        by_style[0].1[0],
        Some(acknowledged - 1),
        "drop rolls back the last commit"
    );
    let (acknowledged, by_style) = survivors("journal-delete-extra");
    show("journal-delete+extra", acknowledged, &by_style);
    for (style, counts) in &by_style {
        for c in counts {
            assert!(
                c.is_some_and(|n| n >= acknowledged),
                "{}: {c:?}",
                style.name()
            );
        }
    }
}

#[test]
fn with_nothing_synced_after_the_wal_switch_a_drop_cut_takes_even_the_schema() {
    // The switch to WAL runs before `synchronous=OFF` is set, so the file and its header are
    // durable; the tables, created in the WAL, never were.
    let (acknowledged, by_style) = survivors("sync-off");
    show("sync-off", acknowledged, &by_style);
    assert_eq!(
        by_style[0].1[0].unwrap_or(0),
        0,
        "no contract table survives"
    );
    for (style, counts) in &by_style {
        assert!(
            counts.iter().all(|c| c.is_none_or(|n| n <= acknowledged)),
            "{}",
            style.name()
        );
    }
}

#[test]
fn a_bad_undo_log_path_or_store_profile_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = |env: (&str, &str)| {
        Command::new(BIN)
            .args(["sender", "--db", "s.db", "--generate", "1"])
            .env(env.0, env.1)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let output = run((LOG_ENV, "no/such/dir/power-undo.log"));
    assert_eq!(code(&output), 2);
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("crashlab: CRASHLAB_POWER_LOG: undo log no/such/dir"),
        "{err}"
    );
    let output = run(("CRASHLAB_STORE_PROFILE", "fastest"));
    assert_eq!(code(&output), 2);
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown store profile 'fastest'"), "{err}");
    assert!(!dir.path().join("s.db").exists(), "nothing left behind");
}

#[test]
fn many_processes_share_wal_through_the_shim_and_a_drop_cut_after_the_run_loses_nothing() {
    // Every role of a chaos run (sender, publisher, consumers, SIGKILLed at random and
    // restarted) opens its databases through the shim: locks, the -shm index and its
    // barriers are the unix VFS's own, so the run passes as it does without it.
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args([
            "chaos",
            "14",
            "--messages",
            "120",
            "--consumers",
            "3",
            "--kills",
            "6",
        ])
        .args(["--lease-ms", "300", "--no-trace", "--out", "ev"])
        .env(LOG_ENV, dir.path().join(LOG_NAME))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stdout(&output).contains("lost effects 0, duplicated effects 0"));
    // The log of many processes, several killed mid-run, reads back whole.
    let log = crashlab::power::undo::read(&dir.path().join(LOG_NAME)).unwrap();
    for db in ["sender.db", "queue.db", "receiver.db"] {
        let name = format!("ev.partial/db/{db}-wal");
        assert!(log.paths.contains(&name), "{name} in {:?}", log.paths);
    }
    // The run wrote in ev.partial and renamed it at the end: cut where the files were written.
    fs::rename(dir.path().join("ev"), dir.path().join("ev.partial")).unwrap();
    let db = dir.path().join("ev.partial/db");
    let args = ["verify", "--sender", "sender.db", "--queue", "queue.db"];
    let verify = || {
        let out = Command::new(BIN)
            .args(args)
            .args(["--receiver", "receiver.db", "--json", "--no-trace"])
            .current_dir(&db)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        common::readback(&out)
    };
    let before = verify();
    let summary =
        crashlab::power::cut::apply(dir.path(), &dir.path().join(LOG_NAME), Style::Drop, 0)
            .unwrap();
    assert!(summary.records > 0);
    // Every commit of WAL + FULL was synced before it returned: the cut takes none of them.
    assert_eq!(verify(), before);
    assert_eq!(before["receiver"]["inbox"], 120);
}

#[test]
fn the_next_step_recovers_from_the_cut_files_and_the_next_cut_starts_from_the_marker() {
    for (profile, lost_by_second_cut) in [("default", 0), ("journal-delete", 1)] {
        let dir = tempfile::tempdir().unwrap();
        let work = &dir.path().join("work");
        fs::create_dir(work).unwrap();
        let acknowledged = crashed_sender(work, profile);
        let cut = |seed| {
            let aftermath = Aftermath {
                work_dir: work,
                point: "sender.after-commit",
            };
            power_loss(Style::Drop, seed)
                .after_crash(&aftermath)
                .unwrap();
        };
        cut(0);
        // Counted on a copy: opening the files here would roll a hot journal back outside the
        // shim, and the next step is the one that must.
        let copy = dir.path().join("copy");
        copy_dir(work, &copy);
        let after_first = contracts_after(&copy).unwrap();
        assert!(after_first + 1 >= acknowledged, "{profile}: {after_first}");
        // The rebooted machine's next step: the sender runs again, through the shim, rolls a
        // hot journal back if there is one, and writes the rest.
        let output = Command::new(BIN)
            .args([
                "sender",
                "--db",
                "sender.db",
                "--generate",
                CONTRACTS,
                "--batch",
                "1",
            ])
            .arg("--no-trace")
            .env(LOG_ENV, work.join(LOG_NAME))
            .env("CRASHLAB_STORE_PROFILE", profile)
            .current_dir(work)
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{profile}: {}", stderr(&output));
        // Unlinks a later directory sync made durable leave the stash as they happen: what
        // stays is at most the last one (a journal, or the WAL of the last close).
        let stashed =
            fs::read_dir(work.join(crashlab::power::undo::STASH_DIR)).map_or(0, |d| d.count());
        assert!(stashed <= 1, "{profile}: {stashed} stashed files");
        let all: usize = CONTRACTS.parse().unwrap();
        assert_eq!(contracts_after(work), Some(all), "{profile}");
        cut(1);
        // The second cut acts on what came after the first: with FULL nothing is lost; with
        // DELETE + FULL the last journal's unlink is undone again and its commit rolls back.
        assert_eq!(
            contracts_after(work),
            Some(all - lost_by_second_cut),
            "{profile}"
        );
        let cuts = fs::read_to_string(work.join(POWER_CUTS_NAME)).unwrap();
        assert_eq!(cuts.lines().count(), 2, "{profile}");
    }
}
