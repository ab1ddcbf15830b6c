//! What happened to a process, as its events say, against its argv: the crash only where
//! argv armed one, at that point, in that mode, at the armed hit; an armed point not reached
//! names the armed point and was reached fewer times than armed; a consumer claims under its
//! own id only. (audit/events.rs holds each of these events to its stdout line.)

use std::collections::BTreeMap;

use super::output::{Armed, Ran, Which};
use crate::events::Event;

/// What the events say happened, for the ending's checks.
pub struct Facts {
    pub crashed: bool,
    pub not_reached: bool,
}

pub fn check(
    ran: &Ran<'_>,
    events: &[Event],
    armed: Option<&Armed>,
    say: &mut impl FnMut(Which, String),
) -> Facts {
    let mut hits: BTreeMap<&str, u32> = BTreeMap::new();
    let mut facts = Facts {
        crashed: false,
        not_reached: false,
    };
    for (index, event) in events.iter().enumerate() {
        let at = index + 1;
        match event {
            Event::Point { point, .. } => *hits.entry(point).or_insert(0) += 1,
            Event::Crash { point, hit, mode } => {
                facts.crashed = true;
                let Some(armed) = armed else {
                    say(
                        Which::Events,
                        format!("event {at}: a crash at {point}, but argv armed no crash"),
                    );
                    continue;
                };
                if *point != armed.point || mode != armed.mode.name() {
                    say(
                        Which::Events,
                        format!(
                            "event {at}: a crash at {point} ({mode}), argv armed {} ({})",
                            armed.point,
                            armed.mode.name()
                        ),
                    );
                }
                let reached = hits.get(point.as_str()).copied().unwrap_or(0);
                if *hit != armed.hit || reached != armed.hit {
                    say(
                        Which::Events,
                        format!(
                            "event {at}: the crash came at hit {hit} of {point} (reached {reached} times), argv armed hit {}",
                            armed.hit
                        ),
                    );
                }
            }
            Event::NotReached {
                point,
                hit,
                hits: n,
            } => {
                facts.not_reached = true;
                let reached = hits.get(point.as_str()).copied().unwrap_or(0);
                match armed {
                    Some(a) if a.point == *point && a.hit == *hit => {
                        if reached >= *hit || *n != reached {
                            say(
                                Which::Events,
                                format!(
                                    "event {at}: {point}@{hit} not reached ({n} hits), yet its events reach it {reached} times"
                                ),
                            );
                        }
                    }
                    _ => say(
                        Which::Events,
                        format!(
                            "event {at}: {point}@{hit} not reached, but argv armed '{}'",
                            ran.arg("--crash-at").unwrap_or("nothing")
                        ),
                    ),
                }
            }
            // A role run with --consumer-id claims under that id only.
            Event::Commit { what, .. } if what.starts_with("claim ") => {
                if let Some(id) = ran.arg("--consumer-id") {
                    if !what.ends_with(&format!(" by {id}")) {
                        say(
                            Which::Events,
                            format!("event {at}: a claim not by this process's consumer id {id}"),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    facts
}
