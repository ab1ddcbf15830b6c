//! Crash points: the registry of named places, `--crash-at POINT[@N]`, and the crash itself.
//!
//! A system under test calls `crash::point(points::SENDER_AFTER_COMMIT)` at each named place. Every
//! call prints `POINT <name> #<hit>` (so a run shows where its windows are), and the armed
//! point crashes the process at its N-th hit, after printing `CRASH <point> exit=73`.

use std::sync::Mutex;

use anyhow::Result;
use serde::Serialize;

use crate::fail;
use crate::out;

/// One named crash point of a lab, as a typed constant shared by the call site
/// (`crash::point(points::SENDER_AFTER_COMMIT)`) and the lab's registry (`POINTS`): a
/// misspelt point does not compile. `--crash-at NAME` is parsed against the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Point {
    pub name: &'static str,
    /// What has and has not happened when the process stops here.
    pub window: &'static str,
}

/// The name the registry and older code use for a point.
pub type PointDef = Point;

impl Point {
    /// A point `phase.place`; the name must hold a dot (checked at compile time for a const).
    pub const fn new(name: &'static str, window: &'static str) -> Point {
        let bytes = name.as_bytes();
        let mut i = 0;
        let mut dots = 0;
        while i < bytes.len() {
            if bytes[i] == b'.' {
                dots += 1;
            }
            i += 1;
        }
        assert!(dots == 1, "a crash point is named phase.place");
        Point { name, window }
    }

    /// The phase a point belongs to: the part of its name before the dot.
    pub fn phase(&self) -> &'static str {
        self.name.split('.').next().unwrap_or(self.name)
    }
}

/// How an armed point stops the process.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `std::process::exit(73)`: runs libc's atexit handlers and flushes Rust's stdout.
    #[default]
    Exit,
    /// `std::process::abort()`: SIGABRT, no atexit handlers, no user-space flush.
    Abort,
    /// SIGKILL sent to itself: nothing at all runs after it.
    Kill,
    /// Stop at the point and sleep (at most an hour): a hung process, for the driver's
    /// timeout to find and kill.
    Hang,
}

impl Mode {
    /// The exit status a parent observes, in the shell's convention (128 + signal).
    pub fn expected_exit(self) -> i32 {
        match self {
            Mode::Exit => fail::EXIT_CRASH,
            Mode::Abort => 128 + libc::SIGABRT,
            Mode::Kill | Mode::Hang => 128 + libc::SIGKILL,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Exit => "exit",
            Mode::Abort => "abort",
            Mode::Kill => "kill",
            Mode::Hang => "hang",
        }
    }
}

/// A parsed `--crash-at POINT[@N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashAt {
    pub point: &'static str,
    pub hit: u32,
}

/// The largest `@N` accepted: far beyond any bounded phase, small enough to never overflow.
pub const HIT_MAX: u32 = 1_000_000;

/// Parse `POINT[@N]` against the points of `phase` (or of the whole lab when `phase` is None).
pub fn parse(spec: &str, points: &'static [PointDef], phase: Option<&str>) -> Result<CrashAt> {
    let (name, hit) = match spec.split_once('@') {
        None => (spec, 1),
        Some((name, n)) => {
            let hit: u32 = n.parse().map_err(|_| {
                fail::usage(format!(
                    "crash point {spec}: '@{n}' is not a hit number (expected POINT@N with N from 1 to {HIT_MAX})"
                ))
            })?;
            if hit == 0 || hit > HIT_MAX {
                return Err(fail::usage(format!(
                    "crash point {spec}: hit {hit} is out of range (1 to {HIT_MAX})"
                )));
            }
            (name, hit)
        }
    };
    let candidates: Vec<&'static PointDef> = points
        .iter()
        .filter(|p| phase.is_none_or(|phase| p.phase() == phase))
        .collect();
    match candidates.iter().find(|p| p.name == name) {
        Some(p) => Ok(CrashAt { point: p.name, hit }),
        None => {
            let known: Vec<&str> = candidates.iter().map(|p| p.name).collect();
            let whose = phase.map_or("this lab".to_string(), |p| format!("phase {p}"));
            Err(fail::usage(format!(
                "unknown crash point '{name}' for {whose}; known: {}",
                known.join(", ")
            )))
        }
    }
}

struct Armed {
    at: CrashAt,
    mode: Mode,
}

static ARMED: Mutex<Option<Armed>> = Mutex::new(None);

/// Arm one crash point for the rest of this process.
pub fn arm(at: CrashAt, mode: Mode) {
    let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
    assert!(armed.is_none(), "a process arms at most one crash point");
    *armed = Some(Armed { at, mode });
}

/// Per-name hit counters: a phase has a handful of points, so a small vector is enough.
static COUNTS: Mutex<Vec<(&'static str, u32)>> = Mutex::new(Vec::new());

/// The system under test reached the named place.
pub fn point(at: Point) {
    let name = at.name;
    let hit = {
        let mut counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => {
                *count += 1;
                *count
            }
            None => {
                counts.push((name, 1));
                1
            }
        }
    };
    out::line(&format!("POINT {name} #{hit}"));
    crate::events::emit(&crate::events::Event::Point {
        point: name.to_string(),
        hit,
    });
    {
        let armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(armed) = armed.as_ref() {
            if armed.at.point == name && armed.at.hit == hit {
                crash(name, hit, armed.mode);
            }
        }
    }
    // What else a hit does (the pause nemesis, once armed, stops the process here).
    if let Some(hook) = AT_POINT.get() {
        hook(name, hit);
    }
}

/// What else happens at every hit of a point, registered by whoever needs it (the pause
/// nemesis, `pause::arm`), so that this module knows nothing of them.
static AT_POINT: std::sync::OnceLock<fn(&str, u32)> = std::sync::OnceLock::new();

/// Register `hook`, called at every hit after the crash check; one per process (a second
/// registration of the same hook is a no-op).
pub fn also_at_points(hook: fn(&str, u32)) {
    let kept = AT_POINT.get_or_init(|| hook);
    assert!(std::ptr::fn_addr_eq(*kept, hook), "one hook per process");
}

/// An armed point the phase did not reach as often as `@N` asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReached {
    pub at: CrashAt,
    /// How often the point was reached (fewer than `at.hit`).
    pub hits: u32,
}

/// At the end of a phase that ran to its end: the armed point, when it was never reached at
/// its `@N` (the run asked for a crash that did not happen; that is said, never silent).
pub fn not_reached() -> Option<NotReached> {
    let armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
    let at = armed.as_ref()?.at.clone();
    let counts = COUNTS.lock().unwrap_or_else(|p| p.into_inner());
    let hits = counts
        .iter()
        .find(|(n, _)| *n == at.point)
        .map_or(0, |(_, c)| *c);
    // Reaching the hit crashes the process, so a phase that got here stayed below it.
    assert!(
        hits < at.hit,
        "{}@{} was reached and did not crash",
        at.point,
        at.hit
    );
    Some(NotReached { at, hits })
}

/// The line a phase prints when its armed point was never reached at `@N`.
pub fn not_reached_line(point: &str, hit: u32) -> String {
    format!("NOT-REACHED {point}@{hit}")
}

/// The `POINT[@N]` of a `--crash-at` argument as `(point, N)`; `@1` when there is no `@`.
pub fn split_spec(spec: &str) -> (&str, u32) {
    match spec.split_once('@') {
        Some((point, n)) => (point, n.parse().unwrap_or(0)),
        None => (spec, 1),
    }
}

/// The line a crashed process prints last: `CRASH <point> exit=73` for the exit mode (the
/// contract), `CRASH <point> signal=SIGABRT` or `signal=SIGKILL` for the others.
pub fn crash_line(name: &str, mode: Mode) -> String {
    match mode {
        Mode::Exit => format!("CRASH {name} exit={}", fail::EXIT_CRASH),
        Mode::Abort => format!("CRASH {name} signal=SIGABRT"),
        Mode::Kill => format!("CRASH {name} signal=SIGKILL"),
        Mode::Hang => format!("CRASH {name} hang"),
    }
}

/// Stop the process here, in the armed mode, after the `CRASH` line reached stdout.
fn crash(name: &str, hit: u32, mode: Mode) -> ! {
    out::line(&crash_line(name, mode));
    out::flush();
    crate::events::emit(&crate::events::Event::Crash {
        point: name.to_string(),
        hit,
        mode: mode.name().to_string(),
    });
    match mode {
        Mode::Exit => std::process::exit(fail::EXIT_CRASH),
        Mode::Abort => {
            // No core file in the work directory: an abort here is an experiment, not a bug.
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: setrlimit only reads the struct we pass.
            unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
            std::process::abort()
        }
        Mode::Kill => {
            // SAFETY: sending a signal to our own pid has no memory effects.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            // SIGKILL cannot be caught; reaching here means the kernel refused it.
            std::process::abort()
        }
        Mode::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(HANG_SECS_MAX));
            std::process::exit(fail::EXIT_CRASH)
        }
    }
}

/// How long a hung process sleeps before it gives up and exits on its own.
pub const HANG_SECS_MAX: u64 = 3_600;

#[cfg(test)]
mod tests {
    use super::*;

    static TEST_POINTS: &[PointDef] = &[
        Point::new("sender.after-commit", "the contract is durable"),
        Point::new("publisher.after-queue-commit", "the delivery is durable"),
    ];

    #[test]
    fn the_parser_takes_a_known_point_of_the_phase_with_a_hit_in_range() {
        let at = parse("sender.after-commit@3", TEST_POINTS, Some("sender")).unwrap();
        assert_eq!((at.point, at.hit), ("sender.after-commit", 3));
        let at = parse("publisher.after-queue-commit", TEST_POINTS, None).unwrap();
        assert_eq!(at.hit, 1);
        let err = |spec: &str, phase| parse(spec, TEST_POINTS, phase).unwrap_err().to_string();
        assert!(
            err("sender.after-comit", None).contains("unknown crash point 'sender.after-comit'")
        );
        // A point of another phase is unknown to this one, and the known ones are listed.
        let foreign = err("publisher.after-queue-commit", Some("sender"));
        assert!(
            foreign.contains("for phase sender; known: sender.after-commit"),
            "{foreign}"
        );
        assert!(err("sender.after-commit@0", None).contains("out of range"));
        assert!(err("sender.after-commit@1000001", None).contains("out of range"));
        assert!(err("sender.after-commit@x", None).contains("not a hit number"));
        assert!(err("sender.after-commit@", None).contains("not a hit number"));
    }

    #[test]
    fn a_spec_names_its_point_and_hit_and_the_not_reached_line_says_both() {
        assert_eq!(
            split_spec("sender.after-commit"),
            ("sender.after-commit", 1)
        );
        assert_eq!(
            split_spec("sender.after-commit@5"),
            ("sender.after-commit", 5)
        );
        assert_eq!(
            not_reached_line("sender.after-commit", 5),
            "NOT-REACHED sender.after-commit@5"
        );
    }
}
