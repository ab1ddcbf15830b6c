//! A process's events against its stdout and its record. The events decide what happened
//! (a crash, a commit, readiness); stdout is what users read; the two are written by the same
//! process, one right after the other, so wherever both speak they must say the same:
//!
//! - the first event is `start` with the process's own role, once;
//! - `POINT`, `COMMITTED`, `CRASH`, `NOT-REACHED`, `READY`, `LOCKED`, `STOPPED` and `PAUSED`
//!   lines are its point, commit, crash, not-reached, ready, lock-held, stopped and paused
//!   events, one for one, in the same order (a threaded role's workers interleave the two
//!   writes, so there only the same ones);
//! - a process that crashed has the crash as its last event and no `end`; one that ended by
//!   itself has `end` last, with the exit code processes.json records; one ended by a signal
//!   has no `end`;
//! - a process with no events at all never got to open its events file: that is a usage
//!   error (exit 2) or an events file it could not open (exit 74), nothing else.

use super::output::Ran;
use crate::crash;
use crate::events::Event;
use crate::fail;

/// Which file a disagreement is named in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The events file alone (its own shape, or against the record).
    Events,
    /// Stdout and the events disagree: both are named.
    Both,
}

/// The kinds of fact both files state, in the words of the stdout line.
const KINDS: &[&str] = &[
    "POINT",
    "COMMITTED",
    "CRASH",
    "NOT-REACHED",
    "READY",
    "LOCKED",
    "STOPPED",
    "PAUSED",
];

/// An event as the one line of stdout that goes with it (None: it has no line).
pub fn as_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Point { point, hit } => format!("POINT {point} #{hit}"),
        Event::Commit { db, what } => format!("COMMITTED {db} {what}"),
        Event::Crash { point, mode, .. } => match super::command::mode_named(mode) {
            Some(mode) => crash::crash_line(point, mode),
            None => format!("CRASH {point} in no mode '{mode}'"),
        },
        Event::NotReached { point, hit, .. } => crash::not_reached_line(point, *hit),
        Event::Ready { port } => format!("READY {port}"),
        Event::LockHeld { lock } => format!("LOCKED {lock}"),
        Event::Stopped { why } => format!("STOPPED ({why})"),
        Event::Paused { point, hit } => crate::pause::paused_line(point, *hit),
        _ => return None,
    })
}

/// A stdout line in the form `as_line` gives its event: a `READY` line by its port, a
/// `STOPPED` line by its reason; None for a line no event goes with.
fn comparable(line: &str) -> Option<String> {
    let word = line.split(' ').next()?;
    if !KINDS.contains(&word) {
        return None;
    }
    Some(match word {
        "READY" => line.split(' ').take(2).collect::<Vec<_>>().join(" "),
        "STOPPED" => match line.rfind(" (") {
            Some(at) => format!("STOPPED{}", &line[at..]),
            None => line.to_string(),
        },
        _ => line.to_string(),
    })
}

/// Every way `events` disagree with the stdout and the record of the process `ran`.
pub fn check(ran: &Ran<'_>, events: &[Event], threaded: bool) -> Vec<(Side, String)> {
    let mut problems = Vec::new();
    let mut say = |side: Side, text: String| problems.push((side, text));
    if events.is_empty() {
        if ran.exit != fail::EXIT_USAGE && ran.exit != fail::EXIT_IOERR {
            say(
                Side::Events,
                format!(
                    "no events, yet the process ran (exit {}); only a usage error or an events file it could not open leaves none",
                    ran.exit
                ),
            );
        }
        return problems;
    }
    shape(ran, events, &mut say);
    for kind in KINDS {
        let lines: Vec<(usize, String)> = ran
            .stdout
            .lines()
            .enumerate()
            .filter_map(|(i, l)| comparable(l).map(|c| (i + 1, c)))
            .filter(|(_, c)| c.starts_with(&format!("{kind} ")) || c == kind)
            .collect();
        let said: Vec<(usize, String)> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| as_line(e).map(|l| (i + 1, l)))
            .filter(|(_, l)| l.starts_with(&format!("{kind} ")))
            .collect();
        if let Some(text) = first_difference(&lines, &said, threaded) {
            say(Side::Both, text);
        }
    }
    problems
}

/// The first place where the lines and the events of one kind part.
fn first_difference(
    lines: &[(usize, String)],
    said: &[(usize, String)],
    threaded: bool,
) -> Option<String> {
    let (mut lines, mut said) = (lines.to_vec(), said.to_vec());
    if threaded {
        // Workers write line and event one after the other, but two workers may cross.
        lines.sort_by(|a, b| a.1.cmp(&b.1));
        said.sort_by(|a, b| a.1.cmp(&b.1));
    }
    let n = lines.len().max(said.len());
    (0..n).find_map(|i| match (lines.get(i), said.get(i)) {
        (Some((_, l)), Some((_, e))) if l == e => None,
        (Some((at, l)), Some((m, e))) => Some(format!(
            "stdout line {at} '{l}', but event {m} of its events says '{e}'"
        )),
        (None, Some((m, e))) => Some(format!(
            "stdout lacks the line '{e}' that event {m} of its events records"
        )),
        (Some((at, l)), None) => Some(format!("stdout line {at} '{l}' has no event")),
        (None, None) => None,
    })
}

/// Start first and once; the crash last and no `end` after it; `end` last with the recorded
/// exit when the process ended by itself, none when a signal ended it.
fn shape(ran: &Ran<'_>, events: &[Event], say: &mut impl FnMut(Side, String)) {
    match &events[0] {
        Event::Start { role, .. } if role == ran.phase() => {}
        Event::Start { role, .. } => say(
            Side::Events,
            format!(
                "event 1 starts role '{role}', but argv runs {}",
                ran.phase()
            ),
        ),
        other => say(
            Side::Events,
            format!("event 1 is '{}', not the start", kind(other)),
        ),
    }
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::Start { .. }))
        .count();
    if starts > 1 {
        say(
            Side::Events,
            format!("{starts} start events; a process starts once"),
        );
    }
    let last = events.len();
    let crashes: Vec<usize> = positions(events, |e| matches!(e, Event::Crash { .. }));
    let ends: Vec<usize> = positions(events, |e| matches!(e, Event::End { .. }));
    if crashes.len() > 1 {
        say(
            Side::Events,
            format!("{} crash events; a process crashes once", crashes.len()),
        );
    }
    if let Some(&at) = crashes.first() {
        if at != last {
            say(
                Side::Events,
                format!("event {at} is the crash, yet events follow it"),
            );
        }
        if !ends.is_empty() {
            say(
                Side::Events,
                format!(
                    "event {} ends a process that crashed at event {at}",
                    ends[0]
                ),
            );
        }
        return;
    }
    match (ran.signal, ends.as_slice()) {
        (Some(_), []) => {}
        (Some(signal), [at, ..]) => say(
            Side::Events,
            format!("event {at} is an end, yet signal {signal} ended the process (processes.json)"),
        ),
        (None, []) => say(
            Side::Events,
            format!(
                "no end event, yet the process ended by itself with exit {} (processes.json)",
                ran.exit
            ),
        ),
        (None, [at]) => {
            let Event::End { code } = &events[at - 1] else {
                unreachable!("positions found an end here");
            };
            if *at != last {
                say(
                    Side::Events,
                    format!("event {at} is the end, yet events follow it"),
                );
            }
            if *code != ran.exit {
                say(
                    Side::Events,
                    format!(
                        "the end event says exit {code}, processes.json records exit {}",
                        ran.exit
                    ),
                );
            }
        }
        (None, many) => say(
            Side::Events,
            format!("{} end events; a process ends once", many.len()),
        ),
    }
}

/// 1-based positions of the events `pick` accepts.
fn positions(events: &[Event], pick: impl Fn(&Event) -> bool) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| pick(e))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The kind of an event, as the file spells it.
pub fn kind(event: &Event) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v["event"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran<'a>(argv: &'a [String], exit: i32, signal: Option<i32>, stdout: &'a str) -> Ran<'a> {
        Ran {
            argv,
            exit,
            signal,
            timed_out: false,
            stdout,
            stderr: "",
            server_stores: &[],
        }
    }

    fn start() -> Event {
        Event::Start {
            role: "sender".into(),
            pid: 9,
        }
    }

    fn commit(what: &str) -> Event {
        Event::Commit {
            db: "sender".into(),
            what: what.into(),
        }
    }

    #[test]
    fn lines_and_events_agree_one_for_one_in_order() {
        let argv: Vec<String> = ["crashlab", "sender"].map(String::from).to_vec();
        let stdout = "SQL sender COMMIT\nCOMMITTED sender a\nCOMMITTED sender b\n";
        let events = [start(), commit("a"), commit("b"), Event::End { code: 0 }];
        assert!(check(&ran(&argv, 0, None, stdout), &events, false).is_empty());
        // Reordered: a sequential role must keep the order; a threaded one need not.
        let swapped = [start(), commit("b"), commit("a"), Event::End { code: 0 }];
        let problems = check(&ran(&argv, 0, None, stdout), &swapped, false);
        assert_eq!(
            problems,
            [(
                Side::Both,
                "stdout line 2 'COMMITTED sender a', but event 2 of its events says 'COMMITTED sender b'".to_string()
            )]
        );
        assert!(check(&ran(&argv, 0, None, stdout), &swapped, true).is_empty());
        // A line deleted, an event deleted.
        let one_line = "COMMITTED sender a\n";
        let problems = check(&ran(&argv, 0, None, one_line), &events, false);
        assert_eq!(
            problems[0].1,
            "stdout lacks the line 'COMMITTED sender b' that event 3 of its events records"
        );
        let one_event = [start(), commit("a"), Event::End { code: 0 }];
        let problems = check(&ran(&argv, 0, None, stdout), &one_event, false);
        assert_eq!(
            problems[0].1,
            "stdout line 3 'COMMITTED sender b' has no event"
        );
    }

    #[test]
    fn the_end_goes_with_the_recorded_ending() {
        let argv: Vec<String> = ["crashlab", "sender"].map(String::from).to_vec();
        let crash = Event::Crash {
            point: "sender.after-commit".into(),
            hit: 1,
            mode: "exit".into(),
        };
        let line = "CRASH sender.after-commit exit=73\n";
        assert!(check(
            &ran(&argv, 73, None, line),
            &[start(), crash.clone()],
            false
        )
        .is_empty());
        let ended_after_crash = [start(), crash.clone(), Event::End { code: 73 }];
        let problems = check(&ran(&argv, 73, None, line), &ended_after_crash, false);
        assert!(problems
            .iter()
            .any(|(_, p)| p.contains("yet events follow it")));
        assert!(problems
            .iter()
            .any(|(_, p)| p.contains("ends a process that crashed")));
        let wrong_code = [start(), Event::End { code: 1 }];
        let problems = check(&ran(&argv, 0, None, ""), &wrong_code, false);
        assert_eq!(
            problems[0].1,
            "the end event says exit 1, processes.json records exit 0"
        );
        let killed = [start(), Event::End { code: 0 }];
        assert_eq!(
            check(&ran(&argv, 137, Some(9), ""), &killed, false).len(),
            1
        );
        assert!(check(&ran(&argv, 137, Some(9), ""), &[start()], false).is_empty());
        assert_eq!(check(&ran(&argv, 0, None, ""), &[], false).len(), 1);
        assert!(check(&ran(&argv, 2, None, ""), &[], false).is_empty());
        let other_role = [
            Event::Start {
                role: "consumer".into(),
                pid: 1,
            },
            Event::End { code: 0 },
        ];
        assert_eq!(check(&ran(&argv, 0, None, ""), &other_role, false).len(), 1);
    }

    #[test]
    fn ready_and_stopped_lines_compare_by_port_and_reason() {
        assert_eq!(
            comparable("READY 4000 mode=keyed workers=4 key_ttl_ms=forever").as_deref(),
            Some("READY 4000")
        );
        assert_eq!(
            comparable("STOPPED receiver (sigterm)").as_deref(),
            Some("STOPPED (sigterm)")
        );
        assert_eq!(comparable("SQL sender BEGIN"), None);
        assert_eq!(
            as_line(&Event::Stopped {
                why: "sigterm".into()
            })
            .as_deref(),
            Some("STOPPED (sigterm)")
        );
    }
}
