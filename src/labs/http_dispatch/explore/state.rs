//! What a case of lab 13 leaves in its four files, read in this process, read-only, without
//! a trace, and checked against lab 13's own readback.

use std::path::Path;

use anyhow::Result;

use super::super::readback;
use super::super::schema::{HISTORY, INTENTS, RECEIPTS, RECEIVER};
use crate::store;

/// Every row the invariants look at. A file that does not exist reads as empty.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// (seq, key, status).
    pub intents: Vec<(i64, String, String)>,
    /// (attempt id, key).
    pub attempts: Vec<(i64, String)>,
    /// (key, replayed).
    pub receipts: Vec<(String, bool)>,
    pub history: Vec<String>,
    /// (effect id, key).
    pub effects: Vec<(i64, Option<String>)>,
}

impl Observed {
    pub fn has_receipt(&self, key: &str) -> bool {
        self.receipts.iter().any(|(k, _)| k == key)
    }

    /// Pending intents with no receipt: what a dispatcher still owes.
    pub fn owed(&self) -> Vec<&str> {
        self.intents
            .iter()
            .filter(|(_, k, status)| status == "pending" && !self.has_receipt(k))
            .map(|(_, k, _)| k.as_str())
            .collect()
    }

    /// Receipts whose history row is missing.
    pub fn history_owed(&self) -> Vec<&str> {
        self.receipts
            .iter()
            .filter(|(k, _)| !self.history.contains(k))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    pub fn quiescent(&self) -> bool {
        self.owed().is_empty() && self.history_owed().is_empty()
    }

    pub fn effects_of(&self, key: &str) -> i64 {
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref() == Some(key))
            .count() as i64
    }
}

/// Read the four files of a case's work directory, read-only, without a trace.
pub fn read(work: &Path) -> Result<Observed> {
    let mut o = Observed::default();
    let intents = work.join("intents.db");
    if let Some(db) = store::open_existing(&intents, &INTENTS, false)? {
        o.intents = store::rows(
            &db,
            "SELECT seq, key, status FROM intents ORDER BY seq",
            &intents,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        o.attempts = store::rows(
            &db,
            "SELECT attempt_id, key FROM attempts ORDER BY attempt_id",
            &intents,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    let receipts = work.join("receipts.db");
    if let Some(db) = store::open_existing(&receipts, &RECEIPTS, false)? {
        o.receipts = store::rows(
            &db,
            "SELECT key, replayed FROM receipts ORDER BY key",
            &receipts,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    let history = work.join("history.db");
    if let Some(db) = store::open_existing(&history, &HISTORY, false)? {
        o.history = store::rows(&db, "SELECT key FROM history ORDER BY seq", &history, |r| {
            r.get(0)
        })?;
    }
    let receiver = work.join("receiver.db");
    if let Some(db) = store::open_existing(&receiver, &RECEIVER, false)? {
        o.effects = store::rows(
            &db,
            "SELECT effect_id, key FROM effects ORDER BY effect_id",
            &receiver,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    Ok(o)
}

/// Lab 13's own readback must count what `read` saw; a difference stops the run.
pub fn cross_check(work: &Path, o: &Observed) -> Result<()> {
    let state = readback::read_traced(
        &readback::Paths {
            intents: &work.join("intents.db"),
            receipts: &work.join("receipts.db"),
            history: &work.join("history.db"),
            receiver: &work.join("receiver.db"),
        },
        false,
    )?;
    anyhow::ensure!(
        state.intents.intents == o.intents.len() as i64
            && state.intents.attempts == o.attempts.len() as i64
            && state.receipts.receipts == o.receipts.len() as i64
            && state.history.history == o.history.len() as i64
            && state.receiver.effects == o.effects.len() as i64,
        "explore's reader and lab 13's readback disagree on the files"
    );
    Ok(())
}
