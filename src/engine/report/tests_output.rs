//! Unit tests of what a picture reads of a process: its commits and crash from its events,
//! its last words from stdout and stderr.

use crate::engine::report::model::{self, parse_output};
use crate::events::Event;

/// The events a role writes beside these stdout lines (its commits and its crash), so the
/// fixtures read as the stdout a user sees.
pub(super) fn events_of(stdout: &str) -> Vec<Event> {
    stdout
        .lines()
        .filter_map(|line| {
            if let Some(rest) = line.strip_prefix("COMMITTED ") {
                let (db, what) = rest.split_once(' ').unwrap_or((rest, ""));
                return Some(Event::Commit {
                    db: db.into(),
                    what: what.into(),
                });
            }
            let rest = line.strip_prefix("CRASH ")?;
            let (point, how) = rest.split_once(' ').unwrap_or((rest, ""));
            let mode = if how == "exit=73" { "exit" } else { "kill" };
            Some(Event::Crash {
                point: point.into(),
                hit: 1,
                mode: mode.into(),
            })
        })
        .collect()
}

#[test]
fn events_give_commits_ids_and_crash_and_stdout_the_last_words() {
    let stdout =
        "SQL queue COMMIT\nCOMMITTED queue claim of delivery 1 message M1 by c1\nPOINT x #1\n\
         COMMITTED receiver inbox and ledger for message M1 (+25 to R1)\nCONSUMED applied=1\n\
         CRASH consumer.after-ack exit=73\n{\"a\":1}\n";
    let out = parse_output(
        stdout,
        "noise\ncrashlab: payload conflict\n",
        &events_of(stdout),
    );
    // Prose alone decides nothing: without its events the same stdout shows no commit.
    let prose = parse_output(stdout, "", &[]);
    assert!(prose.commits.is_empty() && prose.crash.is_none());
    assert_eq!(out.commits.len(), 2);
    assert_eq!(out.commits[0].db, "queue");
    assert_eq!(out.commits[0].what, "claim of delivery 1 message M1 by c1");
    assert_eq!(out.commits[1].ids, vec!["M1"]);
    assert_eq!(model::ids("receipt key K1"), vec!["K1"]);
    assert!(model::ids("delivery 3").is_empty());
    assert_eq!(out.crash.as_deref(), Some("consumer.after-ack exit=73"));
    assert_eq!(out.summary.as_deref(), Some("CONSUMED applied=1"));
    assert_eq!(out.error.as_deref(), Some("crashlab: payload conflict"));
}
