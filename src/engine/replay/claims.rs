//! The commit claims the replay checks come from the process's commit events, not from the
//! prose: the SQL trace (stdout) says where each claim stands, its commit event says what it
//! claims. The audit holds each `COMMITTED` line to its commit event (audit/events.rs); here
//! the k-th `COMMITTED` line of a sequential role takes the k-th commit event's words, and a
//! threaded role's line the unused event it names (its workers may cross line and event).

use super::trace::Line;
use crate::events::Event;

/// Put each commit event's `db` and `what` in place of the `COMMITTED` line that stands for
/// it. Returns the problem when lines and events do not pair (the claims stay the lines').
pub fn from_events(lines: &mut [Line], events: &[Event], threaded: bool) -> Option<String> {
    let mut commits: Vec<Option<(&str, &str)>> = events
        .iter()
        .filter_map(|e| match e {
            Event::Commit { db, what } => Some(Some((db.as_str(), what.as_str()))),
            _ => None,
        })
        .collect();
    let reported = lines
        .iter()
        .filter(|l| matches!(l, Line::Committed { .. }))
        .count();
    if reported != commits.len() {
        return Some(format!(
            "{reported} COMMITTED lines, but {} commit events: the claims are not replayed from its events",
            commits.len()
        ));
    }
    let mut next = 0;
    for line in lines.iter_mut() {
        let Line::Committed { db, text } = line else {
            continue;
        };
        let at = if threaded {
            let same = commits
                .iter()
                .position(|c| *c == Some((db.as_str(), text.as_str())));
            same.or_else(|| commits.iter().position(|c| c.is_some()))
        } else {
            Some(next)
        };
        let (event_db, what) = commits[at.expect("as many events as lines")]
            .take()
            .expect("each event stands for one line");
        *db = event_db.to_string();
        *text = what.to_string();
        next += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(db: &str, text: &str) -> Line {
        Line::Committed {
            db: db.into(),
            text: text.into(),
        }
    }

    fn commit(db: &str, what: &str) -> Event {
        Event::Commit {
            db: db.into(),
            what: what.into(),
        }
    }

    #[test]
    fn the_claims_are_the_events_words_at_the_lines_places() {
        let mut lines = vec![
            Line::Other("POINT x #1".into()),
            committed("queue", "delivery of message M1"),
            committed("sender", "contract R1"),
        ];
        let events = [
            commit("queue", "delivery of message M9"),
            commit("sender", "contract R1"),
        ];
        assert_eq!(from_events(&mut lines, &events, false), None);
        assert_eq!(lines[1], committed("queue", "delivery of message M9"));
        // Threaded: the line takes the event that says the same, wherever it stands.
        let mut lines = vec![committed("a", "x"), committed("a", "y")];
        let events = [commit("a", "y"), commit("a", "x")];
        assert_eq!(from_events(&mut lines, &events, true), None);
        assert_eq!(lines, vec![committed("a", "x"), committed("a", "y")]);
        let mut lines = vec![committed("a", "x")];
        assert!(from_events(&mut lines, &[], false)
            .unwrap()
            .starts_with("1 COMMITTED lines, but 0 commit events"));
    }
}
