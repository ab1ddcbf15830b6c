//! Nemeses: the faults the engine injects around a step, in Jepsen's sense. The engine
//! (driver, explore, chaos) holds a `&dyn Nemesis` and calls its hooks; it never asks which
//! fault it is. A new fault (a power cut that drops unsynced writes, a server killed under a
//! role) is a new implementation plus one line in `NEMESES`, without touching the engine.
//!
//! The four process crashes are one nemesis each: the role stops itself at the armed point
//! (`--crash-at POINT[@N] --crash-mode MODE`), so the crash lands exactly after the commit the
//! point names.

use std::path::Path;

use anyhow::Result;

use crate::crash::{self, Mode};
use crate::fail;
use crate::power;

/// What a nemesis may act on after a crashed step has ended.
pub struct Aftermath<'a> {
    /// The work directory of the run: the files the next step recovers from.
    pub work_dir: &'a Path,
    /// The point the step crashed at, without `@N`.
    pub point: &'a str,
}

/// A fault injected at a crash point.
pub trait Nemesis: Sync {
    /// The name recorded in the evidence (`exit`, `abort`, `kill`, `hang`).
    fn name(&self) -> &'static str;

    /// The flags that arm a role process to crash at `point` (`POINT[@N]`); they go after
    /// its own flags.
    fn arm(&self, point: &str) -> Vec<String>;

    /// The exit status (shell convention, 128 + signal) a step crashed by it must show.
    fn expected_exit(&self) -> i32;

    /// The last stdout line of a process crashed at `point`.
    fn crash_line(&self, point: &str) -> String;

    /// Whether the engine must kill the crashed process itself (it stops and waits).
    fn needs_kill(&self) -> bool {
        false
    }

    /// Act on the world after the crashed step ended and before the next step starts
    /// (roll back what a power cut loses, kill a server). Process crashes do nothing here.
    fn after_crash(&self, _aftermath: &Aftermath<'_>) -> Result<()> {
        Ok(())
    }

    /// Environment variables every role process of a run under this nemesis gets (the power
    /// cut's undo log in the work directory); none for a process crash.
    fn env(&self, _work_dir: &Path) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The mode the armed role crashes in, as its `crash` event names it: the nemesis's
    /// own name for a process crash; `kill` for a power cut (the role stops, the engine cuts).
    fn role_mode(&self) -> &'static str {
        self.name()
    }
}

/// A process crash in one of the four modes.
pub struct ProcessCrash(pub Mode);

impl Nemesis for ProcessCrash {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn arm(&self, point: &str) -> Vec<String> {
        let mut flags = vec!["--crash-at".to_string(), point.to_string()];
        // The default mode stays implicit, so the argv of the contract reads as it always did.
        if self.0 != Mode::Exit {
            flags.push("--crash-mode".to_string());
            flags.push(self.0.name().to_string());
        }
        flags
    }

    fn expected_exit(&self) -> i32 {
        self.0.expected_exit()
    }

    fn crash_line(&self, point: &str) -> String {
        crash::crash_line(point, self.0)
    }

    fn needs_kill(&self) -> bool {
        self.0 == Mode::Hang
    }
}

static EXIT: ProcessCrash = ProcessCrash(Mode::Exit);
static ABORT: ProcessCrash = ProcessCrash(Mode::Abort);
static KILL: ProcessCrash = ProcessCrash(Mode::Kill);
static HANG: ProcessCrash = ProcessCrash(Mode::Hang);

/// Every nemesis, by name.
pub static NEMESES: &[&dyn Nemesis] = &[&EXIT, &ABORT, &KILL, &HANG];

/// The nemesis of a name (`--crash-mode NAME`).
pub fn find(name: &str) -> Result<&'static dyn Nemesis> {
    NEMESES
        .iter()
        .copied()
        .find(|n| n.name() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = NEMESES.iter().map(|n| n.name()).collect();
            fail::usage(format!(
                "unknown crash mode '{name}'; known: {}",
                known.join(", ")
            ))
        })
}

/// The nemesis of a process-crash mode.
pub fn of_mode(mode: Mode) -> &'static dyn Nemesis {
    find(mode.name()).expect("every mode has its nemesis")
}

/// A power cut: the role stops with SIGKILL at the point (nothing after it runs), and the
/// undo log its databases' shim VFS kept is applied to the work directory: what was never
/// synced is lost, in the cut style, seeded.
pub struct PowerLoss {
    pub cut: power::cut::Style,
    pub seed: u64,
}

/// The file beside the undo log where each cut's summary is appended as one JSON line.
pub const POWER_CUTS_NAME: &str = "power-cuts.jsonl";

impl Nemesis for PowerLoss {
    fn name(&self) -> &'static str {
        "power-loss"
    }

    fn arm(&self, point: &str) -> Vec<String> {
        let mode = Mode::Kill.name().to_string();
        vec![
            "--crash-at".into(),
            point.into(),
            "--crash-mode".into(),
            mode,
        ]
    }

    fn expected_exit(&self) -> i32 {
        Mode::Kill.expected_exit()
    }

    fn crash_line(&self, point: &str) -> String {
        crash::crash_line(point, Mode::Kill)
    }

    /// The engine kills every other process of the run first: the cut acts on files nobody
    /// holds open, as after a reboot.
    fn after_crash(&self, aftermath: &Aftermath<'_>) -> Result<()> {
        let log = aftermath.work_dir.join(power::LOG_NAME);
        let summary = power::cut::apply(aftermath.work_dir, &log, self.cut, self.seed)?;
        let mut line = serde_json::to_string(&summary)?;
        line.push('\n');
        let record = aftermath.work_dir.join(POWER_CUTS_NAME);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&record)?;
        std::io::Write::write_all(&mut file, line.as_bytes())?;
        Ok(())
    }

    fn role_mode(&self) -> &'static str {
        Mode::Kill.name()
    }

    fn env(&self, work_dir: &Path) -> Vec<(String, String)> {
        let log = work_dir.join(power::LOG_NAME);
        vec![(
            power::LOG_ENV.to_string(),
            log.to_string_lossy().into_owned(),
        )]
    }
}

/// The power-loss nemesis of a cut style and seed (`--crash-mode power-loss --cut STYLE
/// --seed N`); one per run, so leaking it to get the engine's `&'static` costs nothing.
pub fn power_loss(cut: power::cut::Style, seed: u64) -> &'static dyn Nemesis {
    Box::leak(Box::new(PowerLoss { cut, seed }))
}

/// A pause, as in Jepsen: the role stops itself (SIGSTOP) at the armed point, the run goes on
/// without it (its lease expires, another process takes its work), and the engine continues
/// it (SIGCONT). Unlike a crash, the paused process ends by itself, with its own exit status.
/// A step is paused by this nemesis as a background step that is ready when `paused`
/// (`scenario::Ready::Paused`) and stopped with `scenario::Stop::Continue`; it is not one of
/// `NEMESES`, which name the faults a whole run injects at every armed point.
pub struct Pause;

pub static PAUSE: Pause = Pause;

/// How long a paused role may take to be reported stopped once it said `paused` (the stop
/// is its very next system call; only an overloaded machine delays it).
pub const PAUSE_STOP_WAIT_MS_MAX: u64 = 10_000;

impl Nemesis for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn arm(&self, point: &str) -> Vec<String> {
        vec![crate::pause::FLAG.to_string(), point.to_string()]
    }

    /// Continued, the role finishes its work and exits as it would have.
    fn expected_exit(&self) -> i32 {
        fail::EXIT_OK
    }

    fn crash_line(&self, point: &str) -> String {
        crate::pause::paused_line(point, 1)
    }
}

impl Pause {
    /// Wait (bounded by `timeout`) until the kernel reports the child stopped, without
    /// consuming the state: true once it is, false when it exited or the bound passed. The
    /// child is unreaped, so its pid is still ours.
    pub fn await_stopped(&self, pid: libc::pid_t, timeout: std::time::Duration) -> Result<bool> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            crate::interrupt::check()?;
            use crate::engine::process::waitid_nowait;
            if waitid_nowait(pid, libc::WSTOPPED | libc::WNOHANG)? {
                return Ok(true);
            }
            if waitid_nowait(pid, libc::WEXITED | libc::WNOHANG)? {
                return Ok(false);
            }
            if std::time::Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
    }

    /// Continue a paused child (SIGCONT); one that has ended meanwhile takes it without effect.
    pub fn resume(&self, pid: libc::pid_t) {
        // SAFETY: kill has no memory effects; the pid is an unreaped child of ours.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_is_a_nemesis_with_its_own_exit_and_line() {
        for mode in [Mode::Exit, Mode::Abort, Mode::Kill, Mode::Hang] {
            let n = of_mode(mode);
            assert_eq!(n.name(), mode.name());
            assert_eq!(n.expected_exit(), mode.expected_exit());
            assert_eq!(n.crash_line("a.b"), crash::crash_line("a.b", mode));
            assert_eq!(n.needs_kill(), mode == Mode::Hang);
        }
        assert_eq!(of_mode(Mode::Exit).arm("a.b@2"), ["--crash-at", "a.b@2"]);
        assert_eq!(
            of_mode(Mode::Kill).arm("a.b"),
            ["--crash-at", "a.b", "--crash-mode", "kill"]
        );
        assert!(find("power").is_err());
    }

    #[test]
    fn a_power_cut_kills_at_the_point_and_names_the_undo_log_for_the_roles() {
        let n = power_loss(power::cut::Style::Torn, 7);
        assert_eq!(n.name(), "power-loss");
        assert_eq!(
            n.arm("a.b@2"),
            ["--crash-at", "a.b@2", "--crash-mode", "kill"]
        );
        assert_eq!(n.expected_exit(), 128 + libc::SIGKILL);
        assert_eq!(n.crash_line("a.b"), "CRASH a.b signal=SIGKILL");
        assert!(!n.needs_kill());
        let env = n.env(Path::new("w"));
        assert_eq!(
            env,
            [(power::LOG_ENV.to_string(), format!("w/{}", power::LOG_NAME))]
        );
        assert!(of_mode(Mode::Kill).env(Path::new("w")).is_empty());
        // The cut needs the log: none in the work directory is one line, exit 2.
        let dir = tempfile::tempdir().unwrap();
        let after = Aftermath {
            work_dir: dir.path(),
            point: "a.b",
        };
        let e = n.after_crash(&after).unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    }

    #[test]
    fn a_pause_is_armed_by_its_flag_and_ends_as_the_role_would() {
        assert_eq!(PAUSE.name(), "pause");
        assert_eq!(PAUSE.arm("a.b@2"), ["--pause-at", "a.b@2"]);
        assert_eq!(PAUSE.expected_exit(), 0);
        assert!(find("pause").is_err(), "a run-wide crash mode it is not");
    }

    #[test]
    fn a_stopped_child_is_seen_stopped_and_continued_to_its_end() {
        let child = std::process::Command::new("sh")
            .args(["-c", "kill -STOP $$; exit 7"])
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let bound = std::time::Duration::from_millis(PAUSE_STOP_WAIT_MS_MAX);
        assert!(PAUSE.await_stopped(pid, bound).unwrap());
        PAUSE.resume(pid);
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(libc::WEXITSTATUS(status), 7);
        drop(child);
    }
}
