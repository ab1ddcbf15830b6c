//! What a new user reads first: `crashlab` alone, `crashlab --help`, `crashlab <sub> --help`.
//! The subcommands are read from `crashlab --help`, so a new one is covered without an edit.

mod common;

use common::{code, crashlab, stderr, stdout};

/// `--help` split into sections: (heading, lines under it).
fn sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let is_heading = !line.starts_with(' ') && line.trim_end().ends_with(':');
        if is_heading {
            out.push((line.trim_end().to_string(), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(line.to_string());
        }
    }
    out
}

/// The subcommands `crashlab --help` lists, by section heading.
fn listed_commands(help: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for (heading, lines) in sections(help) {
        if heading == "Options:" || heading == "Start with:" {
            continue;
        }
        for line in lines {
            let Some(rest) = line.strip_prefix("  ") else {
                continue;
            };
            let name = rest.split_whitespace().next().unwrap_or("");
            let is_name = !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_lowercase())
                && name.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            if is_name && !rest.starts_with(' ') {
                names.push((heading.clone(), name.to_string()));
            }
        }
    }
    names
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Text that is only clap's annotations is no help.
fn is_help_text(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && !text.starts_with('[') && text != "Possible values:"
}

/// Every option or argument line of a subcommand's `--help` without help text, by its term.
/// Clap prints an entry's text after it on the same line, or (long help) on the lines under
/// it, indented further.
fn entries_without_text(help: &str) -> (usize, Vec<String>) {
    let mut entries = 0;
    let mut missing = Vec::new();
    for (heading, lines) in sections(help) {
        if heading.starts_with("Usage") {
            continue;
        }
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let is_entry = indent(line) < 8 && trimmed.starts_with(['-', '<', '[']);
            if !is_entry {
                continue;
            }
            entries += 1;
            let (term, same_line) = match trimmed.split_once("  ") {
                Some((term, text)) => (term.to_string(), text.to_string()),
                None => (trimmed.to_string(), String::new()),
            };
            let below = lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || indent(l) >= 8)
                .find(|l| !l.trim().is_empty())
                .map(|l| l.to_string())
                .unwrap_or_default();
            let text = if same_line.trim().is_empty() {
                below
            } else {
                same_line
            };
            if !is_help_text(&text) {
                missing.push(format!("{heading} {term}"));
            }
        }
    }
    (entries, missing)
}

#[test]
fn every_option_and_argument_of_every_subcommand_has_help_text() {
    let dir = tempfile::tempdir().unwrap();
    let top = crashlab(dir.path(), &["--help"]);
    assert_eq!(code(&top), 0, "{}", stderr(&top));
    let help = stdout(&top);
    let commands = listed_commands(&help);
    let names: Vec<&str> = commands.iter().map(|(_, n)| n.as_str()).collect();
    // The listing was read: the engine commands and the roles of both labs are in it.
    for expected in [
        "driver",
        "explore",
        "audit",
        "sender",
        "verify",
        "dispatcher",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not listed: {names:?}"
        );
    }
    let (top_entries, top_missing) = entries_without_text(&help);
    assert!(top_entries >= 3, "crashlab --help lists its options");
    assert!(top_missing.is_empty(), "crashlab --help: {top_missing:?}");
    let mut problems = Vec::new();
    for name in names.iter().filter(|n| **n != "help") {
        let output = crashlab(dir.path(), &[name, "--help"]);
        assert_eq!(code(&output), 0, "{name} --help: {}", stderr(&output));
        let text = stdout(&output);
        let about = text.lines().next().unwrap_or("").trim();
        if about.is_empty() || about.starts_with("Usage:") {
            problems.push(format!("{name}: no description"));
        }
        let (entries, missing) = entries_without_text(&text);
        // Every subcommand has at least --help and the global --no-trace: the parse saw them.
        assert!(entries >= 2, "{name} --help: no option lines read:\n{text}");
        problems.extend(missing.into_iter().map(|m| format!("{name}: {m}")));
    }
    assert!(
        problems.is_empty(),
        "options and arguments without help text:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_help_checker_finds_an_entry_without_text() {
    // The parser of this file, on help as clap prints it in both layouts.
    let short = "Usage: x [OPTIONS] <LAB>\n\nArguments:\n  <LAB>  The lab\n\nOptions:\n      --db <FILE>  [default: a.db]\n  -h, --help       Print help\n";
    assert_eq!(
        entries_without_text(short),
        (3, vec!["Options: --db <FILE>".to_string()])
    );
    let long = "Usage: x [OPTIONS]\n\nOptions:\n      --db <FILE>\n          The database\n\n      --mode <MODE>\n          Possible values:\n          - a: first\n\n  -h, --help\n          Print help\n";
    assert_eq!(
        entries_without_text(long),
        (3, vec!["Options: --mode <MODE>".to_string()])
    );
}

#[test]
fn help_groups_the_roles_under_their_lab() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--help", "-h"] {
        let output = crashlab(dir.path(), &[flag]);
        assert_eq!(code(&output), 0);
        let help = stdout(&output);
        let commands = listed_commands(&help);
        let heading_of = |name: &str| {
            commands
                .iter()
                .find(|(_, n)| n == name)
                .map(|(h, _)| h.clone())
                .unwrap_or_else(|| panic!("{name} not listed in {flag}:\n{help}"))
        };
        for role in ["sender", "publisher", "consumer", "enqueue", "verify"] {
            assert!(heading_of(role).starts_with("Lab 14"), "{role}: {help}");
        }
        for role in [
            "intent",
            "receiver",
            "dispatcher",
            "dispatch-verify",
            "dispatch-post",
        ] {
            assert!(heading_of(role).starts_with("Lab 13"), "{role}: {help}");
        }
        for engine in [
            "driver", "explore", "chaos", "bench", "probe", "audit", "points", "lab", "digest",
        ] {
            assert!(heading_of(engine).starts_with("Engine"), "{engine}");
        }
        // Each subcommand once.
        let mut names: Vec<&str> = commands.iter().map(|(_, n)| n.as_str()).collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "a subcommand listed twice: {help}");
        assert!(help.contains("bash run-lab.sh 14"), "{help}");
    }
}

#[test]
fn crashlab_alone_prints_the_short_guide_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &[]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    let guide = stdout(&output);
    // The labs come from the registry: the same ids, names and titles `points --json` shows.
    let points = crashlab(dir.path(), &["points", "--json"]);
    let labs: serde_json::Value = serde_json::from_slice(&points.stdout).unwrap();
    let labs = labs.as_array().unwrap();
    // Short: one line per lab and at most 23 others (eleven of them the commands).
    let lines = guide.lines().count();
    assert!(
        (8..=23 + labs.len()).contains(&lines),
        "{lines} lines:\n{guide}"
    );
    assert!(labs.len() >= 2);
    for lab in labs {
        let full = lab["lab"].as_str().unwrap();
        let (id, slug) = full.split_once('-').unwrap();
        let row = guide
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("lab {id} not in the guide:\n{guide}"));
        assert!(row.contains(slug), "{row}");
        // Each lab is one line, with every stack it runs on.
        let rows = guide
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(id))
            .count();
        assert_eq!(rows, 1, "lab {id} is listed {rows} times:\n{guide}");
        for stack in lab["stacks"].as_array().unwrap() {
            assert!(row.contains(stack.as_str().unwrap()), "{row}");
        }
    }
    for engine in [
        "driver", "explore", "chaos", "bench", "probe", "audit", "points", "lab", "digest",
    ] {
        assert!(
            guide
                .lines()
                .any(|l| l.split_whitespace().next() == Some(engine)),
            "{engine} not in the guide:\n{guide}"
        );
    }
    assert!(guide.contains("bash run-lab.sh 14"), "{guide}");
    assert!(guide.contains("crashlab driver 14"), "{guide}");
    // No role is an engine command in the guide.
    assert!(
        !guide
            .lines()
            .any(|l| l.split_whitespace().next() == Some("sender")),
        "{guide}"
    );
    // Nothing was written where it ran.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_missing_subcommand_after_an_option_is_still_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &["--no-trace"]);
    assert_eq!(code(&output), 2, "{}", stdout(&output));
}

/// `points LAB` names each point once, with the stacks it exists on; `lab show` prints the
/// same lab as a value whose stacks hold exactly those points.
#[test]
fn points_lists_each_point_once_with_its_stacks_as_lab_show_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let points = crashlab(dir.path(), &["points", "--json"]);
    assert_eq!(code(&points), 0, "{}", stderr(&points));
    let labs: serde_json::Value = serde_json::from_slice(&points.stdout).unwrap();
    for lab in labs.as_array().unwrap() {
        let full = lab["lab"].as_str().unwrap();
        let listed = lab["points"].as_array().unwrap();
        let mut names: Vec<&str> = listed.iter().map(|p| p["name"].as_str().unwrap()).collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "lab {full} lists a point twice");
        let shown = crashlab(dir.path(), &["lab", "show", full, "--json"]);
        assert_eq!(code(&shown), 0, "{}", stderr(&shown));
        let value: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        for point in listed {
            let name = point["name"].as_str().unwrap();
            let mut on: Vec<&str> = value["stacks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| {
                    s["points"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p["name"] == name)
                })
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            let mut said: Vec<&str> = point["stacks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            on.sort();
            said.sort();
            assert!(!on.is_empty(), "{full}: {name}");
            assert_eq!(on, said, "{full}: {name}");
        }
    }
    // An unknown stack is one line and exit 2.
    let bad = crashlab(dir.path(), &["lab", "show", "14", "--stack", "nope"]);
    assert_eq!(code(&bad), 2);
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
    assert!(stderr(&bad).contains("no stack 'nope'"), "{}", stderr(&bad));
}
