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

use super::readback::{self, State};
use super::relay::{Variant, VARIANTS};
use super::roles::{Init, Relay, Write, OUTBOX_DB, RECEIVER_DB};
use super::schema::OUTBOX;
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::{At, ExplorePlan, Judgement, Prediction, Words};
use crate::engine::explore::steps::{StepRecord, Steps};
use crate::engine::jepsen::Anomaly;
use crate::role::Role;
use crate::store::pg::Session;

mod check;
pub use check::judge;

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

/// Under a PostgreSQL kill (the armed role kills itself at the point, then the server is
/// killed and restarted): `last-id` loses 7 where A committed before the kill; a kill under
/// the first poll ends A's open transaction, so 7 never commits and nothing is lost.
pub static SERVER_PREDICTIONS: &[Prediction] = &[Prediction {
    variant: "last-id/postgres",
    at: &[At::every("gap-write.after-commit")],
    invariants: &[Invariant::NoLostEffect],
    anomalies: &[Anomaly::Unseen],
    says:
        "row 7 committed before the kill, after 8 was published and remembered: never read (unseen)",
    hidden: "",
}];

/// When the case's PostgreSQL started (`pg_postmaster_start_time()`): a restart changes it.
fn boot_time(work: &std::path::Path) -> Result<String> {
    let mut db = super::pg::open_in(work, OUTBOX_DB, &OUTBOX, Session::ReadOnly, false)?;
    let booted = super::pg::run(&mut db, "SELECT pg_postmaster_start_time()::text", &[])?;
    let cell = booted
        .rows
        .first()
        .and_then(|r| r.first().cloned().flatten());
    cell.ok_or_else(|| anyhow::anyhow!("the server gave no start time"))
}

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
        let dbs = (OUTBOX_DB, RECEIVER_DB);
        let (state, owed) = readback::read_in(work, dbs, Some(design))?;
        Ok(Observed { state, owed })
    }
}

impl ExplorePlan for Exploration {
    fn designs(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn predictions(&self) -> &'static [Prediction] {
        PREDICTIONS
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn databases(&self) -> &'static [&'static str] {
        super::lab::ON_SERVERS.databases
    }

    /// A is started in the background and stops itself inside its transaction (the pause
    /// nemesis); it is continued after the first poll.
    fn scenario(&self, design: &'static str, steps: &mut Steps<'_>) -> Result<()> {
        let relay = || Relay::of(Variant::named(design)).argv().into_vec();
        steps.run("init", Init::of().argv().into_vec())?;
        let a = Write::of(
            "A",
            super::lab::BODY_A,
            Some(super::points::WRITE_AFTER_INSERT),
        );
        let booted = boot_time(steps.work())?;
        let writer_a = steps.start_paused("writer-a", a.argv().into_vec())?;
        let b = Write::of("B", super::lab::BODY_B, None);
        steps.run("writer-b", b.argv().into_vec())?;
        steps.run("relay-1", relay())?;
        // A nemesis that kills the server (after the first poll's crash) ends A's open
        // transaction with it: A's commit finds no connection (exit 69) and 7 never commits.
        // The server's own boot time says whether it was restarted while A was stopped.
        let restarted = writer_a.is_some() && boot_time(steps.work())? != booted;
        if let Some(a) = writer_a {
            steps.resume(a)?;
            if restarted {
                steps.expect_last(crate::fail::EXIT_UNAVAILABLE);
            }
        }
        steps.run("relay-2", relay())
    }

    fn recover(&self, design: &'static str, _round: u32, steps: &mut Steps<'_>) -> Result<bool> {
        let o = Observed::read(steps.work(), design)?;
        let owed = o.owed > 0;
        steps.set_memo(o);
        if owed {
            let relay = Relay::of(Variant::named(design));
            steps.run("relay", relay.argv().into_vec())?;
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

    fn server_predictions(&self) -> &'static [Prediction] {
        SERVER_PREDICTIONS
    }

    /// `xid-horizon`'s horizon is cluster-wide: a case's paused writer would hold another
    /// case's horizon back.
    fn serial(&self) -> bool {
        true
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
