//! The checker: what one step's raw output and events must show. The driver calls it live
//! and the audit calls it again on archived output, so both judge by the same rules. What
//! happened (a crash, an armed point not reached) is read from the step's events; what a user
//! reads (a conflict's message, a readback) from its stdout and stderr.

use serde_json::{json, Value};

use crate::engine::nemesis::Nemesis;
use crate::engine::scenario::{readback_json, Expect, Step};
use crate::events::Event;

/// What a step showed, and every way it differs from what it had to show.
pub struct Verdict {
    pub expected: Value,
    pub observed: Value,
    pub problems: Vec<String>,
}

/// What one step left behind: its ending and its three files (the events already parsed,
/// or why they could not be).
pub struct Output<'a> {
    pub exit: i32,
    pub timed_out: bool,
    pub stdout: &'a str,
    pub stderr: &'a str,
    pub events: Result<&'a [Event], &'a str>,
}

/// Parse a step's events file strictly; the reason names the line, never a path.
pub fn parse_events(text: &str) -> Result<Vec<Event>, String> {
    crate::events::parse(text).map_err(|e| crate::fail::one_line(&e))
}

pub fn check(step: &Step, nemesis: &dyn Nemesis, output: &Output<'_>) -> Verdict {
    let Output {
        exit,
        timed_out,
        stdout,
        stderr,
        ..
    } = *output;
    let mut problems = Vec::new();
    let events: &[Event] = match output.events {
        Ok(events) => events,
        Err(why) => {
            problems.push(format!("its events cannot be read: {why}"));
            &[]
        }
    };
    let expected_exit = step.expected_exit(nemesis);
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
            // The scenario's crash, wherever the user moved it: its event proves it happened
            // (the audit holds the CRASH line of stdout to the event).
            let line = step.crash_line(nemesis);
            let crash = step.crash_event(nemesis);
            let seen = crash.as_ref().is_some_and(|c| events.contains(c));
            expected["crash_line"] = json!(line);
            observed["crash_line"] = json!(seen);
            // An armed point the phase never reached is said by the phase itself.
            let not_reached = events.iter().find_map(|e| {
                match e {
                Event::NotReached { point, hit, .. }
                    if crash.as_ref().is_some_and(|c| {
                        matches!(c, Event::Crash { point: p, hit: h, .. } if p == point && h == hit)
                    }) =>
                {
                    Some(crate::crash::not_reached_line(point, *hit))
                }
                _ => None,
            }
            });
            match (line, not_reached) {
                (Some(_), Some(missed)) if !seen => {
                    observed["not_reached"] = json!(true);
                    problems.push(format!("the armed point was never reached: '{missed}'"))
                }
                (Some(l), _) if !seen => {
                    problems.push(format!("no crash event where stdout must say '{l}'"))
                }
                // `--move-crash STEP=none`: the step runs to its end (its exit says so), and
                // like every step without a crash it must not crash either (below).
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
    // A step that was not meant to crash must not crash either.
    if step.crash.is_none() {
        for event in events {
            if let Event::Crash { point, hit, mode } = event {
                problems.push(format!("unexpected crash at {point}@{hit} ({mode})"));
            }
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
    use crate::crash::Mode;
    use crate::engine::nemesis::of_mode;
    use crate::engine::scenario::Step;

    const AFTER_COMMIT: crate::crash::Point =
        crate::crash::Point::new("sender.after-commit", "committed");

    fn crashing() -> Step {
        let mut step = Step::crashing("c", "sender", &[], AFTER_COMMIT);
        step.crash = Some(format!("{}@5", AFTER_COMMIT.name));
        step
    }

    fn output<'a>(exit: i32, stdout: &'a str, events: &'a [Event]) -> Output<'a> {
        Output {
            exit,
            timed_out: false,
            stdout,
            stderr: "",
            events: Ok(events),
        }
    }

    fn point(point: &str, hit: u32) -> Event {
        Event::Point {
            point: point.into(),
            hit,
        }
    }

    #[test]
    fn a_step_armed_and_not_reached_is_said_so_by_its_event() {
        let events = [
            point("sender.after-commit", 1),
            Event::NotReached {
                point: "sender.after-commit".into(),
                hit: 5,
                hits: 1,
            },
        ];
        let v = check(&crashing(), of_mode(Mode::Exit), &output(78, "", &events));
        assert_eq!(v.observed["not_reached"], true);
        assert_eq!(v.expected["exit"], 73);
        assert_eq!(
            v.problems,
            [
                "exit 78, expected 73",
                "the armed point was never reached: 'NOT-REACHED sender.after-commit@5'"
            ]
        );
        // Without the event, it is a missing crash, as before; a NOT-REACHED line alone is
        // prose, which decides nothing.
        let prose = "NOT-REACHED sender.after-commit@5\n";
        let v = check(&crashing(), of_mode(Mode::Exit), &output(0, prose, &[]));
        assert!(v.observed.get("not_reached").is_none());
        assert!(
            v.problems[1].starts_with("no crash event where stdout must say"),
            "{:?}",
            v.problems
        );
    }

    #[test]
    fn the_crash_is_the_event_at_the_armed_hit_in_the_armed_mode() {
        let crash = |hit: u32, mode: &str| Event::Crash {
            point: "sender.after-commit".into(),
            hit,
            mode: mode.into(),
        };
        let v = check(
            &crashing(),
            of_mode(Mode::Exit),
            &output(73, "", &[crash(5, "exit")]),
        );
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.observed["crash_line"], true);
        for wrong in [crash(4, "exit"), crash(5, "abort")] {
            let v = check(&crashing(), of_mode(Mode::Exit), &output(73, "", &[wrong]));
            assert_eq!(v.observed["crash_line"], false);
            assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
        }
        let unread = Output {
            events: Err("line 1: expected value"),
            ..output(73, "", &[])
        };
        let v = check(&crashing(), of_mode(Mode::Exit), &unread);
        assert_eq!(
            v.problems[0],
            "its events cannot be read: line 1: expected value"
        );
    }

    #[test]
    fn a_crash_moved_to_none_expects_a_clean_exit() {
        let mut step = crashing();
        step.crash = None;
        step.expected_exit = 0;
        let v = check(
            &step,
            of_mode(Mode::Exit),
            &output(0, "COMMITTED sender x\n", &[]),
        );
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert_eq!(v.expected["exit"], 0);
        let crashed = [Event::Crash {
            point: "sender.after-commit".into(),
            hit: 1,
            mode: "exit".into(),
        }];
        let v = check(&step, of_mode(Mode::Exit), &output(73, "", &crashed));
        assert_eq!(v.problems.len(), 2, "{:?}", v.problems);
        assert_eq!(
            v.problems[1],
            "unexpected crash at sender.after-commit@1 (exit)"
        );
    }
}
