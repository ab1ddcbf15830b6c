//! One scenario's processes as the trace checks see them: each with its place in the run
//! (which processes may have acted before which), its stdout lines and its AMQP operations.

use super::amqp::{Op, Ops};

pub struct Proc {
    /// `scenario/step` (or the step alone in a one-scenario run), as other findings say it.
    pub label: String,
    /// Its stdout, relative to the evidence directory.
    pub file: String,
    /// Its step's index in the scenario.
    pub index: usize,
    /// The last step index it may have acted in: its own, or, for a background step, the
    /// step after which the driver stops it (the scenario's last without one).
    pub last: usize,
    pub background: bool,
    /// Exit 0 by itself: its channel and connections were closed normally.
    pub ended_well: bool,
    pub lines: Vec<String>,
    pub ops: Ops,
    /// AMQP lines that do not read as an operation: (line, why).
    pub bad: Vec<(usize, String)>,
}

impl Proc {
    /// `label: line N \`text\``: where a finding is.
    pub fn at(&self, line: usize) -> String {
        let text = self
            .lines
            .get(line.wrapping_sub(1))
            .map_or("", String::as_str);
        let short: String = text.chars().take(120).collect();
        let more = if short.len() < text.len() { "…" } else { "" };
        format!("{}: line {line} `{short}{more}`", self.label)
    }

    /// Whether this process was alive (a background step not yet stopped) at the snapshot
    /// after step `k`.
    pub fn alive_at(&self, k: usize) -> bool {
        self.background && self.index <= k && k <= self.last
    }
}

/// A traced `SQL <db> <statement>` line: its database, its statement and the statement's
/// verb in upper case (`BEGIN`, `INSERT`); none for any other line.
pub fn sql(line: &str) -> Option<(&str, &str, String)> {
    let (db, statement) = line.strip_prefix("SQL ")?.split_once(' ')?;
    let verb = statement
        .split(' ')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    Some((db, statement, verb))
}

/// Whether line `a` of process `p` may have run before line `b` of process `q`: in one
/// process, by line order; two foreground steps, by step order (the driver runs one after
/// the other); with a background step, whenever their lives overlap.
pub fn may_precede(p: &Proc, a: usize, q: &Proc, b: usize) -> bool {
    if std::ptr::eq(p, q) {
        return a < b;
    }
    if !p.background && !q.background {
        return p.index < q.index;
    }
    p.index <= q.last
}

/// Whether line `a` of `p` surely ran before line `b` of `q`.
pub fn surely_precedes(p: &Proc, a: usize, q: &Proc, b: usize) -> bool {
    if std::ptr::eq(p, q) {
        return a < b;
    }
    !p.background && !q.background && p.index < q.index
}

/// Every publish of the scenario: (process, line, op).
pub fn publishes(procs: &[Proc]) -> Vec<(&Proc, usize, &Op)> {
    procs
        .iter()
        .flat_map(|p| p.ops.iter().map(move |(at, op)| (p, *at, op)))
        .filter(|(_, _, op)| matches!(op, Op::Publish { .. }))
        .collect()
}
