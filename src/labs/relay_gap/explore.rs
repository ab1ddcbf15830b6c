//! Lab f1's explore plan: the forced schedule of the scenarios (A stopped inside its
//! transaction holding id 7, B commits 8, the relay polls, A continued, the relay polls
//! again) with a crash armed at each point: in writer A (the first writer), or in the first
//! poll. Recovery: while the design's own view says rows are left, one more poll.
//!
//! Where `last-id` loses row 7: with no crash at all (`breaks_without_crash`), and wherever
//! A commits and the first poll remembers 8: A crashing after its commit, the first poll
//! crashing after it advanced. It holds where a crash changes the schedule: A killed inside
//! its transaction never commits 7 (nothing to lose), and a first poll killed after
//! publishing 8 but before remembering it leaves the mark at 0, so the next poll reads 7.

use anyhow::Result;

use super::pg::Pg;
use super::readback::{self, State};
use super::roles;
use super::schema::{OUTBOX, RECEIVER};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, Counts, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::{StepRecord, Steps};
use crate::engine::jepsen::{Anomaly, Op, Outcome};
use crate::engine::observed::named;
use crate::events::Event;

pub struct Exploration;

pub static PLAN: Exploration = Exploration;

pub static PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "last-id",
    at: &[
        At::every("gap-write.after-commit"),
        At::every("gap-relay.after-advance"),
    ],
    invariants: &[Invariant::NoLostEffect],
    anomalies: &[Anomaly::Unseen],
    says:
        "row 7 committed after 8 was published and remembered: below the mark, never read (unseen)",
    hidden: "",
}];

static WORDS: Words = Words {
    columns: &[
        ("rows", "rows"),
        ("published", "published"),
        ("missing", "missing"),
        ("polls", "polls"),
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the variant predicts a break here\n\
         no-lost: every committed Outbox row is published; no-dup: every published row is one committed row;\n\
         no-stuck: the design's own next poll has nothing left; ack=>dur: every commit a process reported is in the databases;\n\
         missing: committed rows never published; bad anomalies: lost-write, unseen, duplicate, G1a",
    pass: "PASS: pending-status and xid-horizon hold everywhere; last-id loses the late row exactly where predicted",
    svg_pass: "PASS: pending-status, xid-horizon hold; last-id loses the late row exactly where predicted",
};

/// The databases after a case, read by the harness (untraced).
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub state: State,
    /// Rows the design's own next poll would take.
    pub owed: i64,
}

impl Observed {
    fn read(work: &std::path::Path, design: &str) -> Result<Observed> {
        let mut ob = Pg::connect_in(work, OUTBOX.db, roles::OUTBOX_DB, "explore", false)?;
        let mut rx = Pg::connect_in(work, RECEIVER.db, roles::RECEIVER_DB, "explore", false)?;
        let state = readback::state_of(&mut ob, &mut rx).map_err(anyhow::Error::msg)?;
        let owed = readback::owed(&mut ob, design, &state).map_err(anyhow::Error::msg)?;
        Ok(Observed { state, owed })
    }
}

impl ExplorePlan for Exploration {
    fn design_word(&self) -> &'static str {
        "variant"
    }

    fn designs(&self) -> &'static [&'static str] {
        roles::VARIANTS
    }

    fn predictions(&self) -> &'static [Prediction] {
        PREDICTIONS
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::LAB.databases
    }

    /// A is started in the background and stops itself inside its transaction (the pause
    /// nemesis); it is continued after the first poll.
    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        steps.run("init", roles::init().into_vec())?;
        let a = roles::write(
            "A",
            super::lab::BODY_A,
            Some(super::points::WRITE_AFTER_INSERT),
        );
        let writer_a = steps.start("writer-a", a.into_vec())?;
        steps.run(
            "writer-b",
            roles::write("B", super::lab::BODY_B, None).into_vec(),
        )?;
        steps.run("relay-1", roles::relay(design).into_vec())?;
        steps.stop(writer_a)?;
        steps.run("relay-2", roles::relay(design).into_vec())
    }

    fn recover(&self, design: &'static str, _round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let o = Observed::read(steps.work(), design)?;
        let owed = o.owed > 0;
        steps.set_memo(o);
        if owed {
            steps.run("relay", roles::relay(design).into_vec())?;
        }
        Ok(owed)
    }

    fn judge(&self, steps: &Steps<'_>) -> Result<Judgement> {
        let o = match steps.memo::<Observed>() {
            Some(o) => o.clone(),
            None => {
                let design = design_of(steps.records()).ok_or_else(|| {
                    anyhow::anyhow!(
                        "no poll of this case reported its advance: its design is unknown"
                    )
                })?;
                Observed::read(steps.work(), design)?
            }
        };
        Ok(judge(&o, steps.records()))
    }

    /// `last-id` loses the late row under the forced schedule alone.
    fn breaks_without_crash(&self, design: &'static str) -> bool {
        design == "last-id"
    }
}

/// The design a case ran, from the relay's reported advance (`advance of poll N: last-id 8`,
/// `… marked 1`, `… horizon 748`): every case's second poll runs unarmed and reports one.
fn design_of(records: &[StepRecord]) -> Option<&'static str> {
    records
        .iter()
        .flat_map(|r| r.commits())
        .filter(|(db, what)| *db == "outbox" && what.starts_with("advance of "))
        .find_map(|(_, what)| {
            let after = what.split_once(": ")?.1;
            match after.split(' ').next()? {
                "last-id" => Some("last-id"),
                "marked" => Some("pending-status"),
                "horizon" => Some("xid-horizon"),
                _ => None,
            }
        })
}

/// The invariants on the databases after recovery, the reported commits against them, and
/// the history of rows in Jepsen's words.
pub fn judge(o: &Observed, steps: &[StepRecord]) -> Judgement {
    let s = &o.state;
    let mut j = Judgement {
        allowed: &[Anomaly::DuplicateDelivery],
        ..Judgement::default()
    };
    for id in &s.missing_ids {
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
    j.no_lost_effect = s.missing == 0;
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
    counts.add("missing", s.missing);
    counts.add("polls", s.relay.polls);
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
            number("poll").is_some_and(|p| s.relay.polls >= p)
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
