//! `--json` on the report commands this file covers (driver, points, digest, audit): stdout is
//! one JSON document and nothing else, and its fields say what the evidence says.

mod common;

use std::path::Path;

use common::{code, crashlab, json, stderr, stdout};

/// The whole of stdout as one JSON document (trailing whitespace aside).
fn document(output: &std::process::Output) -> serde_json::Value {
    let text = stdout(output);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{text}"))
}

#[test]
fn driver_json_is_one_document_that_agrees_with_the_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &["driver", "14", "--out", "run", "--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let doc = document(&output);
    // No table anywhere: not on stdout (it parsed), not on stderr.
    assert!(!stderr(&output).contains("wall_ms"), "{}", stderr(&output));
    let results = json(&dir.path().join("run/results.json"));
    let processes = json(&dir.path().join("run/processes.json"));
    assert_eq!(doc["verdict"], "PASS");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["lab"], "14-outbox-inbox");
    assert_eq!(doc["evidence"], "run");
    assert_eq!(doc["failed_steps"], 0);
    let steps = doc["steps"].as_array().unwrap();
    let recorded = results["steps"].as_array().unwrap();
    let procs = processes["processes"].as_array().unwrap();
    assert_eq!(steps.len(), recorded.len());
    assert_eq!(doc["processes"], procs.len());
    assert_eq!(doc["total_wall_ms"], processes["total_wall_ms"]);
    for ((s, r), p) in steps.iter().zip(recorded).zip(procs) {
        assert_eq!(s["step"], r["step"]);
        assert_eq!(s["ok"], r["ok"]);
        assert_eq!(s["exit"], p["exit"]);
        assert_eq!(s["expected_exit"], p["expected_exit"]);
        assert_eq!(s["crash_point"], p["crash_point"]);
    }
    // A crash step says where it crashed; a readback step what it read.
    let crashed = steps
        .iter()
        .find(|s| s["crash_point"].is_string())
        .expect("lab 14 has crash steps");
    assert_eq!(
        crashed["state"],
        format!("CRASH {}", crashed["crash_point"].as_str().unwrap())
    );
    let scenarios = doc["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1);
    assert_eq!(scenarios[0]["ok"], true);
    assert!(
        scenarios[0]["readback"]["receiver"]["inbox"].is_i64(),
        "{}",
        scenarios[0]
    ); // A run made with --json is evidence like any other: its recorded command audits.
    let run = dir.path().join("run");
    let audit = crashlab(Path::new("."), &["audit", run.to_str().unwrap()]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
}

#[test]
fn a_failing_driver_run_says_fail_in_its_json_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(
        dir.path(),
        &[
            "driver",
            "14",
            "--out",
            "moved",
            "--json",
            "--move-crash",
            "business-crash=sender.before-commit",
        ],
    );
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let doc = document(&output);
    let results = json(&dir.path().join("moved/results.json"));
    let failed_recorded = results["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["ok"] == false)
        .count();
    assert!(failed_recorded > 0);
    assert_eq!(doc["verdict"], "FAIL");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["failed_steps"], failed_recorded);
    assert_eq!(
        doc["moved_crashes"],
        serde_json::json!(["business-crash=sender.before-commit"])
    );
    let failed: Vec<&serde_json::Value> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["ok"] == false)
        .collect();
    assert_eq!(failed.len(), failed_recorded);
    assert!(failed
        .iter()
        .all(|s| !s["problems"].as_array().unwrap().is_empty()));
    assert_eq!(doc["scenarios"][0]["ok"], false);
}

#[test]
fn driver_json_of_a_lab_with_scenarios_lists_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &["driver", "13", "--out", "run", "--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let doc = document(&output);
    assert_eq!(doc["lab"], "13-http-dispatch");
    let scenarios = doc["scenarios"].as_array().unwrap();
    assert!(scenarios.len() > 1);
    let mut names: Vec<&str> = scenarios
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "each scenario once");
    // Every step belongs to a listed scenario.
    for step in doc["steps"].as_array().unwrap() {
        assert!(
            names.contains(&step["scenario"].as_str().unwrap()),
            "{step}"
        );
    }
    // Each scenario in Jepsen's words, as results.json has it: the unkeyed resend shows the
    // duplicate it expects, and its bad anomalies are exactly those.
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/results.json")).unwrap(),
    )
    .unwrap();
    for s in scenarios {
        let name = s["name"].as_str().unwrap();
        let recorded = results["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["scenario"] == name)
            .unwrap_or_else(|| panic!("{name} has findings in results.json"));
        assert_eq!(s["bad_anomalies"], recorded["bad_anomalies"], "{name}");
        assert_eq!(s["anomalies"], recorded["anomalies"], "{name}");
    }
    let unkeyed = scenarios
        .iter()
        .find(|s| s["name"] == "unkeyed-dispatcher-crash")
        .unwrap();
    assert_eq!(
        unkeyed["expected_anomalies"],
        serde_json::json!(["duplicate"])
    );
    assert_eq!(unkeyed["bad_anomalies"][0]["anomaly"], "duplicate");
    assert_eq!(unkeyed["ok"], true);
}

#[test]
fn driver_json_with_bad_input_prints_nothing_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &["driver", "99", "--json"]);
    assert_eq!(code(&output), 2);
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert!(stderr(&output).starts_with("crashlab: "));
}

#[test]
fn points_json_is_one_document_with_every_lab_and_point() {
    let dir = tempfile::tempdir().unwrap();
    let all = document(&crashlab(dir.path(), &["points", "--json"]));
    let labs = all.as_array().unwrap();
    assert_eq!(labs.len(), crashlab::labs::LABS.len());
    let table = stdout(&crashlab(dir.path(), &["points"]));
    // One document per lab the table lists (`lab 14 (outbox-inbox; sqlite, …):`), in its
    // order; the two labs of the contract among them.
    let listed: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("lab ")?.strip_suffix("):"))
        .map(|l| l.split("; ").next().unwrap().replacen(" (", "-", 1))
        .collect();
    let named: Vec<&str> = labs.iter().map(|l| l["lab"].as_str().unwrap()).collect();
    assert_eq!(named, listed);
    assert!(named.starts_with(&["14-outbox-inbox", "13-http-dispatch"]));
    for lab in labs {
        for point in lab["points"].as_array().unwrap() {
            let name = point["name"].as_str().unwrap();
            // The JSON and the table list the same points.
            assert!(table.contains(name), "{name} not in the table");
        }
    }
    let one = document(&crashlab(dir.path(), &["points", "13", "--json"]));
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["lab"], "13-http-dispatch");
}

#[test]
fn digest_json_is_one_document_that_agrees_with_the_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sent = crashlab(
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
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    let empty = crashlab(d, &["sender", "--db", "other.db", "--generate", "2"]);
    assert_eq!(code(&empty), 0);
    let doc = document(&crashlab(d, &["digest", "sender.db", "other.db", "--json"]));
    let files = doc.as_array().unwrap();
    assert_eq!(files.len(), 2);
    let lines = stdout(&crashlab(d, &["digest", "sender.db", "other.db"]));
    for (file, line) in files.iter().zip(lines.lines()) {
        let name = file["file"].as_str().unwrap();
        assert_eq!(
            file["bytes"].as_u64().unwrap(),
            std::fs::metadata(d.join(name)).unwrap().len()
        );
        assert_eq!(
            line,
            format!(
                "{name} bytes={} sha256={} logical_sha256={}",
                file["bytes"],
                file["sha256"].as_str().unwrap(),
                file["logical_sha256"].as_str().unwrap()
            )
        );
    }
    assert_ne!(files[0]["logical_sha256"], files[1]["logical_sha256"]);
    // One bad file: nothing on stdout, in either form.
    let bad = crashlab(d, &["digest", "sender.db", "missing.db", "--json"]);
    assert_eq!(code(&bad), 2);
    assert!(stdout(&bad).is_empty(), "{}", stdout(&bad));
}

#[test]
fn audit_json_is_one_document_and_nothing_else_also_with_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let run = crashlab(dir.path(), &["driver", "14", "--out", "run"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let path = dir.path().join("run");
    let path = path.to_str().unwrap();
    let plain = document(&crashlab(Path::new("."), &["audit", path, "--json"]));
    assert_eq!(plain["ok"], true);
    assert_eq!(plain["processes"], 12);
    let rerun = crashlab(Path::new("."), &["audit", path, "--rerun", "--json"]);
    assert_eq!(code(&rerun), 0, "{}", stderr(&rerun));
    let rerun = document(&rerun);
    assert_eq!(rerun["ok"], true);
    assert!(rerun.get("rerun").is_some(), "{rerun}");
    // A failing audit is one document too, with its problems in it.
    let results = dir.path().join("run/results.json");
    let mut text = std::fs::read_to_string(&results).unwrap();
    text.push('\n');
    std::fs::write(&results, text).unwrap();
    for more in [&[][..], &["--rerun"][..]] {
        let mut args = vec!["audit", path, "--json"];
        args.extend_from_slice(more);
        let failed = crashlab(Path::new("."), &args);
        assert_eq!(code(&failed), 1, "{more:?}: {}", stderr(&failed));
        let failed = document(&failed);
        assert_eq!(failed["ok"], false, "{more:?}");
        assert!(
            !failed["problems"].as_array().unwrap().is_empty(),
            "{more:?}"
        );
    }
}
