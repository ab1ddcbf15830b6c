//! The point protocol any language speaks (docs/own-system.md): the harness names, in a
//! role's environment, its events file (`CRASHLAB_EVENTS`), the point and hit to crash at
//! (`CRASHLAB_CRASH_AT=NAME[@HIT]`) and how (`CRASHLAB_CRASH_MODE`: exit, abort, kill, hang).
//! A role announces each point as one JSON line in one `write(2)` and crashes there when
//! told. `crashlab point NAME` is the protocol for a shell script: it exits with the status
//! the script must exit with (`crashlab point NAME || exit $?`).

use std::io::Write;

use crate::crash::{self, Mode};
use crate::events::{Event, EVENTS_ENV};
use crate::fail;

/// The point and hit a role crashes at: `NAME[@HIT]`, HIT 1 when absent.
pub const CRASH_AT_ENV: &str = "CRASHLAB_CRASH_AT";
/// How it crashes there: `exit` (status 73, the default), `abort`, `kill`, `hang`.
pub const CRASH_MODE_ENV: &str = "CRASHLAB_CRASH_MODE";

/// The environment that arms a role at `at` (`NAME[@HIT]`) in `mode`.
pub fn arm_env(at: &str, mode: Mode) -> Vec<(String, String)> {
    vec![
        (CRASH_AT_ENV.to_string(), at.to_string()),
        (CRASH_MODE_ENV.to_string(), mode.name().to_string()),
    ]
}

/// The mode a `CRASHLAB_CRASH_MODE` value names.
pub fn mode_named(name: &str) -> Option<Mode> {
    [Mode::Exit, Mode::Abort, Mode::Kill, Mode::Hang]
        .into_iter()
        .find(|m| m.name() == name)
}

/// `crashlab point NAME`: the hit is one more than the `point` events NAME already has in
/// the step's events file (each call is a new process). Returns the exit status.
pub fn shell(args: &[String]) -> i32 {
    let [name] = args else {
        eprintln!("crashlab: point takes one argument, the point's NAME (see docs/own-system.md)");
        return fail::EXIT_USAGE;
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        eprintln!("crashlab: point '{name}': a point's name has no spaces and is not empty");
        return fail::EXIT_USAGE;
    }
    let Some(path) = std::env::var_os(EVENTS_ENV) else {
        // Not under crashlab: a point is nothing.
        return fail::EXIT_OK;
    };
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    let hits = before
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter(|e| matches!(e, Event::Point { point, .. } if point == name))
        .count();
    let hit = u32::try_from(hits).unwrap_or(u32::MAX).saturating_add(1);
    let write = |event: &Event| -> bool {
        let mut line = serde_json::to_vec(event).expect("an event always serialises");
        line.push(b'\n');
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&line))
            .is_ok()
    };
    if !write(&Event::Point {
        point: name.clone(),
        hit,
    }) {
        eprintln!("crashlab: point {name}: cannot append to the events file");
        return fail::EXIT_IOERR;
    }
    let armed = std::env::var(CRASH_AT_ENV).unwrap_or_default();
    let (at, at_hit) = crash::split_spec(&armed);
    if at != name || at_hit != hit {
        return fail::EXIT_OK;
    }
    let mode_name = std::env::var(CRASH_MODE_ENV).unwrap_or_else(|_| "exit".into());
    let Some(mode) = mode_named(&mode_name) else {
        eprintln!("crashlab: {CRASH_MODE_ENV}={mode_name}: not exit, abort, kill or hang");
        return fail::EXIT_USAGE;
    };
    write(&Event::Crash {
        point: name.clone(),
        hit,
        mode: mode.name().to_string(),
    });
    crash_caller(mode)
}

/// The crash of the script that called `crashlab point`: its parent takes the signal, unless
/// the parent is the harness itself (the role ran `crashlab point` as its whole command).
fn crash_caller(mode: Mode) -> i32 {
    let signal = match mode {
        Mode::Exit => return fail::EXIT_CRASH,
        Mode::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(crash::HANG_SECS_MAX));
            return fail::EXIT_CRASH;
        }
        Mode::Abort => libc::SIGABRT,
        Mode::Kill => libc::SIGKILL,
    };
    // SAFETY: getppid and kill have no memory effects.
    let parent = unsafe { libc::getppid() };
    let harness = std::env::var(crate::engine::process::PARENT_PID_ENV)
        .ok()
        .and_then(|p| p.parse::<libc::pid_t>().ok());
    if parent > 1 && Some(parent) != harness {
        // SAFETY: as above.
        unsafe { libc::kill(parent, signal) };
    }
    mode.expected_exit()
}
