//! The checker: what one step's raw output must show. The driver calls it live and the audit
//! calls it again on archived output, so both judge by the same rules.

use serde_json::{json, Value};

use crate::crash::{self, Mode};
use crate::engine::scenario::{readback_json, Expect, Step};

/// What a step showed, and every way it differs from what it had to show.
pub struct Verdict {
    pub expected: Value,
    pub observed: Value,
    pub problems: Vec<String>,
}

pub fn check(
    step: &Step,
    mode: Mode,
    exit: i32,
    timed_out: bool,
    stdout: &str,
    stderr: &str,
) -> Verdict {
    let mut problems = Vec::new();
    let expected_exit = if step.crash.is_some() {
        mode.expected_exit()
    } else {
        step.expected_exit
    };
    if timed_out {
        problems.push("killed by the driver after its timeout".to_string());
    }
    if exit != expected_exit {
        problems.push(format!("exit {exit}, expected {expected_exit}"));
    }
    let mut expected = json!({"exit": expected_exit});
    let mut observed = json!({"exit": exit, "timed_out": timed_out});
    match &step.expect {
        Expect::Exit => {}
        Expect::Crash => {
            // The scenario's crash, wherever the user moved it: the line proves it happened.
            let line = step.crash_line(mode);
            let seen = line
                .as_ref()
                .is_some_and(|l| stdout.lines().any(|s| s == l));
            expected["crash_line"] = json!(line);
            observed["crash_line"] = json!(seen);
            // An armed point the phase never reached is said by the phase itself.
            let not_reached = step
                .crash
                .as_deref()
                .map(|spec| {
                    let (point, hit) = crash::split_spec(spec);
                    crash::not_reached_line(point, hit)
                })
                .filter(|l| stdout.lines().any(|s| s == l));
            match (line, not_reached) {
                (Some(_), Some(missed)) if !seen => {
                    observed["not_reached"] = json!(true);
                    problems.push(format!("the armed point was never reached: '{missed}'"))
                }
                (Some(l), _) if !seen => problems.push(format!("stdout lacks the line '{l}'")),
                // `--move-crash STEP=none`: the step runs to its end (its exit says so), and
                // like every step without a crash it must not print a CRASH line (below).
                _ => {}
            }
        }
        Expect::Output(text) => {
            let seen = stdout.contains(text) || stderr.contains(text);
            expected["output"] = json!(text);
            observed["output"] = json!(seen);
            if !seen {
                problems.push(format!("neither stdout nor stderr holds '{text}'"));
            }
        }
        Expect::Readback(stage) => {
            let fields: serde_json::Map<String, Value> = stage
                .fields
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            expected["stage"] = json!({"name": stage.name, "fields": fields});
            match readback_json(stdout) {
                Some(readback) => {
                    problems.extend(stage.diff(&readback));
                    observed["readback"] = readback;
                }
                None => {
                    observed["readback"] = Value::Null;
                    problems.push("stdout holds no readback JSON line".to_string());
                }
            }
        }
    }
    // A step that was not meant to crash must not print a CRASH line either.
    if step.crash.is_none() {
        if let Some(line) = stdout.lines().find(|l| l.starts_with("CRASH ")) {
            problems.push(format!("unexpected '{line}'"));
        }
    }
    Verdict {
        expected,
        observed,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scenario::Step;

    fn crashing() -> Step {
        Step::crashing("c", "sender", &[], "sender.after-commit@5")
    }

    #[test]
    fn a_step_armed_and_not_reached_is_said_so_by_its_own_line() {
        let stdout = "POINT sender.after-commit #1\nNOT-REACHED sender.after-commit@5\n";
        let v = check(&crashing(), Mode::Exit, 78, false, stdout, "");
        assert_eq!(v.observed["not_reached"], true);
        assert_eq!(v.expected["exit"], 73);
        assert_eq!(
            v.problems,
            [
                "exit 78, expected 73",
                "the armed point was never reached: 'NOT-REACHED sender.after-commit@5'"
            ]
        );
        // Without the line, it is a missing CRASH line, as before.
        let v = check(&crashing(), Mode::Exit, 0, false, "", "");
        assert!(v.observed.get("not_reached").is_none());
        assert!(
            v.problems[1].starts_with("stdout lacks the line"),
            "{:?}",
            v.problems
        );
    }

    #[test]
    fn a_crash_moved_to_none_expects_a_clean_exit() {
        let mut step = crashing();
        step.crash = None;
        step.expected_exit = 0;
        let v = check(&step, Mode::Exit, 0, false, "COMMITTED sender x\n", "");
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.expected["exit"], 0);
        let v = check(
            &step,
            Mode::Exit,
            73,
            false,
            "CRASH sender.after-commit exit=73\n",
            "",
        );
        assert_eq!(v.problems.len(), 2, "{:?}", v.problems);
    }
}
