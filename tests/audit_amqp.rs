//! The audit's checks of what roles on servers trace beside their SQL, on real evidence: a
//! fresh run of lab 14 on PostgreSQL + RabbitMQ audits PASS; one AMQP line changed (an ack
//! of a tag never delivered, a delivery of a publish nobody made, an ack removed so the
//! queue's ready count no longer follows) makes the audit FAIL (exit 1) with one line that
//! names the file and the line. Likewise lab f1's `SEQUENCE` and `HORIZON` lines, on a copy of
//! its archive. Each tamper fixes the file's digest in manifest.json, so only these checks
//! can catch it. One server start for the whole file.

mod common;
// Its helpers serve several test files; this one needs a few.
#[allow(dead_code)]
#[path = "stack_driver/place.rs"]
mod place;

use std::path::Path;

use common::{code, stdout};
use place::Place;

fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A copy of `from` as `name` with `file`'s first line holding `find` edited by `edit` (None:
/// removed) and its digest fixed up in manifest.json; the audit's output, after asserting it
/// FAILs with exit 1 and no digest finding.
fn tampered(
    place: &Place,
    from: &Path,
    name: &str,
    file: &str,
    find: &str,
    edit: Option<&dyn Fn(&str) -> String>,
) -> String {
    let dir = place.path().join(name);
    copy_dir(from, &dir);
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text
        .lines()
        .position(|l| l.contains(find))
        .unwrap_or_else(|| panic!("{name}: no line of {file} holds {find:?}"));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    match edit {
        Some(edit) => lines[at] = edit(&lines[at]),
        None => {
            lines.remove(at);
        }
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let manifest_path = dir.join("manifest.json");
    let mut manifest = common::json(&manifest_path);
    manifest["files"][file] = serde_json::Value::String(sha256_hex(&path));
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let out = place.run(&["audit", dir.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{name}: {text}");
    assert!(text.contains("FAIL"), "{name}: {text}");
    assert!(
        !text.contains("differs from manifest.json"),
        "{name}: the manifest was fixed up: {text}"
    );
    text
}

/// The one line of `text` holding every one of `words`.
fn finding<'a>(text: &'a str, words: &[&str]) -> &'a str {
    let found: Vec<&str> = text
        .lines()
        .filter(|l| words.iter().all(|w| l.contains(w)))
        .collect();
    assert_eq!(found.len(), 1, "one finding with {words:?}: {text}");
    found[0]
}

#[test]
fn a_stack_run_audits_pass_and_each_amqp_tamper_fails_naming_its_line() {
    let place = Place::new("amqpaudit");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--out",
        "ev",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert_eq!(place.settle(), Vec::<String>::new(), "servers left behind");
    let audited = place.run(&["audit", "ev"]);
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));
    let ev = place.path().join("ev");

    // An ack of a delivery tag the channel was never given.
    let text = tampered(
        &place,
        &ev,
        "ack-unknown",
        "consume-recover.stdout.txt",
        "AMQP ack ",
        Some(&|l: &str| l.replace("tag=1", "tag=9")),
    );
    let line = finding(&text, &["ack of delivery tag 9", "never delivered"]);
    assert!(
        line.starts_with("consume-recover.stdout.txt: consume-recover: line "),
        "{line}"
    );
    assert!(line.contains("`AMQP ack message=M1 tag=9`"), "{line}");

    // A delivery of a publish no process made.
    let text = tampered(
        &place,
        &ev,
        "deliver-unpublished",
        "consume-recover.stdout.txt",
        "AMQP deliver ",
        Some(&|l: &str| {
            let id = l.split(' ').find(|w| w.starts_with("publish=")).unwrap();
            l.replace(id, "publish=p1t1n1")
        }),
    );
    let line = finding(
        &text,
        &["publish p1t1n1", "no process of the scenario published"],
    );
    assert!(line.starts_with("consume-recover.stdout.txt: "), "{line}");

    // A relay's publish of a message id no committed INSERT wrote.
    let text = tampered(
        &place,
        &ev,
        "publish-unwritten",
        "publish-recover.stdout.txt",
        "AMQP publish ",
        Some(&|l: &str| l.replace("message=M1", "message=M7")),
    );
    finding(&text, &["publish of M7", "no committed INSERT"]);

    // An ack removed: the broker's ready count no longer follows the trace.
    let text = tampered(
        &place,
        &ev,
        "ack-removed",
        "consume-recover.stdout.txt",
        "AMQP ack ",
        None,
    );
    let line = finding(&text, &["messages after consume-recover", "ready messages"]);
    assert!(line.starts_with("database-files.json: "), "{line}");
    assert!(line.contains("the AMQP trace implies 1"), "{line}");
}

#[test]
fn relay_gap_facts_tampered_fail_naming_their_line() {
    let place = Place::new("relaygapaudit");
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("evidence/f1-relay-gap");
    let audited = place.run(&["audit", archive.to_str().unwrap()]);
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));

    // The sequence gave another id than the one the INSERT binds.
    let text = tampered(
        &place,
        &archive,
        "sequence",
        "last-id/writer-b.stdout.txt",
        "SEQUENCE ",
        Some(&|l: &str| {
            let (head, value) = l.rsplit_once(' ').unwrap();
            format!("{head} {}", value.parse::<i64>().unwrap() + 100)
        }),
    );
    let line = finding(&text, &["this INSERT does not bind"]);
    assert!(
        line.starts_with("last-id/writer-b.stdout.txt: last-id/writer-b: line "),
        "{line}"
    );

    // The horizon moved back from one poll to the next.
    let text = tampered(
        &place,
        &archive,
        "horizon",
        "xid-horizon/relay-2.stdout.txt",
        "HORIZON ",
        Some(&|_: &str| "HORIZON outbox 1".to_string()),
    );
    finding(&text, &["`HORIZON outbox 1`", "horizon 1, back from"]);
}
