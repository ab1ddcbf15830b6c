//! Running the shown commands: one bash script per `sh` block, in a directory laid out like
//! the checkout, with a bounded wait and every process of the block killed if it overruns.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::blocks::{Block, Shown};

/// run-lab.sh's build line, which CI runs (`.ci/run`) instead of each block.
pub const BUILD_LINE: &str = "(cd \"$repo\" && cargo build --release --locked)";
/// run-lab.sh's last line: the binary it runs, the one each block's directory links.
pub const EXEC_LINE: &str = "exec \"$repo/target/release/crashlab\" driver \"$lab\" \"$@\"";

/// Blocks running at once: the machine has 2 cores, and explore runs 2 jobs itself.
const THREADS: usize = 3;
/// A block that runs longer is killed and fails: the slowest (explore 14 and lab 13 in a
/// debug build) take seconds, so this bound is only met by a hang.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);
const POLL: Duration = Duration::from_millis(20);
/// Lines of a failed block's output quoted in the failure.
const TAIL_LINES: usize = 40;
/// The marker line a script prints when a command's exit differs from the page's.
const MISMATCH: &str = "DOCS-EXIT-MISMATCH";

/// run-lab.sh with its build line taken out. Panics, naming what changed, unless the script
/// builds exactly once with that line and ends by exec'ing the release binary's driver.
pub fn run_lab_without_build(script: &str) -> String {
    let builds = script.lines().filter(|l| l.trim() == BUILD_LINE).count();
    assert_eq!(
        builds, 1,
        "run-lab.sh must build with the one line `{BUILD_LINE}` (tests/docs.rs takes it out and CI runs the build)"
    );
    let last = script
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert_eq!(
        last.trim(),
        EXEC_LINE,
        "run-lab.sh must end by running the release binary's driver, which tests/docs.rs runs in its place"
    );
    script
        .lines()
        .map(|l| {
            if l.trim() == BUILD_LINE {
                ": built by .ci/run"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

pub fn installed(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The block as one bash script: each command as typed, then a check of its exit.
fn script(shown: &[Shown]) -> String {
    let mut out = format!(
        "check() {{ if [ \"$1\" -ne \"$2\" ]; then echo \"{MISMATCH} $3 $1\" >&2; exit 97; fi; }}\n"
    );
    for (index, command) in shown.iter().enumerate() {
        if command.program() == "cargo" {
            // Run by .ci/run (checked by the caller), not once per block.
            continue;
        }
        out.push_str(&command.text);
        out.push('\n');
        out.push_str(&format!("check $? {} {index}\n", command.exit_expected));
    }
    out
}

/// Runs every block; returns one message per block that failed.
pub fn all(root: &Path, scripts: &[(Block, Vec<Shown>)], mark: &str) -> Vec<String> {
    let queue = Mutex::new((0..scripts.len()).collect::<Vec<_>>());
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| loop {
                let Some(next) = queue.lock().unwrap().pop() else {
                    break;
                };
                let (block, shown) = &scripts[next];
                if let Err(e) = one(root, block, shown, mark) {
                    failures.lock().unwrap().push(e);
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn one(root: &Path, block: &Block, shown: &[Shown], mark: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work = dir.path().join("work");
    let bin = dir.path().join("bin");
    fs::create_dir_all(work.join("target/release")).unwrap();
    fs::create_dir_all(&bin).unwrap();
    let exe = Path::new(crate::common::BIN);
    std::os::unix::fs::symlink(exe, work.join("target/release/crashlab")).unwrap();
    std::os::unix::fs::symlink(exe, bin.join("crashlab")).unwrap();
    let run_lab = run_lab_without_build(&fs::read_to_string(root.join("run-lab.sh")).unwrap());
    fs::write(work.join("run-lab.sh"), run_lab).unwrap();
    // The archive, and the examples (docs/probe.md's Python service) with the point
    // protocol's clients they import, when a block names them.
    for tree in ["evidence", "examples", "clients"] {
        let named = |t: &str| shown.iter().any(|c| c.text.contains(&format!("{t}/")));
        if !(named(tree) || tree == "clients" && named("examples")) {
            continue;
        }
        let copied = Command::new("cp")
            .arg("-R")
            .arg(root.join(tree))
            .arg(&work)
            .status()
            .map_err(|e| format!("copying {tree}/: {e}"))?;
        assert!(
            copied.success(),
            "copying {tree}/ into the block's directory"
        );
    }
    let stdout_path = dir.path().join("stdout.txt");
    let stderr_path = dir.path().join("stderr.txt");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(script(shown))
        .current_dir(&work)
        .env("PATH", path)
        .env("CRASHLAB_TEST_MARK", mark)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout_path).unwrap())
        .stderr(fs::File::create(&stderr_path).unwrap())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("bash: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if started.elapsed() > BLOCK_TIMEOUT {
            break None;
        }
        std::thread::sleep(POLL);
    };
    if status.is_none() {
        // The group is still the block's own: bash, its leader, is not reaped yet, so the id
        // cannot have been reused. A block that ended leaves nothing behind, which the caller
        // checks by the mark every process of it inherits.
        // SAFETY: kill(2) on this block's own process group; no memory is involved.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }
    let err = fs::read_to_string(&stderr_path).unwrap_or_default();
    let out = fs::read_to_string(&stdout_path).unwrap_or_default();
    let where_ = format!("{}:{} (a sh block)", block.page, block.line);
    let Some(status) = status else {
        return Err(format!(
            "{where_}: still running after {} s; killed\n{}",
            BLOCK_TIMEOUT.as_secs(),
            tail(&out, &err)
        ));
    };
    if let Some(line) = err.lines().rev().find(|l| l.starts_with(MISMATCH)) {
        let mut words = line.split_whitespace().skip(1);
        let index: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
        let exit = words.next().unwrap_or("?");
        let command = &shown[index.min(shown.len() - 1)];
        return Err(format!(
            "{}: exited {exit}, the page says {}\n{}",
            command.at(),
            command.exit_expected,
            tail(&out, &err)
        ));
    }
    if !status.success() {
        return Err(format!(
            "{where_}: the script ended with {status}\n{}",
            tail(&out, &err)
        ));
    }
    Ok(())
}

fn tail(out: &str, err: &str) -> String {
    let last = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    };
    format!(
        "--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
        last(out),
        last(err)
    )
}
