//! What a load run's process said of its own life, from its events: it started as the role
//! its argv names, ended by itself with the exit it was reaped with (an `end` event), or was
//! killed from outside (no `end`), and never crashed at a point (a load run arms none). Chaos
//! and the audit of its evidence both judge every process this way, and collect the events
//! the lab's check reads.

use crate::engine::evidence::Process;
use crate::events::{self, Event};

/// The role of an argv recorded as `crashlab [--no-trace] ROLE …`.
pub fn role_of(argv: &[String]) -> Option<&str> {
    argv.iter()
        .skip(1)
        .map(String::as_str)
        .find(|a| !a.starts_with("--"))
}

/// Problems with one process's events, each one line.
pub fn check(record: &Process, events: &[Event]) -> Vec<String> {
    let mut problems = Vec::new();
    let role = role_of(&record.argv).unwrap_or("");
    match events.first() {
        Some(Event::Start { role: started, .. }) if started == role => {}
        Some(first) => problems.push(format!(
            "its first event is {first:?}, not the start of a {role}"
        )),
        // Killed before it opened its events file: nothing to say, and nothing wrong.
        None if record.signal.is_some() => {}
        None => problems.push("no events, yet it ran to its end".to_string()),
    }
    let end = events.iter().rposition(|e| matches!(e, Event::End { .. }));
    match (record.signal, end) {
        (None, Some(at)) if at + 1 == events.len() => {
            if events[at] != (Event::End { code: record.exit }) {
                problems.push(format!(
                    "its end event is {:?}, yet it exited {}",
                    events[at], record.exit
                ));
            }
        }
        (None, _) => problems.push(format!(
            "exited {} by itself, yet its events do not end with its end",
            record.exit
        )),
        // The kill landed between its last event and its exit: it had said all it would say.
        (Some(signal), Some(at)) if signal == libc::SIGKILL && at + 1 == events.len() => {}
        (Some(signal), Some(_)) => problems.push(format!(
            "an end event, yet signal {signal} ended it before it could write one"
        )),
        (Some(_), None) => {}
    }
    if events.iter().any(|e| matches!(e, Event::Crash { .. })) {
        problems.push("a crash event; a load run arms no crash point".to_string());
    }
    problems
}

/// Parse one process's events file (its text, or None when it is missing) and judge it.
/// Returns its events (empty when unreadable) and its problems.
pub fn read(record: &Process, text: Option<&str>) -> (Vec<Event>, Vec<String>) {
    let Some(text) = text else {
        return (Vec::new(), vec!["its events file is missing".to_string()]);
    };
    match events::parse(text) {
        Ok(events) => {
            let problems = check(record, &events);
            (events, problems)
        }
        Err(e) => (Vec::new(), vec![format!("its events file: {e:#}")]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(signal: Option<i32>, exit: i32) -> Process {
        let argv = vec!["crashlab".into(), "consumer".into(), "--queue".into()];
        Process::chaos("consumer-c1.1", argv, exit, signal)
    }

    fn start(role: &str) -> Event {
        Event::Start {
            role: role.into(),
            pid: 1,
        }
    }

    #[test]
    fn a_clean_exit_ends_with_its_end_and_a_kill_has_none() {
        let clean = [start("consumer"), Event::End { code: 0 }];
        assert!(check(&record(None, 0), &clean).is_empty());
        assert_eq!(check(&record(None, 75), &clean).len(), 1, "another exit");
        // A kill that lands between its end event and its exit: it had said everything.
        assert!(check(&record(Some(9), 137), &clean).is_empty());
        // Any other signal after an end, or events after the end, are not a life a role lives.
        assert_eq!(
            check(&record(Some(6), 134), &clean).len(),
            1,
            "aborted, yet an end"
        );
        let after_end = [start("consumer"), Event::End { code: 0 }, start("consumer")];
        assert_eq!(check(&record(Some(9), 137), &after_end).len(), 1);
        assert!(check(&record(Some(9), 137), &[start("consumer")]).is_empty());
        assert!(check(&record(Some(9), 137), &[]).is_empty());
        assert_eq!(check(&record(None, 0), &[]).len(), 2);
        assert_eq!(
            check(&record(None, 0), &[start("sender"), Event::End { code: 0 }]).len(),
            1
        );
        let crashed = [
            start("consumer"),
            Event::Crash {
                point: "consumer.after-ack".into(),
                hit: 1,
                mode: "exit".into(),
            },
            Event::End { code: 0 },
        ];
        assert_eq!(check(&record(None, 0), &crashed).len(), 1);
    }

    #[test]
    fn the_role_is_the_first_word_after_the_global_flags() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            role_of(&argv(&["crashlab", "--no-trace", "sender", "--db"])),
            Some("sender")
        );
        assert_eq!(
            role_of(&argv(&["crashlab", "publisher"])),
            Some("publisher")
        );
        assert_eq!(role_of(&argv(&["crashlab"])), None);
        let (events, problems) = read(&record(None, 0), Some("not json\n"));
        assert!(
            events.is_empty() && problems[0].contains("line 1"),
            "{problems:?}"
        );
        assert_eq!(read(&record(None, 0), None).1.len(), 1);
    }
}
