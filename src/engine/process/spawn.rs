//! Starting a child: its stdout, stderr and events files, its environment, and the
//! guarantee that it dies with the process that started it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};

use super::{children, die_with_parent, spawning};
use crate::events;
use crate::interrupt;

/// A child started in the background: its pid (still ours to reap) and when it started.
#[derive(Debug)]
pub struct Started {
    pub pid: libc::pid_t,
    pub started: Instant,
}

/// The events file of a process whose stdout goes to `stdout`: `<step>.events.jsonl` beside
/// `<step>.stdout.txt` (or beside any other stdout file, its name plus `.events.jsonl`).
pub fn events_file(stdout: &Path) -> PathBuf {
    let name = stdout
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".stdout.txt")
        .or_else(|| name.strip_suffix(".stdout"))
        .unwrap_or(&name);
    stdout.with_file_name(format!("{stem}.events.jsonl"))
}

/// Spawn the role `exe args…` in `cwd` without waiting, stdout and stderr into the given
/// files and its events (`CRASHLAB_EVENTS`) into `events_file(stdout)`, created empty here
/// so that every process has its events file, even one that dies before it opens it. The
/// child gets SIGKILL should the driver die first (PR_SET_PDEATHSIG), so none outlives a run.
pub fn spawn(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
) -> Result<Started> {
    spawn_with(exe, args, cwd, stdout, stderr, Some(&events_file(stdout)))
}

/// As `spawn`, with the events file named (`None`: no events file, and never the file of
/// the process that spawns it).
pub fn spawn_with(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
    events: Option<&Path>,
) -> Result<Started> {
    spawn_env(exe, args, cwd, stdout, stderr, events, &[])
}

/// As `spawn_with`, with environment variables set for the child (a power-loss run's undo
/// log, a store profile).
pub fn spawn_env(
    exe: &Path,
    args: &[String],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
    events: Option<&Path>,
    env: &[(String, String)],
) -> Result<Started> {
    // No new child once the run is interrupted.
    interrupt::check()?;
    let out = File::create(stdout).with_context(|| format!("creating {}", stdout.display()))?;
    let err = File::create(stderr).with_context(|| format!("creating {}", stderr.display()))?;
    let mut command = Command::new(exe);
    match events {
        Some(events) => {
            File::create(events).with_context(|| format!("creating {}", events.display()))?;
            // The child runs in another directory: it gets the path whole.
            let events = std::path::absolute(events)
                .with_context(|| format!("locating {}", events.display()))?;
            command.env(events::EVENTS_ENV, events);
        }
        // Never the file of the process that spawns it.
        None => {
            command.env_remove(events::EVENTS_ENV);
        }
    }
    // Never an arm from this process's own environment (a crashlab under a crashlab, an
    // export left behind): only the one `env` gives.
    command
        .env_remove(crate::point::CRASH_AT_ENV)
        .env_remove(crate::point::CRASH_MODE_ENV);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let started = Instant::now();
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    die_with_parent(&mut command);
    // Its own process group, whose id is its pid: a crash, a timeout or an interrupt kills
    // the whole tree a role's command forked (a shell script's children too).
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // Listed before any sweep can look: a sweep on another thread waits for every spawn under
    // way (`spawning`), so it never takes this one for an orphan.
    let spawning = spawning();
    let child = command.spawn().with_context(|| match args.first() {
        Some(first) => format!("starting {} {first}", exe.display()),
        None => format!("starting {}", exe.display()),
    })?;
    let pid = child.id() as libc::pid_t;
    children().push(pid);
    drop(spawning);
    // Reaped later with wait4; dropping the handle neither waits nor kills.
    drop(child);
    Ok(Started { pid, started })
}
