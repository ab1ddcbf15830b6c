//! Unit tests of the bindings in output.rs and ending.rs, on hand-made outputs.

use std::collections::BTreeMap;

use super::output::{check, Ran, Which};
use crate::crash::PointDef;

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The points of the lab these outputs come from: the one that has the points they name.
fn points() -> &'static [PointDef] {
    let lab = crate::engine::registry::stacks()
        .find(|lab| {
            ["sender.after-commit", "consumer.before-ack"]
                .iter()
                .all(|name| lab.points.iter().any(|d| d.name == *name))
        })
        .expect("a lab has the points these outputs name");
    lab.points
}

fn pins() -> BTreeMap<String, String> {
    crate::engine::driver::pragmas()
}

/// The problems of one process, by file.
fn problems(
    argv: &[String],
    exit: i32,
    signal: Option<i32>,
    stdout: &str,
    stderr: &str,
) -> Vec<(Which, String)> {
    let ran = Ran {
        argv,
        exit,
        signal,
        timed_out: false,
        stdout,
        stderr,
        server_stores: &[],
    };
    check(&ran, points(), &pins())
}

const OPEN: &str = "SQL sender PRAGMA journal_mode=wal\nSQL sender PRAGMA synchronous=FULL\nSQL sender PRAGMA foreign_keys=ON\nSQL sender PRAGMA busy_timeout=5000\n";

#[test]
fn a_clean_crash_passes_and_each_binding_is_enforced() {
    let crash = argv(&[
        "crashlab",
        "sender",
        "--db",
        "sender.db",
        "--crash-at",
        "sender.after-commit",
    ]);
    let good = format!("{OPEN}SQL sender BEGIN IMMEDIATE\nPOINT sender.after-commit #1\nCRASH sender.after-commit exit=73\n");
    assert!(problems(&crash, 73, None, &good, "").is_empty());
    // Each edit breaks exactly what binds the output to this process.
    let cases: &[(&str, i32, Option<i32>, &str, &str)] = &[
        (
            "SQL queue BEGIN IMMEDIATE",
            73,
            None,
            "",
            "a database argv does not name",
        ),
        (
            "POINT consumer.before-ack #1",
            73,
            None,
            "",
            "is not one of phase sender",
        ),
        (
            "POINT sender.after-commit #2",
            73,
            None,
            "",
            "but this is its hit 1",
        ),
        (
            "PRAGMA synchronous=OFF",
            73,
            None,
            "",
            "processes.json pragmas say full",
        ),
        (
            "CRASH sender.after-commit signal=SIGKILL",
            73,
            None,
            "",
            "argv armed",
        ),
        ("", 137, Some(9), "", "--crash-mode exit ends with exit 73"),
        ("", 73, None, "crashlab: oops\n", "prints nothing there"),
    ];
    for (edit, exit, signal, stderr, expect) in cases {
        let stdout = match *edit {
            "" => good.clone(),
            e if e.starts_with("PRAGMA") => good.replace("PRAGMA synchronous=FULL", e),
            e if e.starts_with("CRASH") => good.replace("CRASH sender.after-commit exit=73", e),
            e if e.starts_with("POINT") => good.replace("POINT sender.after-commit #1", e),
            e => good.replace("SQL sender BEGIN IMMEDIATE", e),
        };
        let found = problems(&crash, *exit, *signal, &stdout, stderr);
        assert!(
            found.iter().any(|(_, p)| p.contains(expect)),
            "{edit:?}: {found:?}"
        );
    }
}

#[test]
fn errors_print_one_line_and_not_reached_names_the_armed_point() {
    let plain = argv(&["crashlab", "sender", "--db", "sender.db"]);
    let found = problems(&plain, 1, None, OPEN, "");
    assert!(found.iter().any(|(w, _)| *w == Which::Stderr), "{found:?}");
    assert!(problems(&plain, 1, None, OPEN, "crashlab: it failed\n").is_empty());
    let armed = argv(&[
        "crashlab",
        "sender",
        "--db",
        "sender.db",
        "--crash-at",
        "sender.after-commit@5",
    ]);
    let out = format!("{OPEN}POINT sender.after-commit #1\nNOT-REACHED sender.after-commit@5\n");
    assert!(problems(&armed, 78, None, &out, "crashlab: not reached\n").is_empty());
    let wrong = out.replace("@5", "@1");
    assert!(!problems(&armed, 78, None, &wrong, "crashlab: not reached\n").is_empty());
    assert!(!problems(&armed, 0, None, &out, "").is_empty());
}
