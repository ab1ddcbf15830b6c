//! Lab f2's judgement of one explore case: the files after recovery against the processes'
//! commit reports, the four invariants, and the history in Jepsen's words.

use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::Anomaly;
use crate::engine::observed::named;
use crate::events::Event;
use crate::labs::poison::history::{self, produced};
use crate::labs::poison::model::ATTEMPTS_MAX_DEFAULT;
use crate::labs::poison::readback::{Detail, Message};

static ALLOWED: &[Anomaly] = &[Anomaly::DuplicateDelivery];

/// The number after `word` in a commit report (`failed attempt 2 of …`).
fn number_after(what: &str, word: &str) -> Option<i64> {
    let mut words = what.split_whitespace();
    while let Some(w) = words.next() {
        if w == word {
            return words.next()?.trim_end_matches(',').parse().ok();
        }
    }
    None
}

/// Whether the files hold what one reported commit made durable.
fn durable(d: &Detail, db: &str, what: &str) -> bool {
    let find = |m: &str| d.messages.iter().find(|x| x.id == m);
    let msg = named(what, "message");
    let msg = msg.as_deref().and_then(find);
    let dead = |m: Option<&Message>, f: &dyn Fn(&str, i64) -> bool| {
        m.and_then(|m| m.dead.as_ref())
            .is_some_and(|(s, n)| f(s, *n))
    };
    match (db, what.split_whitespace().next().unwrap_or("")) {
        ("queue", "messages") => produced(what).iter().all(|m| find(m).is_some()),
        ("receiver", "credit") => {
            let amount = number_after(what, "amount");
            msg.is_some_and(|m| m.credited.is_some() && m.credited == amount)
        }
        ("queue", "ack") => msg.is_some_and(|m| m.status == "done"),
        ("queue", "failed") if what.starts_with("failed attempt") => {
            let n = number_after(what, "attempt").unwrap_or(i64::MAX);
            msg.is_some_and(|m| m.failures >= n)
        }
        ("queue", "failed") => {
            let n = number_after(what, "attempt").unwrap_or(i64::MAX);
            dead(msg, &|_, attempts| attempts >= n)
        }
        ("queue", "park") | ("queue", "corrected") => dead(msg, &|_, _| true),
        ("queue", "replay") => {
            dead(msg, &|s, _| s == "replayed") && msg.is_some_and(|m| m.status == "done")
        }
        _ => false,
    }
}

pub fn judge(d: &Detail, records: &[StepRecord]) -> Judgement {
    let mut problems = Vec::new();
    let ops = history::ops(
        records
            .iter()
            .flat_map(|r| r.events.iter().map(move |e| (r.role.as_str(), e))),
    );
    let mut acknowledged_durable = true;
    for r in records {
        for e in &r.events {
            if let Event::Commit { db, what } = e {
                if !durable(d, db, what) {
                    acknowledged_durable = false;
                    problems.push(format!(
                        "{}: reported '{db} {what}', the files do not hold it",
                        r.name
                    ));
                }
            }
        }
    }
    let mut no_lost_effect = true;
    for op in &ops {
        let held = d.messages.iter().find(|m| m.id == op.item);
        let kept = held.is_some_and(|m| m.credited.is_some() || m.status != "done");
        if !kept {
            no_lost_effect = false;
            problems.push(format!(
                "{}: produced, neither credited nor held by the queue",
                op.item
            ));
        }
    }
    let no_duplicate_effect = d.foreign_credits.is_empty() && ops.iter().all(|op| op.effects <= 1);
    let nothing_stuck = d.messages.iter().all(|m| m.status == "done")
        && d.messages
            .iter()
            .all(|m| m.dead.as_ref().is_none_or(|(s, _)| s == "replayed"));
    // The bound of retry-then-skip: a message is parked when its recorded failures reach it,
    // never later (retry-forever records on past it, run after run).
    for m in d.messages.iter().filter(|m| m.dead.is_some()) {
        if m.failures != i64::from(ATTEMPTS_MAX_DEFAULT) {
            problems.push(format!(
                "{} parked after {} recorded failures, the bound is {ATTEMPTS_MAX_DEFAULT}",
                m.id, m.failures
            ));
        }
    }
    let mut counts = Counts::default();
    counts.add("messages", d.messages.len() as i64);
    counts.add(
        "deliveries",
        ops.iter().map(|o| i64::from(o.deliveries)).sum(),
    );
    counts.add(
        "applied",
        d.messages.iter().filter(|m| m.credited.is_some()).count() as i64,
    );
    counts.add("failures", d.messages.iter().map(|m| m.failures).sum());
    counts.add(
        "parked",
        d.messages.iter().filter(|m| m.dead.is_some()).count() as i64,
    );
    counts.add(
        "replayed",
        d.messages
            .iter()
            .filter(|m| m.dead.as_ref().is_some_and(|(s, _)| s == "replayed"))
            .count() as i64,
    );
    counts.add(
        "left_pending",
        d.messages.iter().filter(|m| m.status == "pending").count() as i64,
    );
    Judgement {
        no_lost_effect,
        no_duplicate_effect,
        nothing_stuck,
        acknowledged_durable,
        counts,
        history: ops,
        allowed: ALLOWED,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, status: &str, credited: Option<i64>) -> Message {
        Message {
            id: id.into(),
            amount: 5,
            status: status.into(),
            failures: 0,
            dead: None,
            credited,
        }
    }

    #[test]
    fn reports_are_judged_against_the_files() {
        let mut d = Detail::default();
        d.messages.push(message("M1", "done", Some(25)));
        let mut m2 = message("M2", "parked", None);
        m2.failures = 3;
        m2.dead = Some(("parked".into(), 4));
        d.messages.push(m2);
        assert!(durable(&d, "queue", "messages M1 M2"));
        assert!(!durable(&d, "queue", "messages M1 M3"));
        assert!(durable(&d, "receiver", "credit of message M1 amount 25"));
        assert!(!durable(&d, "receiver", "credit of message M1 amount 26"));
        assert!(!durable(&d, "receiver", "credit of message M2 amount 500"));
        assert!(durable(&d, "queue", "ack of message M1"));
        assert!(!durable(&d, "queue", "ack of message M2"));
        assert!(durable(&d, "queue", "failed attempt 3 of message M2"));
        assert!(!durable(&d, "queue", "failed attempt 4 of message M2"));
        assert!(durable(
            &d,
            "queue",
            "failed replay of message M2, attempt 4"
        ));
        assert!(!durable(
            &d,
            "queue",
            "failed replay of message M2, attempt 5"
        ));
        assert!(durable(
            &d,
            "queue",
            "park of message M2 after 3 failed attempts"
        ));
        assert!(!durable(&d, "queue", "replay of message M2"));
        assert!(!durable(&d, "queue", "something else"));
    }
}
