//! The tamper suite, continued (tamper.rs has lab 14): a fresh lab 13 run and a small seeded
//! chaos run audit PASS, then each edit, on a fresh copy with the manifest re-hashed, must
//! make the audit FAIL and name the file changed.

mod common;
#[path = "tamper/support.rs"]
mod support;

use std::fs;
use std::path::Path;

use serde_json::json;

use common::*;
use support::*;

const P: &str = "processes.json";
const F: &str = "database-files.json";
const K: &str = "kills.json";
const C: &str = "chaos.json";

fn lab13_tampers() -> Vec<Tamper> {
    let kd = "keyed-dispatcher-crash";
    vec![
        tamper(
            "receiver key changed in the trace",
            &[&format!("{kd}/receiver.stdout.txt")],
            true,
            move |d| {
                replace(
                    d,
                    &format!("{kd}/receiver.stdout.txt"),
                    "INSERT INTO effects(key, body, applied_ms) VALUES ('K1'",
                    "INSERT INTO effects(key, body, applied_ms) VALUES ('K2'",
                )
            },
        ),
        tamper(
            "stdout swapped: a keyed and an unkeyed receiver",
            &[
                &format!("{kd}/receiver.stdout.txt"),
                "unkeyed-dispatcher-crash/receiver.stdout.txt",
            ],
            false,
            move |d| {
                swap_files(
                    d,
                    &format!("{kd}/receiver.stdout.txt"),
                    "unkeyed-dispatcher-crash/receiver.stdout.txt",
                )
            },
        ),
        tamper(
            "stderr swapped: dispatch-lost <-> dispatch-second",
            &[
                "keyed-receiver-crash/dispatch-lost.stderr.txt",
                "two-dispatchers/dispatch-second.stderr.txt",
            ],
            false,
            |d| {
                swap_files(
                    d,
                    "keyed-receiver-crash/dispatch-lost.stderr.txt",
                    "two-dispatchers/dispatch-second.stderr.txt",
                )
            },
        ),
        tamper(
            "READY line of another mode",
            &[&format!("{kd}/receiver.stdout.txt")],
            false,
            move |d| {
                replace(
                    d,
                    &format!("{kd}/receiver.stdout.txt"),
                    "mode=keyed",
                    "mode=unkeyed",
                )
            },
        ),
        tamper(
            "conflict message changed",
            &["key-conflict/dispatch-conflict.stderr.txt"],
            false,
            |d| {
                replace(
                    d,
                    "key-conflict/dispatch-conflict.stderr.txt",
                    "payload conflict",
                    "payload mismatch",
                )
            },
        ),
        tamper("processes: a receiver's --mode", &[P], false, move |d| {
            edit_json(d, P, |v| {
                let argv = process(v, &format!("{kd}/receiver"))["argv"]
                    .as_array_mut()
                    .unwrap();
                let at = argv.iter().position(|a| a == "keyed").unwrap();
                argv[at] = json!("unkeyed");
            })
        }),
        tamper("processes: a background crash's exit", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "keyed-receiver-crash/receiver-crash")["exit"] = json!(0)
            })
        }),
        tamper("database rows: frozen list emptied", &[F], false, |d| {
            edit_json(d, F, |v| {
                let row = v
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|r| r["frozen"] != json!([]))
                    .unwrap();
                row["frozen"] = json!([]);
            })
        }),
        tamper("database rows: an <end> row dropped", &[F], false, |d| {
            edit_json(d, F, |v| {
                let rows = v.as_array_mut().unwrap();
                let at = rows
                    .iter()
                    .position(|r| r["after_step"] == "<end>")
                    .unwrap();
                rows.remove(at);
            })
        }),
        tamper("results: observed output", &["results.json"], false, |d| {
            edit_json(d, "results.json", |v| {
                let step = v["steps"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|s| s["scenario"] == "key-conflict" && s["step"] == "dispatch-conflict")
                    .unwrap();
                step["observed"]["output"] = json!(false);
            })
        }),
    ]
}

/// The first log under `logs/` whose name starts with `prefix` and whose text passes `keep`.
fn log(dir: &Path, prefix: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut names: Vec<String> = fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".stdout.txt"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| format!("logs/{n}"))
        .find(|rel| keep(&fs::read_to_string(dir.join(rel)).unwrap()))
        .unwrap_or_else(|| panic!("no log {prefix}… as wanted"))
}

/// Add 1 to the amount in the first line starting with `prefix` (`VALUES ('C000041', 668`).
fn bump_amount(dir: &Path, rel: &str, prefix: &str) {
    let text = fs::read_to_string(dir.join(rel)).unwrap();
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
    let at = line.find("', ").unwrap() + 3;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let amount: i64 = digits.parse().unwrap();
    let changed = format!(
        "{}{}{}",
        &line[..at],
        amount + 1,
        &line[at + digits.len()..]
    );
    replace(dir, rel, line, &changed);
}

fn with_amount(text: &str) -> bool {
    text.contains("INSERT INTO inbox(")
}

fn chaos_tampers(run: &Path) -> Vec<Tamper> {
    // Which consumer applied what is up to the scheduler: take one that applied something,
    // and a log of the other that claims under its own id.
    let applied = log(run, "consumer-c", with_amount);
    let other_prefix = if applied.starts_with("logs/consumer-c1.") {
        "consumer-c2"
    } else {
        "consumer-c1"
    };
    let other = log(run, other_prefix, |t| t.contains("claimed_by = '"));
    let sender = log(run, "sender", |t| t.contains("INSERT INTO contracts("));
    vec![
        tamper(
            "chaos log: an amount in a consumer's trace",
            &[&applied],
            false,
            {
                let applied = applied.clone();
                move |d| bump_amount(d, &applied, "SQL receiver INSERT INTO ledger(")
            },
        ),
        tamper(
            "chaos log: a sender's contract amount",
            &[&sender],
            false,
            {
                let sender = sender.clone();
                move |d| bump_amount(d, &sender, "SQL sender INSERT INTO contracts(")
            },
        ),
        tamper(
            "chaos logs swapped between consumers",
            &[&applied, &other],
            false,
            {
                let (a, b) = (applied.clone(), other.clone());
                move |d| swap_files(d, &a, &b)
            },
        ),
        tamper("chaos log: a POINT of another phase", &[&sender], false, {
            let sender = sender.clone();
            move |d| replace(d, &sender, "POINT sender.", "POINT consumer.")
        }),
        tamper("chaos log deleted", &[&applied, P], false, {
            let applied = applied.clone();
            move |d| fs::remove_file(d.join(&applied)).unwrap()
        }),
        tamper(
            "chaos log added",
            &["logs/consumer-c9.1.stdout.txt"],
            false,
            |d| {
                fs::write(
                    d.join("logs/consumer-c9.1.stdout.txt"),
                    "CONSUMED applied=0 duplicates=0 rejected=0\n",
                )
                .unwrap()
            },
        ),
        tamper("chaos argv: --lease-ms", &[P], false, |d| {
            edit_json(d, P, |v| {
                let argv = v["processes"][0]["argv"].as_array_mut().unwrap();
                argv.push(json!("--lease-ms"));
                argv.push(json!("1"));
            })
        }),
        tamper("chaos command: seed", &[P, C], false, |d| {
            edit_json(d, P, |v| {
                let cmd = v["command"].as_array_mut().unwrap();
                let at = cmd.iter().position(|a| a == "--seed").unwrap();
                cmd[at + 1] = json!("4");
            })
        }),
        tamper("chaos kills: landed flipped", &[K], false, |d| {
            edit_json(d, K, |v| {
                v[0]["landed"] = json!(!v[0]["landed"].as_bool().unwrap())
            })
        }),
        tamper("chaos kills: at_units", &[K], false, |d| {
            edit_json(d, K, |v| {
                v[0]["at_units"] = json!(v[0]["at_units"].as_u64().unwrap() + 1)
            })
        }),
        tamper(
            "chaos processes: a kill recorded as a clean exit",
            &[P, K],
            false,
            |d| {
                edit_json(d, P, |v| {
                    let p = v["processes"]
                        .as_array_mut()
                        .unwrap()
                        .iter_mut()
                        .find(|p| p["signal"] == 9)
                        .unwrap();
                    p["exit"] = json!(0);
                    p["signal"] = json!(null);
                    p["expected_exit"] = json!(0);
                    p["crash_mode"] = json!(null);
                })
            },
        ),
        tamper("chaos database rows: a row's bytes", &[F], false, |d| {
            edit_json(d, F, |v| {
                v[0]["bytes"] = json!(v[0]["bytes"].as_u64().unwrap() + 4096)
            })
        }),
        tamper("chaos report: a field added", &[C], false, |d| {
            edit_json(d, C, |v| v["verdict"] = json!("2 effects lost"))
        }),
        tamper("chaos report: kills_done", &[C], false, |d| {
            edit_json(d, C, |v| {
                v["kills_done"] = json!(v["kills_done"].as_u64().unwrap() + 1)
            })
        }),
    ]
}

#[test]
fn every_lab13_tamper_fails_the_audit_and_names_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(tmp.path(), &["driver", "13", "--out", "run"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let scratch = tmp.path().join("scratch");
    fs::create_dir(&scratch).unwrap();
    let misses = run_all(&tmp.path().join("run"), &scratch, &lab13_tampers());
    assert!(
        misses.is_empty(),
        "{} missed:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

#[test]
fn every_chaos_tamper_fails_the_audit_and_names_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "chaos",
        "14",
        "--messages",
        "60",
        "--consumers",
        "2",
        "--kills",
        "5",
        "--seed",
        "3",
        "--out",
        "run",
    ];
    let out = crashlab(tmp.path(), &args);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let run = tmp.path().join("run");
    let scratch = tmp.path().join("scratch");
    fs::create_dir(&scratch).unwrap();
    let misses = run_all(&run, &scratch, &chaos_tampers(&run));
    assert!(
        misses.is_empty(),
        "{} missed:\n{}",
        misses.len(),
        misses.join("\n")
    );
}
