//! `crashlab probe` against systems whose behaviour is known: lab 13's receiver keyed (every
//! check passes) and unkeyed (retries, lost replies and racers take effect twice), and the
//! Python example with its bug switched on (the concurrent check finds it) and off. Real
//! processes, real HTTP on 127.0.0.1, real SQLite files; no assertion on time.

mod common;
mod probing;

use std::fs;
use std::path::Path;
use std::process::Output;

use common::{code, crashlab, stderr, stdout};
use probing::{count, exchange, forge, records, require, row, Service};

/// Every check, as the table names them.
const CHECKS: [&str; 12] = [
    "first-request",
    "retry",
    "conflict",
    "missing-key",
    "key-too-long",
    "key-malformed",
    "concurrent",
    "reply-lost-reset",
    "reply-lost-close",
    "reply-lost-head",
    "reply-lost-body",
    "key-expiry",
];

/// Lab 13's receiver takes bare keys and answers 409 to a reused key.
const RECEIVER_FORM: [&str; 4] = ["--key-format", "bare", "--conflict-status", "409"];

const TOTAL: &str = "sqlite3 receiver.db 'select count(*) from effects'";

/// How a probe of the receiver counts effects.
#[derive(Clone, Copy)]
enum Count {
    /// Per key, by the receiver's own `GET /effect/{key}`.
    PerKey,
    /// All of them, by `sqlite3` on its database.
    Total,
}

/// `crashlab probe` of a receiver in its own form (bare keys, 409), with `more` options.
fn probe_receiver(d: &Path, receiver: &Service, count: Count, more: &[&str]) -> Output {
    let url = receiver.url("/effect");
    let per_key = receiver.url("/effect/{key}");
    let mut args = vec!["probe", url.as_str()];
    match count {
        Count::PerKey => args.extend(["--effects-url", &per_key, "--effects-pointer", "/effects"]),
        Count::Total => args.extend(["--effects-cmd", TOTAL]),
    }
    args.extend(RECEIVER_FORM);
    args.extend(more);
    crashlab(d, &args)
}

#[test]
fn the_keyed_receiver_passes_every_check_and_its_evidence_audits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let receiver = Service::receiver(d, "keyed");
    let more = ["--out", "ev", "--junit", "probe.xml"];
    let out = probe_receiver(d, &receiver, Count::PerKey, &more);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let table = stdout(&out);
    for check in CHECKS {
        let (verdict, line) = row(&table, check);
        let want = if check == "key-expiry" {
            "SKIP"
        } else {
            "PASS"
        };
        assert_eq!(verdict, want, "{line}");
    }
    assert!(
        table.contains("\nPASS: 11 of 12 checks passed, 1 skipped"),
        "{table}"
    );
    // The per-key count saw each keyed request once.
    assert!(
        row(&table, "concurrent").1.contains("200 x8, effect once"),
        "{table}"
    );
    let audit = crashlab(d, &["audit", "ev"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("PASS: probe of http://127.0.0.1:"),
        "{}",
        stdout(&audit)
    );
    let xml = fs::read_to_string(d.join("probe.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc.root_element().first_element_child().unwrap();
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert_eq!(suite.attribute("tests"), Some("12"));
    assert_eq!(suite.attribute("failures"), Some("0"));
    assert_eq!(suite.attribute("skipped"), Some("1"));
    // --json: the same verdicts, one document.
    let out = probe_receiver(d, &receiver, Count::PerKey, &["--out", "ev-json", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["checks"].as_array().unwrap().len(), 12);
    assert_eq!(doc["evidence"], "ev-json");
}

#[test]
fn a_retry_after_the_keys_lifetime_is_information_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The receiver forgets keys after 2 s, and says so; the probe retries after 2.5 s.
    let receiver = Service::receiver_with(d, "keyed", &["--key-ttl-ms", "2000"]);
    let more = ["--key-ttl-ms", "2000", "--out", "ev"];
    let out = probe_receiver(d, &receiver, Count::PerKey, &more);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let (verdict, line) = row(&stdout(&out), "key-expiry");
    assert_eq!(verdict, "INFO", "{line}");
    assert!(
        line.contains("retry 200 with another body, effects 2 (duplicate)"),
        "{line}"
    );
    assert!(
        stdout(&out).contains(", 1 for information;"),
        "{}",
        stdout(&out)
    );
    assert_eq!(code(&crashlab(d, &["audit", "ev"])), 0);
}

#[test]
fn the_unkeyed_receiver_fails_the_retries_with_duplicate() {
    require("sqlite3");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let receiver = Service::receiver(d, "unkeyed");
    let out = probe_receiver(d, &receiver, Count::Total, &["--out", "ev"]);
    assert_eq!(code(&out), 1, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let table = stdout(&out);
    let failing = [
        "retry",
        "conflict",
        "missing-key",
        "concurrent",
        "reply-lost-reset",
        "reply-lost-close",
        "reply-lost-head",
        "reply-lost-body",
    ];
    for check in CHECKS {
        let (verdict, line) = row(&table, check);
        let want = match check {
            "key-expiry" => "SKIP",
            c if failing.contains(&c) => "FAIL",
            _ => "PASS",
        };
        assert_eq!(verdict, want, "{line}");
    }
    let last = table.lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "FAIL: 8 of 12 checks failed: {}",
            failing.join(", ")
        )),
        "{last}"
    );
    assert!(
        last.contains("; duplicate in retry, concurrent, reply-lost-reset, reply-lost-close, reply-lost-head, reply-lost-body;"),
        "{last}"
    );
    assert!(
        row(&table, "concurrent")
            .1
            .contains("effects 8 (duplicate)"),
        "{table}"
    );
    // A failing run's evidence is evidence like any other: it audits PASS.
    let audit = crashlab(d, &["audit", "ev"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
}

#[test]
fn a_lost_reply_is_lost_after_the_receiver_committed_by_reset_and_by_close() {
    require("sqlite3");
    for mode in ["keyed", "unkeyed"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let receiver = Service::receiver(d, mode);
        let out = probe_receiver(d, &receiver, Count::Total, &["--out", "ev"]);
        assert_eq!(
            code(&out),
            if mode == "keyed" { 0 } else { 1 },
            "{}",
            stdout(&out)
        );
        drop(receiver);
        let exchanges = records(&d.join("ev/exchanges.jsonl"));
        let readings = records(&d.join("ev/effects.jsonl"));
        let log = fs::read_to_string(d.join("receiver.stdout.txt")).unwrap();
        for (check, seen) in [
            ("reply-lost-reset", "reset"),
            ("reply-lost-close", "closed"),
        ] {
            let lost = exchange(&exchanges, check, "lost");
            let proxy = &lost["proxy"];
            // The client saw the cut and no byte of a reply...
            assert_eq!(lost["outcome"], seen, "{mode} {check}: {lost}");
            assert!(lost["response"].is_null(), "{lost}");
            assert_eq!(proxy["sent_bytes"], 0);
            // ...after the receiver had answered whole,
            assert_eq!(proxy["upstream"], "response", "{proxy}");
            assert_eq!(proxy["upstream_response"]["status"], 200);
            let done = proxy["upstream_done_ms"].as_f64().unwrap();
            assert!(done <= proxy["cut_ms"].as_f64().unwrap(), "{proxy}");
            assert!(proxy["cut_ms"].as_f64().unwrap() <= lost["ended_ms"].as_f64().unwrap());
            // ...and had committed the effect: the database's count before the retry says so,
            let committed =
                count(&readings, check, "after-lost") - count(&readings, check, "before");
            assert_eq!(committed, 1, "{mode} {check}");
            // and so does the receiver's own trace, for this request's key.
            let key = lost["request"]["key"].as_str().unwrap().to_string();
            let commits = log
                .lines()
                .filter(|l| l.starts_with("COMMITTED receiver effect "))
                .filter(|l| l.ends_with(&format!(" key {key}")))
                .count();
            // Keyed: the retry was replayed; unkeyed: it ran again.
            let want = if mode == "keyed" { 1 } else { 2 };
            assert_eq!(commits, want, "{mode} {check} key {key}:\n{log}");
            let after = count(&readings, check, "after") - count(&readings, check, "before");
            assert_eq!(after, want as i64, "{mode} {check}");
        }
    }
}

#[test]
fn the_python_example_fails_with_its_bug_and_passes_without_it() {
    require("python3");
    require("sqlite3");
    for bug in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let shop = Service::python(d, bug);
        let url = shop.url("/payments");
        let effects = "sqlite3 shop.db 'select count(*) from payments'";
        let out = crashlab(d, &["probe", &url, "--effects-cmd", effects, "--out", "ev"]);
        let table = stdout(&out);
        if bug {
            assert_eq!(code(&out), 1, "{table}\n{}", stderr(&out));
            let last = table.lines().last().unwrap();
            assert!(
                last.starts_with(
                    "FAIL: 1 of 12 checks failed: concurrent; duplicate in concurrent;"
                ),
                "{table}"
            );
        } else {
            assert_eq!(code(&out), 0, "{table}\n{}", stderr(&out));
            assert_eq!(row(&table, "concurrent").0, "PASS", "{table}");
            // The draft's own forms: a quoted key, 422 for another body, 201 kept.
            assert!(
                row(&table, "conflict").1.contains("other body 422"),
                "{table}"
            );
        }
        let audit = crashlab(d, &["audit", "ev"]);
        assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    }
}

#[test]
fn a_changed_status_or_effects_count_fails_the_audit() {
    require("sqlite3");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let receiver = Service::receiver(d, "keyed");
    let out = probe_receiver(d, &receiver, Count::Total, &["--out", "ev"]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    drop(receiver);
    let copy = |name: &str| {
        let to = d.join(name);
        let status = std::process::Command::new("cp")
            .arg("-R")
            .arg(d.join("ev"))
            .arg(&to)
            .status();
        assert!(status.unwrap().success());
        to
    };
    // The retry's answer turned from 200 into 500.
    let status = copy("status");
    let text = fs::read_to_string(status.join("exchanges.jsonl")).unwrap();
    let retry = text
        .lines()
        .position(|l| l.contains(r#""check":"retry","step":"retry""#))
        .unwrap();
    let changed: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == retry {
                l.replacen(r#""status":200"#, r#""status":500"#, 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    forge(&status, "exchanges.jsonl", &(changed.join("\n") + "\n"));
    let audit = crashlab(d, &["audit", "status"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("probe.json: check retry: recorded PASS (first 200, retry 200 again with the same body, effect once), the exchanges and effects give FAIL"),
        "{}",
        stdout(&audit)
    );
    // One effect more after the concurrent check: a duplicate the record hid.
    let effects = copy("effects");
    let text = fs::read_to_string(effects.join("effects.jsonl")).unwrap();
    let changed: Vec<String> = text
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            if r["check"] == "concurrent" && r["at"] == "after" {
                let n = r["count"].as_i64().unwrap();
                l.replace(&format!(r#""count":{n}"#), &format!(r#""count":{}"#, n + 1))
            } else {
                l.to_string()
            }
        })
        .collect();
    forge(&effects, "effects.jsonl", &(changed.join("\n") + "\n"));
    let audit = crashlab(d, &["audit", "effects"]);
    assert_eq!(code(&audit), 1, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("check concurrent: recorded PASS")
            && stdout(&audit).contains("effects 2 (duplicate))"),
        "{}",
        stdout(&audit)
    );
    // Changed without the manifest: its digest says so first.
    fs::write(d.join("ev/effects.jsonl"), "").unwrap();
    let audit = crashlab(d, &["audit", "ev"]);
    assert_eq!(code(&audit), 1);
    assert!(
        stdout(&audit).contains("effects.jsonl: sha256"),
        "{}",
        stdout(&audit)
    );
}
