//! Helpers shared by the integration tests: they run the built binary as a user would.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_crashlab");

pub fn crashlab(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the crashlab binary runs")
}

pub fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Run the lab 14 driver into `dir/name`; returns the output and the evidence path.
pub fn driver(dir: &Path, name: &str, more: &[&str]) -> (Output, PathBuf) {
    let mut args = vec!["driver", "14", "--out", name];
    args.extend_from_slice(more);
    let output = crashlab(dir, &args);
    (output, dir.join(name))
}

pub fn json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Write `value` as `dir/rel` and re-hash its manifest entry, as a careful forger would: only
/// the semantic checks can then catch the edit.
pub fn forge_json(dir: &Path, rel: &str, value: &serde_json::Value) {
    std::fs::write(dir.join(rel), serde_json::to_vec_pretty(value).unwrap()).unwrap();
    forge_manifest_entry(dir, rel);
}

/// Re-hash `dir/rel`'s entry in `dir/manifest.json` to the file as it now is.
pub fn forge_manifest_entry(dir: &Path, rel: &str) {
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(std::fs::read(dir.join(rel)).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join("manifest.json");
    let mut manifest = json(&path);
    manifest["files"][rel] = serde_json::Value::String(digest);
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
}

/// The readback JSON: the last stdout line of `verify --json`.
pub fn readback(output: &Output) -> serde_json::Value {
    let text = stdout(output);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("a readback JSON line");
    serde_json::from_str(line).expect("readback JSON parses")
}

/// Lab 14's readback of the contract's three files, as JSON.
pub const VERIFY_14: &[&str] = &[
    "verify",
    "--sender",
    "sender.db",
    "--queue",
    "queue.db",
    "--receiver",
    "receiver.db",
    "--json",
];

pub fn verify(dir: &Path) -> serde_json::Value {
    let output = crashlab(dir, VERIFY_14);
    assert_eq!(code(&output), 0, "verify failed: {}", stderr(&output));
    readback(&output)
}

/// Every file under `dir`, relative.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("listing") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Pids of live processes whose environment holds `CRASHLAB_TEST_MARK=mark`: every child
/// of a run inherits the mark, so none of them may be listed once the run is over.
pub fn marked_processes(mark: &str) -> Vec<String> {
    let needle = format!("CRASHLAB_TEST_MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if status.contains("State:\tZ") {
            continue;
        }
        if environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            found.push(name);
        }
    }
    found
}

/// The test cases of a JUnit report, held to the shape the JUnit XML schema gives:
/// `testsuites` > `testsuite` > `testcase` (name, classname, time), at most one `failure`
/// (message, type) or `skipped` each, and counts that add up. (name, failure message and
/// text) per case.
pub fn junit(path: &Path) -> Vec<(String, Option<(String, String)>)> {
    let xml = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let number = |n: roxmltree::Node, a: &str| -> f64 {
        n.attribute(a)
            .unwrap_or_else(|| panic!("{} has no {a}", n.tag_name().name()))
            .parse()
            .unwrap_or_else(|_| panic!("{a} is no number"))
    };
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert!(suite.attribute("name").is_some_and(|n| !n.is_empty()));
    let mut out = Vec::new();
    let (mut failures, mut skipped) = (0.0, 0.0);
    for case in suite.children().filter(|n| n.is_element()) {
        assert_eq!(case.tag_name().name(), "testcase");
        assert!(case.attribute("name").is_some_and(|n| !n.is_empty()));
        assert!(case.attribute("classname").is_some_and(|n| !n.is_empty()));
        assert!(number(case, "time") >= 0.0);
        let mut failure = None;
        for child in case.children().filter(|n| n.is_element()) {
            match child.tag_name().name() {
                "failure" => {
                    assert!(failure.is_none(), "one failure per case");
                    assert_eq!(child.attribute("type"), Some("failure"));
                    let message = child.attribute("message").unwrap().to_string();
                    failure = Some((message, child.text().unwrap_or("").to_string()));
                    failures += 1.0;
                }
                "skipped" => skipped += 1.0,
                "system-out" => {}
                other => panic!("<{other}> is not a testcase's child"),
            }
        }
        out.push((case.attribute("name").unwrap().to_string(), failure));
    }
    // <testsuites> carries only what the schema CI systems read allows there (Jenkins xUnit's
    // junit-10.xsd): name, time, tests, failures, disabled, errors; `skipped` is a suite's.
    for a in root.attributes() {
        assert!(
            ["name", "time", "tests", "failures", "disabled", "errors"].contains(&a.name()),
            "<testsuites {}=…> is not in the schema",
            a.name()
        );
    }
    assert_eq!(number(suite, "skipped"), skipped);
    for n in [root, suite] {
        assert_eq!(number(n, "tests"), out.len() as f64);
        assert_eq!(number(n, "failures"), failures);
        assert_eq!(number(n, "errors"), 0.0);
        assert!(number(n, "time") >= 0.0);
    }
    out
}
