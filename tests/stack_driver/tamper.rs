//! Tampered `servers.json` of a run on servers, its digest in manifest.json rewritten so that
//! only the audit's own derivation of the kills and of `private` can catch the edit.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::common::{code, stdout};
use super::place::Place;

/// SHA-256 of a file's raw bytes, computed here, not by the code under test.
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

/// A copy of `from` named `name` in `place` with servers.json edited by `edit` and its
/// manifest digest fixed up; the audit's stdout, after asserting it FAILs on servers.json.
fn tampered(place: &Place, from: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    let dir = place.path().join(name);
    copy_dir(from, &dir);
    let path = dir.join("servers.json");
    let mut servers = super::common::json(&path);
    edit(&mut servers);
    std::fs::write(&path, serde_json::to_string_pretty(&servers).unwrap()).unwrap();
    let manifest_path = dir.join("manifest.json");
    let mut manifest = super::common::json(&manifest_path);
    manifest["files"]["servers.json"] = Value::String(sha256_hex(&path));
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let out = place.run(&["audit", dir.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{name}: {text}");
    assert!(text.contains("FAIL"), "{name}: {text}");
    assert!(text.contains("servers.json: "), "{name}: {text}");
    assert!(
        !text.contains("differs from manifest.json"),
        "{name}: the manifest was fixed up: {text}"
    );
    text
}

/// A copy of `from` named `name` in `place` with its kept dump `db/<db>` edited by `edit` and
/// its manifest digest fixed up; the audit's stdout, after asserting it FAILs on that dump.
pub(super) fn tampered_dump(
    place: &Place,
    from: &Path,
    name: &str,
    db: &str,
    edit: impl FnOnce(&str) -> String,
) -> String {
    let dir = place.path().join(name);
    copy_dir(from, &dir);
    let rel = format!("db/{db}");
    let path = dir.join(&rel);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(&text)).unwrap();
    let manifest_path = dir.join("manifest.json");
    let mut manifest = super::common::json(&manifest_path);
    assert!(manifest["files"][&rel].is_string(), "{manifest}");
    manifest["files"][&rel] = Value::String(sha256_hex(&path));
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let out = place.run(&["audit", dir.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(code(&out), 1, "{name}: {text}");
    assert!(text.contains("FAIL"), "{name}: {text}");
    assert!(text.contains(&format!("{rel}: ")), "{name}: {text}");
    assert!(
        !text.contains("differs from manifest.json"),
        "{name}: the manifest was fixed up: {text}"
    );
    text
}

/// An ATTACH put before `BEGIN;` of a dump: the audit refuses it at its line and the file it
/// names never appears (the dump is read, never run).
pub(super) fn attach_refused(place: &Place, from: &Path, name: &str) {
    let evil = place.path().join(format!("{name}-evil.db"));
    let attach = format!("ATTACH '{}' AS e; CREATE TABLE e.pwn(x);\n", evil.display());
    let text = tampered_dump(place, from, name, "sender", |dump| {
        let (header, rest) = dump.split_once('\n').unwrap();
        format!("{header}\n{attach}{rest}")
    });
    assert!(text.contains("line 2: "), "{text}");
    assert!(!evil.exists(), "the audit ran the dump's ATTACH: {text}");
}

#[test]
fn a_kept_dump_with_statements_of_its_own_audits_fail_and_runs_none() {
    let place = Place::new("dump");
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("evidence")
        .join("14-outbox-inbox-postgres-rabbitmq");
    attach_refused(&place, &archive, "attach");
    // A query that would never end, after COMMIT;: refused, so the audit ends.
    let endless =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c;\n";
    let text = tampered_dump(&place, &archive, "endless", "receiver", |dump| {
        format!("{dump}{endless}")
    });
    assert!(text.contains("after COMMIT;"), "{text}");
    let deleted = tampered_dump(&place, &archive, "rolled-back", "receiver", |dump| {
        dump.replace("COMMIT;\n", "DELETE FROM inbox;\nROLLBACK;\n")
    });
    assert!(deleted.contains("db/receiver: "), "{deleted}");
}

fn kills(servers: &mut Value) -> &mut Vec<Value> {
    servers["kills"].as_array_mut().unwrap()
}

#[test]
fn tampered_kills_and_private_servers_audit_fail() {
    let place = Place::new("tamper");
    let out = place.run(&[
        "driver",
        "14",
        "--stack",
        "postgres-rabbitmq",
        "--crash-mode",
        "server-kill",
        "--server",
        "postgres",
        "--out",
        "sk",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let sk: PathBuf = place.path().join("sk");
    let audited = place.run(&["audit", "sk"]);
    assert_eq!(code(&audited), 0, "{}", stdout(&audited));
    let recorded = super::common::json(&sk.join("servers.json"));
    assert!(
        recorded["kills"].as_array().unwrap().len() >= 2,
        "{recorded}"
    );

    tampered(&place, &sk, "none", |s| kills(s).clear());
    tampered(&place, &sk, "dropped", |s| {
        kills(s).remove(1);
    });
    tampered(&place, &sk, "other-server", |s| {
        kills(s)[0]["server"] = json!("rabbitmq")
    });
    tampered(&place, &sk, "moved", |s| {
        let point = kills(s)[1]["point"].clone();
        kills(s)[0]["point"] = point;
    });
    tampered(&place, &sk, "duplicated", |s| {
        let first = kills(s)[0].clone();
        kills(s).insert(0, first);
    });
    tampered(&place, &sk, "sk-given", |s| {
        s["servers"][0]["private"] = json!(false)
    });

    // The archive's run crashes with `exit`: it kills no server, and gives no server's URL.
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("evidence")
        .join("14-outbox-inbox-postgres-rabbitmq");
    let made_up = tampered(&place, &archive, "made-up", |s| {
        kills(s).push(json!({
            "server": "postgres",
            "point": recorded["kills"][0]["point"],
            "restart_wall_ms": 100.0,
        }))
    });
    assert!(made_up.contains("kills no server"), "{made_up}");
    let given = tampered(&place, &archive, "given", |s| {
        s["servers"][1]["private"] = json!(false)
    });
    assert!(given.contains("--amqp-url"), "{given}");
    assert_eq!(
        place.settle(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}
