//! Every command the README and `docs/` show is run, here or by CI, and exits as the page says.
//!
//! The rule (also in docs/running.md, "The commands these pages show"):
//! - Every fenced block says what it holds: `sh` (commands a reader types), `text` (output,
//!   file trees, usage synopses) or `mermaid` (a diagram). A fence without one of these is
//!   refused, and a `text` line that begins like a command (`crashlab …`, `bash …`, `cargo
//!   …`) must be a synopsis (it shows `[` options): no command hides outside a `sh` block.
//! - In a `sh` block every line is a command, except empty lines and `#` comment lines; a
//!   line ending in `\` continues. A trailing comment `  # exit N` (or `exits N`) claims the
//!   exit N; any other command must exit 0.
//! - Inline code in prose (`like this`) is not a shown command: large runs (chaos at 10 000
//!   messages, bench at 100 000) are named there, and their blocks show a run of seconds.
//!
//! How each shown command is covered:
//! - `cargo …` is run by CI: the same line stands in `.ci/run` (`cargo test --locked` runs
//!   this test; `cargo build --release --locked` builds what `run-lab.sh` runs).
//! - Everything else runs here. Each block is one bash script, its commands in order (a
//!   later one reads what an earlier one wrote, as in a reader's shell), in a fresh
//!   temporary directory laid out like the checkout: `target/release/crashlab` and
//!   `crashlab` on PATH are the binary under test; `run-lab.sh` is the checkout's script
//!   with its one `cargo build` line taken out (checked: the rest is the script as it is,
//!   ending in `exec "$repo/target/release/crashlab" driver "$lab" "$@"`); `evidence/` is a
//!   copy of the archive, and `examples/` of the examples, when the block names it. The
//!   blocks run in parallel threads. A block that starts a service in the background (`&`)
//!   stops it and waits for it (`kill $!`, `wait $!`): no process may outlive its block.
//! - A tool a command calls (`sqlite3`, `jq`, `python3`) must be installed (`.ci/run`
//!   installs it): a missing one fails the test, never skips it.

#[path = "docs/blocks.rs"]
mod blocks;
mod common;
#[path = "docs/run.rs"]
mod run;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use blocks::{Block, Shown};
use common::*;

/// The quick start must be whole within the README's first this many lines.
const QUICK_START_LINES_MAX: usize = 30;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, by their path in the checkout.
fn pages() -> Vec<(String, String)> {
    let mut out = vec![("README.md".to_string(), read(&root().join("README.md")))];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds the pages the README links");
    for path in docs {
        let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
        out.push((name, read(&path)));
    }
    out
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn all_blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for (page, text) in pages() {
        out.extend(blocks::blocks(&page, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    out
}

#[test]
fn every_fence_says_what_it_holds_and_no_command_hides_in_text() {
    let found = all_blocks();
    let disguised: Vec<String> = found.iter().flat_map(blocks::disguised_commands).collect();
    assert!(disguised.is_empty(), "{}", disguised.join("\n"));
    let shown = found.iter().filter(|b| b.info == "sh").count();
    assert!(
        shown >= 5,
        "the pages show commands in sh blocks; found {shown} blocks"
    );
}

#[test]
fn every_link_resolves_and_every_page_is_on_the_readme_map() {
    let mut broken = Vec::new();
    for (page, text) in pages() {
        let dir = root().join(page.rsplit_once('/').map_or("", |(d, _)| d));
        for (line, path, anchor) in blocks::links(&text) {
            let file = dir.join(&path);
            let target = if path.is_empty() {
                text.clone()
            } else if let Ok(target) = fs::read_to_string(&file) {
                target
            } else {
                broken.push(format!("{page}:{line}: link to {path}: no such file"));
                continue;
            };
            if let Some(anchor) = anchor {
                if !blocks::anchors(&target).contains(&anchor) {
                    broken.push(format!(
                        "{page}:{line}: link to {path}#{anchor}: no such heading"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    let readme = read(&root().join("README.md"));
    let linked: Vec<String> = blocks::relative_links(&readme)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    for (page, _) in pages().into_iter().skip(1) {
        assert!(linked.contains(&page), "README.md does not link {page}");
    }
}

#[test]
fn the_quick_start_fits_the_first_30_lines_and_shows_a_real_table() {
    let readme = read(&root().join("README.md"));
    let found = blocks::blocks("README.md", &readme).unwrap();
    let first_sh = found
        .iter()
        .find(|b| b.info == "sh")
        .expect("the README shows its commands");
    let last_line = first_sh.body.last().map_or(first_sh.line, |(n, _)| *n) + 1;
    assert!(
        last_line <= QUICK_START_LINES_MAX,
        "the quick start's commands end at README.md:{last_line}, past line {QUICK_START_LINES_MAX}"
    );
    let bare: Vec<String> = blocks::commands(first_sh)
        .unwrap()
        .iter()
        .map(Shown::bare)
        .collect();
    for wanted in [
        "bash run-lab.sh 14",
        "bash run-lab.sh 13",
        "cargo test --locked",
    ] {
        assert!(
            bare.iter().any(|c| c == wanted),
            "the quick start lacks `{wanted}`: {bare:?}"
        );
    }
    let excerpt = found
        .iter()
        .find(|b| b.info == "text")
        .expect("the quick start shows the table");
    let last = excerpt.body.last().map_or(0, |(n, _)| *n);
    assert!(
        last < QUICK_START_LINES_MAX,
        "the table ends at README.md:{last}"
    );

    // The excerpt must be what the binary prints today, wall times aside.
    let dir = tempfile::tempdir().unwrap();
    let output = crashlab(dir.path(), &["driver", "14", "--out", "quick"]);
    assert_eq!(code(&output), 0, "driver 14: {}", stderr(&output));
    let printed = stdout(&output);
    let rows: BTreeMap<String, Vec<String>> = printed.lines().filter_map(row).collect();
    assert!(rows.len() >= 10, "driver 14 printed its table: {printed}");
    let verdict = printed
        .lines()
        .find(|l| l.starts_with("PASS: "))
        .expect("a PASS line");
    for (number, line) in &excerpt.body {
        let line = line.trim_end();
        let ok = if line == "..." {
            true
        } else if let Some((step, cells)) = row(line) {
            rows.get(&step) == Some(&cells)
        } else if line.starts_with("step ") {
            printed.lines().any(|l| l.trim_end() == line)
        } else if line.starts_with("PASS: ") {
            before_wall(line) == before_wall(verdict)
        } else {
            false
        };
        assert!(
            ok,
            "README.md:{number}: `{line}` is not what `driver 14` prints:\n{printed}"
        );
    }
}

/// A table row `step expect exit wall_ms state…`, keyed by step, wall time left out.
fn row(line: &str) -> Option<(String, Vec<String>)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 4
        || words[1].parse::<i32>().is_err()
        || words[2].parse::<i32>().is_err()
        || words[3].parse::<f64>().is_err()
    {
        return None;
    }
    let mut cells = vec![words[1].to_string(), words[2].to_string()];
    cells.extend(words[4..].iter().map(|w| w.to_string()));
    Some((words[0].to_string(), cells))
}

fn before_wall(line: &str) -> &str {
    line.split("; total wall_ms").next().unwrap_or(line)
}

#[test]
fn run_lab_sh_runs_the_binary_this_test_runs() {
    // The stand-in is the script itself less its build; what is left must end by running
    // `target/release/crashlab driver LAB ARGS`, the binary each block's directory links.
    let script = run::run_lab_without_build(&read(&root().join("run-lab.sh")));
    assert!(
        !script.contains("cargo build"),
        "only the one build line builds"
    );
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.lines()
            .any(|l| l.trim() == "cargo build --release --locked"),
        ".ci/run builds the release binary that run-lab.sh runs"
    );
}

#[test]
fn every_shown_command_runs_and_exits_as_the_page_says() {
    let ci: Vec<String> = read(&root().join(".ci/run"))
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let mut scripts = Vec::new();
    let mut uncovered = Vec::new();
    for block in all_blocks().into_iter().filter(|b| b.info == "sh") {
        let shown = blocks::commands(&block).unwrap_or_else(|e| panic!("{e}"));
        for command in &shown {
            match command.program() {
                "cargo" if !ci.contains(&command.bare()) => uncovered.push(format!(
                    "{}: a cargo command is covered only when .ci/run runs that same line",
                    command.at()
                )),
                "bash" if !command.bare().starts_with("bash run-lab.sh ") => {
                    uncovered.push(format!(
                        "{}: the only script a page may run is run-lab.sh",
                        command.at()
                    ))
                }
                _ => {}
            }
            for tool in ["sqlite3", "jq", "python3"] {
                if command.uses(tool) && !run::installed(tool) {
                    uncovered.push(format!(
                        "{}: needs {tool}, which is not installed (.ci/run installs it: apt-get install {tool})",
                        command.at()
                    ));
                }
            }
        }
        scripts.push((block, shown));
    }
    assert!(uncovered.is_empty(), "{}", uncovered.join("\n"));
    let ran = scripts.iter().map(|(_, s)| s.len()).sum::<usize>();
    assert!(ran >= 10, "the pages show commands: {ran}");

    let mark = format!("docs-{}", std::process::id());
    let failures = run::all(&root(), &scripts, &mark);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let alive = marked_processes(&mark);
    for pid in &alive {
        // Each carries this test's mark: a process a block started, never another's.
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    assert!(alive.is_empty(), "processes outlived the blocks: {alive:?}");
}
