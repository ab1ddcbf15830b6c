//! explore in shards (`--shard hash:K/N`) merged by `crashlab merge`: the same verdict and
//! the same case statuses as the unsharded run, an audit that names the shards, and each
//! refusal of merge in one line, exit 2, nothing written.

mod common;

use std::path::{Path, PathBuf};
use std::process::Child;

use common::{code, crashlab, json, stderr, stdout, BIN};
use serde_json::Value;

/// Start `explore 14 ARGS --shard hash:K/N --out sK` for every K at once, as N CI jobs.
fn shards(dir: &Path, n: u32, args: &[&str]) -> Vec<PathBuf> {
    let children: Vec<(Child, PathBuf)> = (1..=n)
        .map(|k| {
            let out = format!("s{k}");
            let child = std::process::Command::new(BIN)
                .current_dir(dir)
                .args(["explore", "14", "--jobs", "1", "--out", &out])
                .args(["--shard", &format!("hash:{k}/{n}")])
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("crashlab starts");
            (child, dir.join(out))
        })
        .collect();
    children
        .into_iter()
        .map(|(child, out)| {
            let ended = child.wait_with_output().expect("the shard ends");
            assert!(
                out.join("shard.json").is_file(),
                "{}: {}",
                out.display(),
                String::from_utf8_lossy(&ended.stderr)
            );
            out
        })
        .collect()
}

/// (variant, point, hit, status, invariants, counts, bad anomalies) of every case.
fn statuses(report: &Value) -> Vec<String> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            format!(
                "{} {} @{} {} {} {} {}",
                c["variant"],
                c["point"],
                c["hit"],
                c["status"],
                c["invariants"],
                c["counts"],
                c["bad_anomalies"]
            )
        })
        .collect()
}

fn names(dirs: &[PathBuf]) -> Vec<String> {
    dirs.iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Shards merged give the unsharded run's verdict, case for case; the merge audits PASS
/// and names its shards.
fn merged_equals_unsharded(args: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let shards = shards(dir, 4, args);
    let mut whole = vec!["explore", "14", "--out", "whole"];
    whole.extend_from_slice(args);
    let single = crashlab(dir, &whole);
    let mut merge = vec!["merge".to_string()];
    merge.extend(names(&shards));
    merge.extend(["--out", "merged", "--junit", "merged.xml"].map(String::from));
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    let merged = crashlab(dir, &merge);
    assert_eq!(code(&merged), code(&single), "{}", stderr(&merged));
    let (a, b) = (
        json(&dir.join("whole/explore.json")),
        json(&dir.join("merged/explore.json")),
    );
    assert_eq!(a["ok"], b["ok"]);
    assert_eq!(a["differences"], b["differences"]);
    assert_eq!(a["findings"], b["findings"]);
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(statuses(&a), statuses(&b));
    assert!(!statuses(&a).is_empty());
    // Each shard ran only its own cases, and together they are every case once.
    let ran: usize = shards
        .iter()
        .map(|s| {
            json(&s.join("explore.json"))["cases"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(ran, statuses(&a).len());
    assert!(shards.iter().all(|s| json(&s.join("explore.json"))["cases"]
        .as_array()
        .unwrap()
        .len()
        < ran));
    let merged_file = json(&dir.join("merged/merged.json"));
    assert_eq!(merged_file["shards"].as_array().unwrap().len(), 4);
    // Every case's evidence is there, under the path explore.json gives.
    for c in b["cases"].as_array().unwrap() {
        let evidence = c["evidence"].as_str().unwrap();
        assert!(
            dir.join("merged")
                .join(evidence)
                .join("result.json")
                .is_file(),
            "{evidence}"
        );
    }
    let audit = crashlab(dir, &["audit", "merged"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains(
            "merged from 4 shards: s1 (hash:1/4), s2 (hash:2/4), s3 (hash:3/4), s4 (hash:4/4)"
        ),
        "{}",
        stdout(&audit)
    );
}

#[test]
fn four_hash_shards_merged_give_the_unsharded_verdict_case_for_case() {
    merged_equals_unsharded(&["--variants", "all"]);
}

#[test]
fn four_hash_shards_merged_give_the_unsharded_verdict_under_power_loss() {
    // Two store profiles (one holds, one breaks) under every cut style, at the publisher's
    // points: fast enough for CI, and both verdicts are compared whatever they are.
    merged_equals_unsharded(&[
        "--crash-mode",
        "power-loss",
        "--variants",
        "default,sync-off",
        "--points",
        "publisher",
    ]);
}

/// The test cases of a JUnit report, held to the shape the JUnit XML schema gives:
/// `testsuites` > `testsuite` > `testcase` (name, classname, time), at most one `failure`
/// (message, type) or `skipped` each, and counts that add up. (name, failure message and
/// text) per case.
fn junit(path: &Path) -> Vec<(String, Option<(String, String)>)> {
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
    for n in [root, suite] {
        assert_eq!(number(n, "tests"), out.len() as f64);
        assert_eq!(number(n, "failures"), failures);
        assert_eq!(number(n, "skipped"), skipped);
        assert_eq!(number(n, "errors"), 0.0);
        assert!(number(n, "time") >= 0.0);
    }
    out
}

#[test]
fn explore_junit_fails_the_case_or_the_verdict_that_differs_and_names_the_break() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The predicted break is at the publisher's points, left out: the verdict fails.
    let args = [
        "explore",
        "14",
        "--variants",
        "mark-before-send",
        "--points",
        "sender",
    ];
    let out = crashlab(
        dir,
        &[&args[..], &["--out", "e", "--junit", "e.xml"]].concat(),
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let cases = junit(&dir.join("e.xml"));
    let (name, failure) = cases.last().unwrap();
    assert_eq!(name, "verdict");
    assert!(
        failure.as_ref().unwrap().0.contains("was not explored"),
        "{failure:?}"
    );
    assert!(cases[..cases.len() - 1].iter().all(|(_, f)| f.is_none()));
    // The break itself, at its point, passes as predicted and says what broke.
    let out = crashlab(
        dir,
        &[
            "explore",
            "14",
            "--variants",
            "mark-before-send",
            "--out",
            "f",
            "--junit",
            "f.xml",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let xml = std::fs::read_to_string(dir.join("f.xml")).unwrap();
    assert!(
        xml.contains("breaks as predicted; broken: no_lost_effect"),
        "{xml}"
    );
    // A file that cannot be written is said before anything runs.
    let out = crashlab(
        dir,
        &[&args[..], &["--out", "g", "--junit", "nowhere/g.xml"]].concat(),
    );
    assert_eq!(code(&out), 2);
    assert!(!dir.join("g").exists());
}

/// A small plan split in two shards, for the refusals.
fn small(dir: &Path, variants: &str) -> Vec<PathBuf> {
    shards(dir, 2, &["--variants", variants, "--points", "publisher"])
}

/// merge with these directories refuses in one line, exit 2, and writes nothing.
fn refused(dir: &Path, dirs: &[&str], says: &str) {
    let mut args = vec!["merge"];
    args.extend_from_slice(dirs);
    args.extend(["--out", "m"]);
    let out = crashlab(dir, &args);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.join("m").exists() && !dir.join("m.partial").exists());
}

#[test]
fn merge_refuses_shards_of_different_plans() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one");
    let two = tmp.path().join("two");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    small(&one, "correct");
    small(&two, "correct,mark-before-send");
    refused(
        tmp.path(),
        &["one/s1", "two/s2"],
        "are shards of different plans (fingerprint",
    );
}

#[test]
fn merge_refuses_a_case_twice_a_case_missing_and_a_shard_that_does_not_audit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    small(dir, "correct");
    refused(dir, &["s1", "s2", "s1"], "is in two shards: s1 and s1");
    refused(dir, &["s1"], "of the plan's");
    refused(dir, &["s1", "nowhere"], "nowhere is not a directory");
    std::fs::create_dir(dir.join("plain")).unwrap();
    refused(dir, &["s1", "plain"], "plain is not an explore shard");
    // One byte changed in a shard's evidence: it no longer audits PASS.
    let result = std::fs::read_dir(dir.join("s2/cases/correct"))
        .unwrap()
        .map(|e| e.unwrap().path().join("result.json"))
        .find(|p| p.is_file())
        .expect("a case of s2");
    let mut text = std::fs::read_to_string(&result).unwrap();
    text.push(' ');
    std::fs::write(&result, text).unwrap();
    refused(dir, &["s1", "s2"], "s2 does not audit PASS");
}

#[test]
fn a_shard_judges_only_its_own_cases_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = crashlab(
        dir,
        &[
            "explore",
            "14",
            "--variants",
            "mark-before-send",
            "--shard",
            "hash:1/3",
            "--out",
            "s",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("(shard hash:1/3, not the whole matrix)"),
        "{}",
        stdout(&out)
    );
    let shard = json(&dir.join("s/shard.json"));
    let all = shard["plan"]["cases"].as_array().unwrap();
    let mine = shard["cases"].as_array().unwrap();
    assert!(!mine.is_empty() && mine.len() < all.len());
    assert!(mine.iter().all(|c| all.contains(c)));
    let audit = crashlab(dir, &["audit", "s"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("shard hash:1/3 of plan"),
        "{}",
        stdout(&audit)
    );
    for bad in ["hash:0/3", "hash:4/3", "mod:1/2", "hash:1"] {
        let out = crashlab(dir, &["explore", "14", "--shard", bad, "--out", "x"]);
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
        assert!(!dir.join("x").exists());
    }
}

#[test]
fn driver_junit_has_a_test_case_per_scenario_failed_with_the_step_that_broke() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = crashlab(dir, &["driver", "14", "--out", "a", "--junit", "a.xml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cases = junit(&dir.join("a.xml"));
    assert_eq!(cases.len(), 1);
    assert!(cases[0].1.is_none());
    // The publisher's crash moved away: the steps after it see what it did not leave.
    let more = ["--move-crash", "publish-crash=none"];
    let out = crashlab(
        dir,
        &[
            &["driver", "14", "--out", "b", "--junit", "b.xml"][..],
            &more,
        ]
        .concat(),
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let cases = junit(&dir.join("b.xml"));
    let (message, text) = cases[0].1.clone().expect("the scenario failed");
    assert!(
        message.starts_with("after-publish: exit 1, expected 0"),
        "{message}"
    );
    assert!(text.lines().count() >= 3, "{text}");
    assert_eq!(code(&crashlab(dir, &["audit", "b"])), 0);
}

#[test]
fn chaos_junit_has_a_test_case_for_its_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let args = [
        "chaos",
        "14",
        "--messages",
        "100",
        "--kills",
        "3",
        "--seed",
        "7",
    ];
    let out = crashlab(
        dir,
        &[&args[..], &["--out", "c", "--junit", "c.xml"]].concat(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cases = junit(&dir.join("c.xml"));
    assert_eq!(cases, vec![("seed 7".to_string(), None)]);
    assert_eq!(code(&crashlab(dir, &["audit", "c"])), 0);
    let out = crashlab(
        dir,
        &[&args[..], &["--out", "d", "--junit", "nowhere/d.xml"]].concat(),
    );
    assert_eq!(code(&out), 2);
    assert!(!dir.join("d").exists());
}
