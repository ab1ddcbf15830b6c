//! What the output says: counts with their noun in the right number, readback fields that
//! read as what they count, and one rule for a 0-byte database file across every role.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{code, crashlab, readback, stderr, stdout};

const LAB14_VERIFY: &[&str] = common::VERIFY_14;

const LAB13_VERIFY: &[&str] = &[
    "dispatch-verify",
    "--intents",
    "intents.db",
    "--receipts",
    "receipts.db",
    "--history",
    "history.db",
    "--receiver",
    "receiver.db",
];

fn size(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

#[test]
fn counts_of_one_are_singular_and_others_plural() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let one = crashlab(
        d,
        &[
            "sender",
            "--db",
            "sender.db",
            "--contract",
            "C1",
            "--amount",
            "5",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert!(
        stdout(&one).ends_with("SENT 1 contract\n"),
        "{}",
        stdout(&one)
    );
    let two = crashlab(d, &["sender", "--db", "two.db", "--generate", "2"]);
    assert!(
        stdout(&two).ends_with("SENT 2 contracts\n"),
        "{}",
        stdout(&two)
    );
    let published = crashlab(
        d,
        &["publisher", "--sender", "sender.db", "--queue", "queue.db"],
    );
    assert_eq!(code(&published), 0, "{}", stderr(&published));
    assert!(
        stdout(&published).ends_with("PUBLISHED 1 message\n"),
        "{}",
        stdout(&published)
    );
    // The driver's verdict and the audit's: one conflict, three crashes, twelve processes.
    let run = crashlab(d, &["driver", "14", "--out", "run"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    assert!(
        stdout(&run).contains("PASS: 12 processes,"),
        "{}",
        stdout(&run)
    );
    let audit = crashlab(d, &["audit", "run"]);
    assert!(
        stdout(&audit).contains("12 processes, 3 crashes, 1 conflict,"),
        "{}",
        stdout(&audit)
    );
    // Two crashes moved away: one is left, and the audit says "1 crash".
    let moved = crashlab(
        d,
        &[
            "driver",
            "14",
            "--out",
            "moved",
            "--move-crash",
            "business-crash=none",
            "--move-crash",
            "publish-crash=none",
        ],
    );
    // The moved crashes break expectations (a study); the audit passes what was recorded.
    assert_eq!(code(&moved), 1, "{}", stdout(&moved));
    let audit = crashlab(d, &["audit", "moved"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains(", 1 crash, 1 conflict,"),
        "{}",
        stdout(&audit)
    );
}

#[test]
fn a_zero_byte_file_is_an_empty_database_to_a_reading_role() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["sender.db", "queue.db", "receiver.db"] {
        fs::write(d.join(name), b"").unwrap();
    }
    let read = crashlab(d, LAB14_VERIFY);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    let state = readback(&read);
    assert_eq!(state["sender"]["contracts"], 0);
    assert_eq!(state["queue"]["deliveries"], 0);
    assert_eq!(state["receiver"]["inbox"], 0);
    assert_eq!(state["absent"], serde_json::json!([]), "they exist");
    for name in ["sender.db", "queue.db", "receiver.db"] {
        assert_eq!(size(&d.join(name)), 0, "{name} was not written");
        assert!(!d.join(format!("{name}-wal")).exists(), "{name}-wal");
    }
    // Lab 13's reader, the same rule.
    for name in ["intents.db", "receipts.db", "history.db", "receiver.db"] {
        fs::write(d.join(name), b"").unwrap();
    }
    let mut args = LAB13_VERIFY.to_vec();
    args.push("--json");
    let read = crashlab(d, &args);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    let state = readback(&read);
    assert_eq!(state["intents"]["intents"], 0);
    assert_eq!(state["receiver"]["effects"], 0);
    assert_eq!(size(&d.join("intents.db")), 0);
    // A 0-byte file with frames beside it is no state a role leaves, and SQLite would delete
    // that WAL on open: reading and writing roles refuse the pair and leave both as they are.
    fs::write(d.join("sender.db-wal"), vec![7u8; 4096]).unwrap();
    let sender = [
        "sender",
        "--db",
        "sender.db",
        "--contract",
        "R1",
        "--amount",
        "25",
        "--message",
        "M1",
    ];
    for args in [LAB14_VERIFY, &sender[..]] {
        let refused = crashlab(d, args);
        assert_eq!(code(&refused), 2, "{args:?}: {}", stdout(&refused));
        assert!(
            stderr(&refused).contains("is 0 bytes with a non-empty sender.db-wal beside it"),
            "{}",
            stderr(&refused)
        );
        assert_eq!(size(&d.join("sender.db")), 0);
        assert_eq!(fs::read(d.join("sender.db-wal")).unwrap(), vec![7u8; 4096]);
    }
    fs::remove_file(d.join("sender.db-wal")).unwrap();
    // A file with one byte in it is judged by its contents: not a database.
    fs::write(d.join("sender.db"), b"x").unwrap();
    let refused = crashlab(d, LAB14_VERIFY);
    assert_eq!(code(&refused), 2, "{}", stdout(&refused));
    assert!(
        stderr(&refused).starts_with("crashlab: sender database sender.db"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_zero_byte_file_is_an_empty_database_to_a_writing_role() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("sender.db"), b"").unwrap();
    let sent = crashlab(
        d,
        &[
            "sender",
            "--db",
            "sender.db",
            "--contract",
            "C1",
            "--amount",
            "7",
            "--message",
            "M1",
        ],
    );
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    assert!(size(&d.join("sender.db")) > 0);
    let read = crashlab(d, LAB14_VERIFY);
    assert_eq!(code(&read), 0, "{}", stderr(&read));
    let state = readback(&read);
    assert_eq!(state["sender"]["contracts"], 1);
    assert_eq!(state["sender"]["outbox_pending"], 1);
    // Lab 13's writer of intents, the same rule.
    fs::write(d.join("intents.db"), b"").unwrap();
    let intent = crashlab(
        d,
        &[
            "intent",
            "--intents",
            "intents.db",
            "--key",
            "K1",
            "--body",
            "{}",
        ],
    );
    assert_eq!(code(&intent), 0, "{}", stderr(&intent));
    let mut args = LAB13_VERIFY.to_vec();
    args.push("--json");
    let state = readback(&crashlab(d, &args));
    assert_eq!(state["intents"]["intents"], 1);
}

/// A keyed receiver started by the test, killed when dropped.
struct Receiver(Child);

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        let log = fs::File::create(dir.join("receiver.stdout.txt")).unwrap();
        let child = Command::new(common::BIN)
            .args([
                "receiver",
                "--db",
                "receiver.db",
                "--mode",
                "keyed",
                "--port-file",
                "receiver.port",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("the receiver starts");
        let mut receiver = Receiver(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let out = fs::read_to_string(dir.join("receiver.stdout.txt")).unwrap_or_default();
            if out.lines().any(|l| l.starts_with("READY ")) {
                return receiver;
            }
            assert!(receiver.0.try_wait().unwrap().is_none(), "receiver ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no READY line within 20 s");
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_delivered_intent_reads_as_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut json_args = LAB13_VERIFY.to_vec();
    json_args.push("--json");
    let intent = |key: &str| {
        let out = crashlab(
            d,
            &[
                "intent",
                "--intents",
                "intents.db",
                "--key",
                key,
                "--body",
                "{\"a\":1}",
            ],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    let dispatch = || {
        let out = crashlab(
            d,
            &[
                "dispatcher",
                "--intents",
                "intents.db",
                "--receipts",
                "receipts.db",
                "--history",
                "history.db",
                "--port-file",
                "receiver.port",
            ],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    };
    let _receiver = Receiver::start(d);
    intent("K1");
    let before = readback(&crashlab(d, &json_args));
    assert_eq!(before["intents"]["undelivered"], 1, "{before}");
    dispatch();
    let after = readback(&crashlab(d, &json_args));
    assert_eq!(after["intents"]["intents"], 1);
    assert_eq!(after["receipts"]["receipts"], 1);
    assert_eq!(after["intents"]["undelivered"], 0, "{after}");
    assert!(after["intents"].get("pending").is_none(), "{after}");
    let line = stdout(&crashlab(d, LAB13_VERIFY));
    assert!(
        line.trim_end()
            .ends_with("intents 1 undelivered 0 unknown 0 attempts 1"),
        "{line}"
    );
    // A second intent: only it is owed; the delivered one stays delivered.
    intent("K2");
    let more = readback(&crashlab(d, &json_args));
    assert_eq!(more["intents"]["intents"], 2);
    assert_eq!(more["intents"]["undelivered"], 1, "{more}");
    dispatch();
    let done = readback(&crashlab(d, &json_args));
    assert_eq!(done["intents"]["undelivered"], 0, "{done}");
}
