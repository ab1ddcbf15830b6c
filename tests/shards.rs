//! explore in shards (`--shard hash:K/N`) merged by `crashlab merge`: the same verdict and
//! the same case statuses as the unsharded run, an audit that names the shards, and each
//! refusal of merge in one line, exit 2, nothing written.

mod common;

use std::path::{Path, PathBuf};
use std::process::Child;

use common::{code, crashlab, forge_json, json, junit, stderr, stdout, BIN};
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
    // JUnit: one test case per case (and `verdict` for a difference of no case), failed
    // exactly when the verdict is.
    let cases = junit(&dir.join("merged.xml"));
    let per_case = cases.iter().filter(|(name, _)| name != "verdict").count();
    assert_eq!(per_case, statuses(&a).len());
    let failed = cases.iter().any(|(_, failure)| failure.is_some());
    assert_eq!(failed, a["ok"] != true);
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
    refused(dir, &["s1", "plain"], "plain is not a shard");
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
fn merge_refuses_an_out_inside_a_shard_and_a_case_evidence_outside_its_own_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    small(dir, "correct");
    // The merged run inside a shard would write into what it reads.
    let out = crashlab(dir, &["merge", "s1", "s2", "--out", "s1/inner"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("are nested"), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);
    assert!(!dir.join("s1/inner").exists() && !dir.join("s1/inner.partial").exists());
    // The same through a name that does not exist yet: `x/../s1` is s1 once x is made.
    let out = crashlab(dir, &["merge", "s1", "s2", "--out", "x/../s1/inner"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("are nested"), "{}", stderr(&out));
    assert!(!dir.join("x").exists() && !dir.join("s1/inner").exists());
    let audit = crashlab(dir, &["audit", "s1"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    // A case whose evidence path leaves the shard, re-hashed: merge copies nothing from it.
    let mut explore = json(&dir.join("s2/explore.json"));
    explore["cases"][0]["evidence"] = Value::String("../planted".into());
    forge_json(&dir.join("s2"), "explore.json", &explore);
    std::fs::create_dir(dir.join("planted")).unwrap();
    std::fs::write(dir.join("planted/x.txt"), "not evidence").unwrap();
    let out = crashlab(dir, &["merge", "s1", "s2", "--out", "deep/m"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a case's evidence is at \"../planted\""),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join("deep").exists());
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

/// `chaos 14 --runs 4` on small loads: `ARGS` after it.
fn chaos(dir: &Path, out: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "chaos",
        "14",
        "--runs",
        "4",
        "--messages",
        "40",
        "--kills",
        "3",
    ];
    all.extend_from_slice(&["--out", out]);
    all.extend_from_slice(args);
    crashlab(dir, &all)
}

/// (seed, ok, lost, duplicated) of every seed of a study, and its sums and verdict.
fn seeds(study: &Value) -> (Vec<String>, String) {
    let each = study["seeds"]
        .as_array()
        .expect("seeds")
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {}",
                s["seed"], s["ok"], s["lost"], s["duplicated"]
            )
        })
        .collect();
    let sums = format!("{} {} {}", study["ok"], study["lost"], study["duplicated"]);
    (each, sums)
}

#[test]
fn chaos_shards_merged_give_the_unsharded_seeds_and_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let whole = chaos(dir, "whole", &["--json"]);
    assert_eq!(code(&whole), 0, "{}", stderr(&whole));
    // --json: one document on stdout, the study's seeds.json.
    let printed: Value = serde_json::from_str(&stdout(&whole)).expect("one JSON document");
    assert_eq!(printed, json(&dir.join("whole/seeds.json")));
    for k in 1..=2 {
        let shard = format!("hash:{k}/2");
        let out = chaos(dir, &format!("s{k}"), &["--shard", &shard]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let (one, two) = (
        json(&dir.join("s1/seeds.json")),
        json(&dir.join("s2/seeds.json")),
    );
    let sizes = (seeds(&one).0.len(), seeds(&two).0.len());
    assert_eq!(
        sizes.0 + sizes.1,
        4,
        "the shards split the 4 seeds: {sizes:?}"
    );
    let merged = crashlab(
        dir,
        &["merge", "s1", "s2", "--out", "merged", "--junit", "m.xml"],
    );
    assert_eq!(code(&merged), code(&whole), "{}", stderr(&merged));
    assert_eq!(
        seeds(&json(&dir.join("merged/seeds.json"))),
        seeds(&json(&dir.join("whole/seeds.json")))
    );
    for seed in 1..=4 {
        assert!(dir.join(format!("merged/seed-{seed}/chaos.json")).is_file());
    }
    let cases = junit(&dir.join("m.xml"));
    assert_eq!(cases.len(), 4, "one test case per seed: {cases:?}");
    let audit = crashlab(dir, &["audit", "merged"]);
    assert_eq!(code(&audit), 0, "{}", stdout(&audit));
    assert!(
        stdout(&audit).contains("merged from 2 shards: s1 (hash:1/2), s2 (hash:2/2)"),
        "{}",
        stdout(&audit)
    );

    // The refusals: a seed twice, a seed missing, another plan; nothing written.
    refused(dir, &["s1", "s1", "s2"], "is in two shards");
    refused(dir, &["s1"], "in no shard given");
    let other = chaos(dir, "o2", &["--shard", "hash:2/2", "--batch", "10"]);
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    refused(dir, &["s1", "o2"], "shards of different plans");
}
