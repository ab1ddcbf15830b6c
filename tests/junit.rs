//! `--junit FILE` of explore, driver and chaos: the shape the JUnit XML schema gives, one
//! test case per case, scenario or seed, and failures that name what broke.

mod common;

use common::{code, crashlab, junit, stderr};

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
