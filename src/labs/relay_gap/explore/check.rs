//! How a case of lab f1 is judged: the invariants on the databases after recovery, the
//! commits the processes reported against them, the rows in Jepsen's words.

use super::Observed;
use crate::engine::explore::plan::{Counts, Judgement};
use crate::engine::explore::steps::StepRecord;
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::named;
use crate::events::Event;
use crate::labs::relay_gap::readback::State;

/// The invariants on the databases after recovery, the reported commits against them, and
/// the history of rows in Jepsen's words.
pub fn judge(o: &Observed, steps: &[StepRecord]) -> Judgement {
    let s = &o.state;
    let mut j = Judgement {
        allowed: &[Anomaly::DuplicateDelivery],
        ..Judgement::default()
    };
    for id in &s.receiver.missing_ids {
        j.problems.push(format!(
            "lost row: message {id} committed in the outbox, never published"
        ));
    }
    let strays: Vec<i64> = s
        .receiver
        .ids
        .iter()
        .copied()
        .filter(|id| !s.outbox.ids.contains(id))
        .collect();
    for id in &strays {
        j.problems.push(format!(
            "published without cause: message {id} is in no committed Outbox row"
        ));
    }
    j.no_lost_effect = s.receiver.missing == 0;
    j.no_duplicate_effect = strays.is_empty();
    j.nothing_stuck = o.owed == 0;
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck after recovery: {} rows left for the relay's next poll",
            o.owed
        ));
    }
    j.acknowledged_durable = true;
    for (db, what) in steps.iter().flat_map(|r| r.commits()) {
        if !visible(s, db, what) {
            j.acknowledged_durable = false;
            j.problems
                .push(format!("reported commit not in the databases: {db} {what}"));
        }
    }
    let mut counts = Counts::default();
    counts.add("rows", s.outbox.rows);
    counts.add("published", s.receiver.published);
    counts.add("missing", s.receiver.missing);
    counts.add("polls", s.outbox.relay.polls);
    j.counts = counts;
    j.history = history(s, steps);
    j
}

/// Whether a reported commit is in the databases: a written row, published rows, a poll.
fn visible(s: &State, db: &str, what: &str) -> bool {
    let number = |w: &str| named(what, w).and_then(|n| n.parse::<i64>().ok());
    match db {
        "outbox" if what.starts_with("write of ") => {
            number("message").is_some_and(|id| s.outbox.ids.contains(&id))
        }
        "outbox" if what.starts_with("advance of ") => {
            number("poll").is_some_and(|p| s.outbox.relay.polls >= p)
        }
        "receiver" => what
            .rsplit(' ')
            .next()
            .unwrap_or("")
            .split(',')
            .filter_map(|id| id.parse::<i64>().ok())
            .all(|id| s.receiver.ids.contains(&id)),
        _ => true,
    }
}

/// One operation per committed row, in commit order (the order the writers ended: a writer
/// stopped inside its transaction commits when continued); its effect is its published row.
fn history(s: &State, steps: &[StepRecord]) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    for (db, what) in steps.iter().flat_map(|r| r.commits()) {
        if db == "outbox" && what.starts_with("write of ") {
            if let Some(id) = named(what, "message") {
                ops.push(Op {
                    item: id,
                    outcome: Outcome::Ok,
                    deliveries: 0,
                    effects: 0,
                });
            }
        }
    }
    for op in &mut ops {
        op.deliveries = steps
            .iter()
            .flat_map(|r| &r.events)
            .filter(|e| match e {
                Event::Applied { item } | Event::Duplicate { item } => *item == op.item,
                _ => false,
            })
            .count() as u32;
        op.effects = u32::from(
            op.item
                .parse::<i64>()
                .is_ok_and(|id| s.receiver.ids.contains(&id)),
        );
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::super::design_of;
    use super::*;
    use crate::engine::jepsen;
    use crate::engine::process::Ended;
    use crate::labs::relay_gap::readback::{OutboxState, ReceiverState, RelayState};

    fn record(role: &str, events: Vec<Event>) -> StepRecord {
        StepRecord {
            name: role.to_string(),
            role: role.to_string(),
            armed: false,
            in_scenario: true,
            ended: Ended {
                exit: 0,
                signal: None,
                wall_ms: 1.0,
                max_rss_kb: 0,
                timed_out: false,
            },
            events,
            events_error: None,
        }
    }

    /// The forced schedule's records, in the order the processes ended: B, the first
    /// poll (8), A (7), the second poll (`second` publishes these).
    fn records(advance: &str, second: &[&str]) -> Vec<StepRecord> {
        let mut polled = vec![];
        if !second.is_empty() {
            polled.push(Event::commit(
                "receiver",
                &format!("publish of poll 2: messages {}", second.join(",")),
            ));
            polled.extend(second.iter().map(|id| Event::Applied {
                item: id.to_string(),
            }));
        }
        polled.push(Event::commit(
            "outbox",
            &format!("advance of poll 2: {advance}"),
        ));
        vec![
            record(
                "gap-write",
                vec![Event::commit("outbox", "write of message 8 by B")],
            ),
            record(
                "gap-relay",
                vec![
                    Event::commit("receiver", "publish of poll 1: messages 8"),
                    Event::Applied { item: "8".into() },
                    Event::commit("outbox", &format!("advance of poll 1: {advance}")),
                ],
            ),
            record(
                "gap-write",
                vec![Event::commit("outbox", "write of message 7 by A")],
            ),
            record("gap-relay", polled),
        ]
    }

    fn observed(published: &[i64], owed: i64) -> Observed {
        Observed {
            state: State {
                outbox: OutboxState {
                    rows: 2,
                    pending: 0,
                    ids: vec![7, 8],
                    relay: RelayState {
                        last_id: 8,
                        horizon: 0,
                        polls: 2,
                    },
                },
                receiver: ReceiverState {
                    published: published.len() as i64,
                    ids: published.to_vec(),
                    missing: (2 - published.len()) as i64,
                    missing_ids: [7, 8]
                        .into_iter()
                        .filter(|id| !published.contains(id))
                        .collect(),
                },
            },
            owed,
        }
    }

    #[test]
    fn the_late_row_is_unseen_under_last_id_and_the_other_designs_hold() {
        let lost = records("last-id 8", &[]);
        assert_eq!(design_of(&lost), Some("last-id"));
        let j = judge(&observed(&[8], 0), &lost);
        assert!(!j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        assert!(j.acknowledged_durable, "{:?}", j.problems);
        let items: Vec<&str> = j.history.iter().map(|o| o.item.as_str()).collect();
        assert_eq!(items, ["8", "7"], "commit order");
        let f = jepsen::check(&j.history, j.allowed);
        let bad: Vec<(Anomaly, &str)> = f
            .bad_anomalies
            .iter()
            .map(|f| (f.anomaly, f.item.as_str()))
            .collect();
        assert_eq!(bad, [(Anomaly::Unseen, "7")]);
        assert_eq!(j.counts.get("missing"), 1);

        let held = records("marked 1", &["7"]);
        assert_eq!(design_of(&held), Some("pending-status"));
        let j = judge(&observed(&[7, 8], 0), &held);
        assert!(j.no_lost_effect && j.nothing_stuck && j.acknowledged_durable);
        assert!(jepsen::check(&j.history, j.allowed).valid());

        // A reported publish the receiver lacks is no durable commit; rows left are stuck.
        let j = judge(&observed(&[8], 1), &held);
        assert!(!j.acknowledged_durable && !j.nothing_stuck);
        assert_eq!(
            design_of(&records("horizon 750", &["7", "8"])),
            Some("xid-horizon")
        );
    }
}
