//! The record of one ended process, as processes.json (and explore's and chaos's records)
//! hold it: made here, in one place, from what the caller knows of the step and how it ended.

use super::Ended;
use crate::engine::evidence::Process;

/// What the caller knows of a process besides how it ended.
pub struct Step {
    pub scenario: String,
    pub step: String,
    /// `crashlab PHASE ARGS…`, argv[0] as `crashlab`.
    pub argv: Vec<String>,
    pub expected_exit: i32,
    /// `POINT[@N]` and the nemesis's name, when the step was armed.
    pub crash: Option<(String, String)>,
    /// Its stdout and stderr files, relative to the run's directory.
    pub stdout: String,
    pub stderr: String,
}

impl Ended {
    /// The process's record; wall time kept to the microsecond.
    pub fn record(&self, step: Step) -> Process {
        let (crash_point, crash_mode) = match step.crash {
            Some((point, mode)) => (Some(point), Some(mode)),
            None => (None, None),
        };
        Process {
            scenario: step.scenario,
            step: step.step,
            argv: step.argv,
            expected_exit: step.expected_exit,
            exit: self.exit,
            signal: self.signal,
            crash_point,
            crash_mode,
            stdout: step.stdout,
            stderr: step.stderr,
            wall_ms: (self.wall_ms * 1000.0).round() / 1000.0,
            max_rss_kb: self.max_rss_kb,
            timed_out: self.timed_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_holds_the_ending_and_the_step() {
        let ended = Ended {
            exit: 137,
            signal: Some(9),
            wall_ms: 1.234_567_8,
            max_rss_kb: 10,
            timed_out: true,
        };
        let p = ended.record(Step {
            scenario: "s".into(),
            step: "a".into(),
            argv: vec!["crashlab".into(), "sender".into()],
            expected_exit: 73,
            crash: Some(("sender.after-commit".into(), "hang".into())),
            stdout: "a.stdout.txt".into(),
            stderr: "a.stderr.txt".into(),
        });
        assert_eq!(p.wall_ms, 1.235);
        assert_eq!(p.crash_mode.as_deref(), Some("hang"));
        assert_eq!((p.exit, p.signal, p.timed_out), (137, Some(9), true));
    }
}
