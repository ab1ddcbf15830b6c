//! Scenarios as data: the driver runs them and the audit re-checks evidence against the very
//! same definitions, so the two can never disagree.

use serde_json::Value;

use crate::crash;
use crate::engine::nemesis::Nemesis;
use crate::events::Event;
use crate::role::{Argv, Stage};

/// What a step must show in its output.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Nothing beyond the exit code.
    Exit,
    /// A crash step: the `CRASH <point>` line in stdout.
    Crash,
    /// This text in stdout or stderr (a conflict step: `payload conflict`).
    Output(&'static str),
    /// A readback step: the last stdout line is the readback JSON, and it shows the stage.
    Readback(Stage),
}

/// How the driver ends a background process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM, a bound, then SIGKILL (a server).
    Term,
    /// Wait for it to end by itself, a bound, then SIGKILL (a client that holds a lock).
    Wait,
    /// SIGCONT (the pause nemesis's resume), then as `Wait`: a role paused at its point.
    Continue,
}

/// The event by which a background process says it is ready for the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// `ready`: a server listens on its port.
    Listening,
    /// `lock-held`: a process holds its exclusive lock.
    LockHeld,
    /// `paused`: a role armed with `--pause-at` stopped itself (SIGSTOP) at its point; the
    /// driver also waits for the kernel to report it stopped, and leaves it stopped (it is
    /// not frozen and thawed around snapshots) until its `Stop::Continue`.
    Paused,
}

impl Ready {
    /// The event kind, as the events file spells it.
    pub fn kind(self) -> &'static str {
        match self {
            Ready::Listening => "ready",
            Ready::LockHeld => "lock-held",
            Ready::Paused => "paused",
        }
    }

    /// Whether `event` is the one this readiness waits for.
    pub fn is(self, event: &Event) -> bool {
        matches!(
            (self, event),
            (Ready::Listening, Event::Ready { .. })
                | (Ready::LockHeld, Event::LockHeld { .. })
                | (Ready::Paused, Event::Paused { .. })
        )
    }
}

/// A step whose process keeps running while later steps run (a server, a lock holder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Background {
    /// The driver waits (bounded) for this event in the step's events before going on.
    pub ready: Ready,
    /// Stop it right after the step of this name ends (None: at the scenario's end).
    pub stop_after: Option<&'static str>,
    pub stop: Stop,
}

/// One process the driver runs.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// The phase (subcommand) it runs: `sender`, `verify`, …
    pub phase: &'static str,
    /// Arguments after the subcommand, without crash flags.
    pub args: Vec<String>,
    /// `POINT[@N]` when the step crashes.
    pub crash: Option<String>,
    pub expected_exit: i32,
    pub expect: Expect,
    /// Started in the background instead of run to its end (None: an ordinary step).
    pub background: Option<Background>,
}

impl Step {
    pub fn new(
        name: &str,
        phase: &'static str,
        args: &[&str],
        expected_exit: i32,
        expect: Expect,
    ) -> Step {
        Step {
            name: name.to_string(),
            phase,
            args: args.iter().map(|a| a.to_string()).collect(),
            crash: None,
            expected_exit,
            expect,
            background: None,
        }
    }

    /// This step, run in the background.
    pub fn in_background(mut self, background: Background) -> Step {
        self.background = Some(background);
        self
    }

    /// A step that crashes at the first hit of `point` (a typed point of the lab: a
    /// misspelt one does not compile).
    pub fn crashing(name: &str, phase: &'static str, args: &[&str], point: crash::Point) -> Step {
        let mut step = Step::new(name, phase, args, crate::fail::EXIT_CRASH, Expect::Crash);
        step.crash = Some(point.name.to_string());
        step
    }

    /// A step that runs a role's typed argv to the given exit.
    pub fn of(name: &str, argv: &Argv, expected_exit: i32, expect: Expect) -> Step {
        let args: Vec<&str> = argv.args().iter().map(String::as_str).collect();
        Step::new(name, argv.role(), &args, expected_exit, expect)
    }

    /// A step that runs a role's typed argv and crashes at `point`.
    pub fn crashing_at(name: &str, argv: &Argv, point: crash::Point) -> Step {
        let args: Vec<&str> = argv.args().iter().map(String::as_str).collect();
        Step::crashing(name, argv.role(), &args, point)
    }

    /// The argv after `crashlab`, armed by `nemesis` when the step crashes.
    pub fn argv(&self, nemesis: &dyn Nemesis) -> Vec<String> {
        let mut argv = vec![self.phase.to_string()];
        argv.extend(self.args.iter().cloned());
        if let Some(point) = &self.crash {
            argv.extend(nemesis.arm(point));
        }
        argv
    }

    /// The exit status the step must end with under `nemesis`.
    pub fn expected_exit(&self, nemesis: &dyn Nemesis) -> i32 {
        if self.crash.is_some() {
            nemesis.expected_exit()
        } else {
            self.expected_exit
        }
    }

    /// The point name without `@N`.
    pub fn crash_point(&self) -> Option<&str> {
        self.crash
            .as_deref()
            .map(|c| c.split('@').next().unwrap_or(c))
    }

    /// The line a crash step's stdout must hold.
    pub fn crash_line(&self, nemesis: &dyn Nemesis) -> Option<String> {
        self.crash_point().map(|p| nemesis.crash_line(p))
    }

    /// The crash event a crash step's events must hold: its point, its hit, the nemesis.
    pub fn crash_event(&self, nemesis: &dyn Nemesis) -> Option<Event> {
        let (point, hit) = crash::split_spec(self.crash.as_deref()?);
        Some(Event::Crash {
            point: point.to_string(),
            hit,
            mode: nemesis.role_mode().to_string(),
        })
    }
}

/// An ordered list of steps.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    /// Evidence subdirectory (`None`: the run's top directory, for a lab with one scenario).
    pub dir: Option<String>,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// A scenario of a lab with several, in an evidence subdirectory of its own name.
    pub fn named(name: &str, steps: Vec<Step>) -> Scenario {
        Scenario {
            name: name.to_string(),
            dir: Some(name.to_string()),
            steps,
        }
    }
}

/// The readback JSON of a readback step: the last stdout line that is a JSON object.
pub fn readback_json(stdout: &str) -> Option<Value> {
    stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::Mode;
    use crate::engine::nemesis::of_mode;

    #[test]
    fn a_background_step_waits_for_its_own_event_kind() {
        let ready = Event::Ready { port: 7 };
        let held = Event::LockHeld {
            lock: "dispatch.lock".into(),
        };
        assert!(Ready::Listening.is(&ready) && !Ready::Listening.is(&held));
        assert!(Ready::LockHeld.is(&held) && !Ready::LockHeld.is(&ready));
        assert_eq!(
            (Ready::Listening.kind(), Ready::LockHeld.kind()),
            ("ready", "lock-held")
        );
    }

    #[test]
    fn a_crash_step_is_armed_and_judged_by_its_nemesis() {
        const POINT: crash::Point = crash::Point::new("sender.after-commit", "committed");
        let mut step = Step::crashing("c", "sender", &["--db", "s.db"], POINT);
        step.crash = Some("sender.after-commit@2".into());
        let kill = of_mode(Mode::Kill);
        assert_eq!(
            step.argv(kill),
            [
                "sender",
                "--db",
                "s.db",
                "--crash-at",
                "sender.after-commit@2",
                "--crash-mode",
                "kill"
            ]
        );
        assert_eq!(step.expected_exit(kill), 137);
        assert_eq!(
            step.crash_event(kill),
            Some(Event::Crash {
                point: "sender.after-commit".into(),
                hit: 2,
                mode: "kill".into()
            })
        );
    }
}
