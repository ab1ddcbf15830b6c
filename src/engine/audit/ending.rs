//! A process's recorded ending (exit, signal, timed_out) against its files: a signal gives
//! exit 128 + its number; a crash ends as its mode does; exit 73 only with a CRASH line; and
//! stderr is empty after a good end, a crash or a signal, and one `crashlab: …` line after
//! an error (main prints nothing else there).

use super::output::{Armed, Ran, Which};
use crate::crash::Mode;
use crate::fail;

/// The exit and signal a crash in `mode` ends with.
fn crash_ending(mode: Mode) -> (i32, Option<i32>) {
    match mode {
        Mode::Exit => (fail::EXIT_CRASH, None),
        Mode::Abort => (128 + libc::SIGABRT, Some(libc::SIGABRT)),
        Mode::Kill | Mode::Hang => (128 + libc::SIGKILL, Some(libc::SIGKILL)),
    }
}

/// The recorded ending against the files: exit, signal, the crash, stderr.
pub(super) fn check(
    ran: &Ran<'_>,
    armed: Option<&Armed>,
    crashed: bool,
    say: &mut impl FnMut(Which, String),
) {
    match ran.signal {
        Some(s) if ran.exit != 128 + s => say(
            Which::Record,
            format!(
                "exit {} with signal {s}: a signal ends with 128 + its number",
                ran.exit
            ),
        ),
        Some(s) if !(1..=64).contains(&s) => say(Which::Record, format!("signal {s} is no signal")),
        None if ran.exit == 128 + libc::SIGKILL || ran.exit == 128 + libc::SIGABRT => say(
            Which::Record,
            format!("exit {} without the signal that gives it", ran.exit),
        ),
        None if !(0..=255).contains(&ran.exit) => say(
            Which::Record,
            format!("exit {} is no exit status", ran.exit),
        ),
        _ => {}
    }
    if ran.timed_out && ran.signal != Some(libc::SIGKILL) {
        say(
            Which::Record,
            "timed_out, yet not ended by the SIGKILL a timeout sends".to_string(),
        );
    }
    if let (Some(armed), true) = (armed, crashed) {
        let (exit, signal) = crash_ending(armed.mode);
        if ran.exit != exit || ran.signal != signal {
            say(
                Which::Record,
                format!(
                    "exit {} signal {:?} after its CRASH line, but --crash-mode {} ends with exit {exit} signal {signal:?}",
                    ran.exit,
                    ran.signal,
                    armed.mode.name()
                ),
            );
        }
    }
    if ran.exit == fail::EXIT_CRASH && !crashed {
        say(
            Which::Record,
            format!("exit {} (a crash) with no CRASH line in stdout", ran.exit),
        );
    }
    let clean = ran.exit == fail::EXIT_OK || crashed || ran.signal.is_some();
    let lines: Vec<&str> = ran.stderr.lines().collect();
    if clean && !ran.stderr.is_empty() {
        say(
            Which::Stderr,
            format!(
                "{} bytes, but a process that ended with exit {} prints nothing there",
                ran.stderr.len(),
                ran.exit
            ),
        );
    }
    if !clean
        && (lines.len() != 1 || !lines[0].starts_with("crashlab: ") || !ran.stderr.ends_with('\n'))
    {
        say(
            Which::Stderr,
            format!(
                "exit {} is an error, which prints exactly one 'crashlab: …' line here",
                ran.exit
            ),
        );
    }
}
