//! Find the command an evidence directory records and run it again with this binary, in a
//! fresh temporary directory (never inside DIR; removed when the rerun is dropped, whatever
//! happened).

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tempfile::TempDir;

use crate::cli::{Cli, Command};
use crate::engine::process;
use crate::fail;

/// The largest evidence JSON file read for its command.
const JSON_BYTES_MAX: u64 = 64 * 1024 * 1024;
/// How far up (`../`) a recorded relative path may reach; the rerun nests its working
/// directory this deep so that the path still lands inside the temporary directory.
const PARENT_DEPTH_MAX: usize = 8;
/// A driver or explore rerun still running after this is killed (explore in `hang` mode
/// waits a step timeout per case: give it room).
const RERUN_TIMEOUT_MS: u64 = 3_600_000;
/// A chaos rerun gets its own recorded `--timeout-ms` plus this.
const CHAOS_MARGIN_MS: u64 = 120_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Driver,
    Explore,
    Chaos,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Driver => "driver",
            Kind::Explore => "explore",
            Kind::Chaos => "chaos",
        }
    }
}

/// What an evidence directory says was run.
#[derive(Debug)]
pub struct Recorded {
    pub kind: Kind,
    /// The recorded command line, `crashlab` first.
    pub command: Vec<String>,
    /// What the rerun runs after `crashlab`: the recorded command, but a lab file's path
    /// made whole (the rerun starts in a temporary directory).
    args: Vec<String>,
    pub lab: String,
    /// A lab file's run: the lab file found again, unchanged since the run.
    pub lab_file: Option<PathBuf>,
    /// `--out` as recorded (None: the default under target/lab/).
    out: Option<PathBuf>,
    /// explore's `--work-dir`, made before the rerun so that it exists.
    work_dir: Option<PathBuf>,
    /// How many levels up (`../`) the recorded paths reach.
    up: usize,
    timeout: Duration,
}

impl Recorded {
    /// The bound on the rerun's run time.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// A plain file of DIR as text, bounded; a symbolic link is never followed.
pub fn read_plain(path: &Path) -> Result<String> {
    let meta = fs::symlink_metadata(path)
        .map_err(|e| fail::usage(format!("{}: unreadable: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(fail::usage(format!(
            "{} is not a plain file (a link is never followed)",
            path.display()
        )));
    }
    if meta.len() > JSON_BYTES_MAX {
        return Err(fail::usage(format!(
            "{}: {} bytes exceed the bound of {JSON_BYTES_MAX}",
            path.display(),
            meta.len()
        )));
    }
    // Read as checked: a file swapped for a FIFO since is refused, never waited on.
    let bytes = crate::common::read_plain(path, JSON_BYTES_MAX)
        .map_err(|e| fail::usage(format!("{}: unreadable: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|e| fail::usage(format!("{}: unreadable: {e}", path.display())))
}

fn read_json(dir: &Path, name: &str) -> Result<serde_json::Value> {
    let path = dir.join(name);
    let text = read_plain(&path)?;
    serde_json::from_str(&text).map_err(|e| {
        fail::usage(format!(
            "{}: malformed JSON, no command to rerun: {e}",
            path.display()
        ))
    })
}

/// The command DIR records, checked by the CLI's own parser. Every failure is a usage
/// error: one line, exit 2.
pub fn recorded(dir: &Path) -> Result<Recorded> {
    let (kind, source) = if is_file(&dir.join(crate::labfile::evidence::RECORD)) {
        let record = read_json(dir, crate::labfile::evidence::RECORD)?;
        match record.get("kind").and_then(|k| k.as_str()) {
            Some("driver") => (Kind::Driver, crate::labfile::evidence::RECORD),
            Some("explore") => (Kind::Explore, crate::labfile::evidence::RECORD),
            Some("chaos") => {
                return Err(fail::usage(format!(
                    "{}/{}: a lab file's chaos run is not rerun: where each kill lands in the work is timing, not the seed alone; crashlab audit DIR checks it offline",
                    dir.display(),
                    crate::labfile::evidence::RECORD
                )))
            }
            other => {
                return Err(fail::usage(format!(
                    "{}/{}: kind {other:?} is not driver, explore or chaos",
                    dir.display(),
                    crate::labfile::evidence::RECORD
                )))
            }
        }
    } else if is_file(&dir.join("explore.json")) {
        (Kind::Explore, "explore.json")
    } else if is_file(&dir.join("chaos.json")) {
        (Kind::Chaos, "processes.json")
    } else if is_file(&dir.join("processes.json")) {
        (Kind::Driver, "processes.json")
    } else if is_file(&dir.join(crate::probe::records::PROBE)) {
        return Err(fail::usage(format!(
            "{} is a probe's evidence: its endpoint is a live service, not run again here; `crashlab audit {}` derives every verdict again from its exchanges",
            dir.display(),
            dir.display()
        )));
    } else {
        return Err(fail::usage(format!(
            "{} is not an evidence directory: it has no processes.json, explore.json or chaos.json, so there is no command to rerun",
            dir.display()
        )));
    };
    let value = read_json(dir, source)?;
    let where_ = format!("{}/{source}", dir.display());
    let command: Vec<String> = match value.get("command").and_then(|c| c.as_array()) {
        Some(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| fail::usage(format!("{where_}: command holds a non-string")))?,
        None => return Err(fail::usage(format!("{where_}: records no command"))),
    };
    // The evidence masks a server URL's password: a rerun would knock with `***` and fail as
    // if the code had changed. Said instead, before anything runs.
    if let Some(masked) = command
        .iter()
        .find(|a| a.contains(":***@") || a.contains("=***"))
    {
        return Err(fail::usage(format!(
            "{where_}: the run reached a server of yours whose password the evidence masks ({masked}): run its command again by hand"
        )));
    }
    let lab_file = match source == crate::labfile::evidence::RECORD {
        true => Some(super::lab_file::found_again(&value, &where_)?),
        false => None,
    };
    let lab = value
        .get(if lab_file.is_some() {
            "lab_file"
        } else {
            "lab"
        })
        .and_then(|l| l.as_str())
        .unwrap_or("?")
        .to_string();
    let args = match &lab_file {
        Some(found) => super::lab_file::whole_path(&command, &lab, found).ok_or_else(|| {
            fail::usage(format!(
                "{where_}: command {command:?} names no lab file {lab}"
            ))
        })?,
        None => command[1.min(command.len())..].to_vec(),
    };
    let parsed = Cli::parse_recorded(&command).map_err(|reason| match reason {
        None => fail::usage(format!(
            "{where_}: command {command:?} does not start with crashlab"
        )),
        Some(first) => fail::usage(format!(
            "{where_}: command {command:?} does not parse: {}",
            if first.is_empty() { "invalid" } else { &first }
        )),
    })?;
    // An unknown lab is a malformed command too: said here, not after a rerun that fails.
    let known = |name: &str| {
        if lab_file.is_some() {
            return Ok(());
        }
        crate::engine::registry::find(name)
            .map(|_| ())
            .map_err(|e| fail::usage(format!("{where_}: {}", fail::one_line(&e))))
    };
    // A `--junit FILE` is written by the rerun too: it must land inside as well.
    let junit;
    let (out, work_dir, timeout_ms) = match (kind, parsed.command) {
        (
            Kind::Driver,
            Command::Driver {
                lab, out, junit: j, ..
            },
        ) => {
            known(&lab)?;
            junit = j;
            (out, None, RERUN_TIMEOUT_MS)
        }
        (Kind::Explore, Command::Explore(args)) => {
            known(&args.lab)?;
            junit = args.junit;
            (args.out, args.work_dir, RERUN_TIMEOUT_MS)
        }
        (Kind::Chaos, Command::Chaos { lab, options }) => {
            let (out, timeout_ms) = (options.out, options.timeout_ms);
            junit = options.junit;
            crate::engine::load::check_lab(&lab)
                .map_err(|e| fail::usage(format!("{where_}: {}", fail::one_line(&e))))?;
            if out.is_none() {
                return Err(fail::usage(format!(
                    "{where_}: a chaos command without --out"
                )));
            }
            (out, None, timeout_ms.saturating_add(CHAOS_MARGIN_MS))
        }
        (kind, _) => {
            return Err(fail::usage(format!(
            "{where_}: command {command:?} is not a {} command, as the directory's files say it is",
            kind.name()
        )))
        }
    };
    // The recorded paths are relative; the rerun's working directory is nested as deep as
    // they reach up, so that every one of them lands inside the temporary directory.
    let mut up = 0;
    for path in out.iter().chain(&work_dir).chain(&junit) {
        let (reach, below) = parent_depth(path)
            .map_err(|e| fail::usage(format!("{where_}: {}", fail::one_line(&e))))?;
        if !below {
            return Err(fail::usage(format!(
                "{where_}: the recorded path {} does not name a directory below where the run started",
                path.display()
            )));
        }
        up = up.max(reach);
    }
    Ok(Recorded {
        kind,
        command,
        args,
        lab,
        lab_file,
        out,
        work_dir,
        up,
        timeout: Duration::from_millis(timeout_ms),
    })
}

/// How many levels up a relative path reaches, and whether it ends below where it starts.
fn parent_depth(path: &Path) -> Result<(usize, bool)> {
    let mut depth: i64 = 0;
    let mut lowest: i64 = 0;
    for c in path.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => depth -= 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(fail::usage(format!(
                    "the recorded path {} is absolute; evidence records paths relative",
                    path.display()
                )))
            }
        }
        lowest = lowest.min(depth);
    }
    let up = (-lowest) as usize;
    if up > PARENT_DEPTH_MAX {
        return Err(fail::usage(format!(
            "the recorded path {} reaches more than {PARENT_DEPTH_MAX} levels up",
            path.display()
        )));
    }
    Ok((up, depth > lowest))
}

/// A finished rerun: its temporary directory (removed on drop) and what it wrote.
pub struct Rerun {
    _temp: TempDir,
    /// The rerun's evidence directory; it may be missing when the rerun failed early.
    pub out: Option<PathBuf>,
    pub ended: process::Ended,
    /// The first line of the rerun's stderr, to say why it failed.
    pub stderr_first: String,
}

/// The temporary directory must not lie inside DIR: the rerun never writes there.
pub fn outside(temp: &Path, dir: &Path) -> Result<()> {
    let inside = match (fs::canonicalize(temp), fs::canonicalize(dir)) {
        (Ok(t), Ok(d)) => t.starts_with(d),
        _ => false,
    };
    if inside {
        return Err(fail::usage(format!(
            "the temporary directory {} lies inside {}: set TMPDIR elsewhere",
            temp.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Run the recorded command again with this binary, in a fresh temporary directory.
pub fn rerun(recorded: &Recorded, dir: &Path) -> Result<Rerun> {
    let temp =
        crate::owner::tempdir("rerun").context("creating the rerun's temporary directory")?;
    // Checked before anything was printed (`outside`); checked again on the real directory.
    outside(temp.path(), dir)?;
    let mut cwd = temp.path().join("run");
    for _ in 0..recorded.up {
        cwd.push("w");
    }
    fs::create_dir_all(&cwd).context("creating the rerun's working directory")?;
    if let Some(work) = &recorded.work_dir {
        fs::create_dir_all(cwd.join(work)).context("creating the recorded --work-dir")?;
    }
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let stdout = temp.path().join("rerun.stdout.txt");
    let stderr = temp.path().join("rerun.stderr.txt");
    let started = process::spawn_with(
        &exe,
        &recorded.args,
        &cwd,
        &stdout,
        &stderr,
        // A driver is no role: it gives each of its own roles an events file.
        None,
    )?;
    let ended = match wait_then_stop(&started, recorded.timeout)? {
        Stopped::Ended(ended) => ended,
        Stopped::Interrupted(signal) => {
            // The rerun ended its own children and work directories on SIGTERM; what is
            // left of it is in the temporary directory, removed before the last word.
            let _ = temp.close();
            return Err(crate::engine::process::interrupted(signal, None));
        }
    };
    let out = match &recorded.out {
        Some(out) => Some(cwd.join(out)),
        // The default output: the one directory the run made under target/lab/.
        None => {
            let lab_dir = cwd.join("target").join("lab");
            let made: Vec<PathBuf> = fs::read_dir(&lab_dir)
                .map(|entries| {
                    entries
                        .take(16)
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.is_dir())
                        .collect()
                })
                .unwrap_or_default();
            (made.len() == 1).then(|| made[0].clone())
        }
    };
    let out = out.filter(|o| o.is_dir());
    let stderr_first = fs::read_to_string(&stderr)
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("crashlab: "))
        .unwrap_or("")
        .to_string();
    Ok(Rerun {
        _temp: temp,
        out,
        ended,
        stderr_first,
    })
}

/// How long a rerun that was asked to stop (SIGTERM) has to remove its work directories and
/// its `.partial` before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// How often the wait looks at the child and the interrupt flag.
const POLL: Duration = Duration::from_millis(10);

enum Stopped {
    Ended(process::Ended),
    /// SIGINT or SIGTERM reached `audit --rerun`; the rerun was stopped and reaped.
    Interrupted(libc::c_int),
}

/// Wait for the rerun at most `timeout`. Past it, or once `audit --rerun` is interrupted, the
/// rerun gets SIGTERM first: it is a crashlab run that then kills its children and removes
/// its work directories (in TMPDIR, or /dev/shm for explore), which SIGKILL would leave
/// behind. SIGKILL only after STOP_GRACE.
fn wait_then_stop(started: &process::Started, timeout: Duration) -> Result<Stopped> {
    let deadline = started.started + timeout;
    let mut term_sent: Option<Instant> = None;
    let mut kill_sent: Option<Instant> = None;
    // Bounded: the deadline, then STOP_GRACE, then STOP_GRACE again for SIGKILL to land.
    let rounds_max = (timeout + 2 * STOP_GRACE).as_millis() / POLL.as_millis() + 2;
    for _ in 0..rounds_max {
        let why = crate::interrupt::caught();
        if let Some(ended) = process::poll_exit(started)? {
            return Ok(match why {
                Some(signal) => Stopped::Interrupted(signal),
                None => Stopped::Ended(process::Ended {
                    timed_out: term_sent.is_some(),
                    ..ended
                }),
            });
        }
        let now = Instant::now();
        if term_sent.is_none() && (why.is_some() || now >= deadline) {
            // The pid is unreaped, so still ours.
            process::signal(started, process::Signal::TERM);
            term_sent = Some(now);
        }
        if kill_sent.is_none() && term_sent.is_some_and(|t| now.duration_since(t) >= STOP_GRACE) {
            process::signal(started, process::Signal::KILL);
            kill_sent = Some(now);
        }
        std::thread::sleep(POLL);
    }
    anyhow::bail!(
        "the rerun (pid {}) did not end within {} ms of SIGKILL",
        started.pid,
        STOP_GRACE.as_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_reach_up_at_most_so_far() {
        assert_eq!(parent_depth(Path::new("evidence/x")).unwrap(), (0, true));
        assert_eq!(parent_depth(Path::new("../x")).unwrap(), (1, true));
        assert_eq!(parent_depth(Path::new("a/../../b/c")).unwrap(), (1, true));
        assert_eq!(parent_depth(Path::new("..")).unwrap(), (1, false));
        assert_eq!(parent_depth(Path::new(".")).unwrap(), (0, false));
        assert!(parent_depth(Path::new("/abs")).is_err());
        assert!(parent_depth(Path::new("../../../../../../../../../x")).is_err());
    }
}
