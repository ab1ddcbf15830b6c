//! The invariants of a case, in the order of the table's columns, and how a case ended.

use serde::Serialize;

/// The invariants, in the order of the table's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// The armed process crashed as the nemesis says: its exit status and its `crash` event.
    Reached,
    /// Every committed item has its effect.
    NoLostEffect,
    /// At most one effect per item, and no effect of an item never committed.
    NoDuplicateEffect,
    /// Nothing owed after recovery (the lab says what is owed).
    NothingStuck,
    /// Every commit a process reported (its `commit` event) is visible in the files.
    AcknowledgedDurable,
}

impl Invariant {
    pub const ALL: [Invariant; 5] = [
        Invariant::Reached,
        Invariant::NoLostEffect,
        Invariant::NoDuplicateEffect,
        Invariant::NothingStuck,
        Invariant::AcknowledgedDurable,
    ];

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no_lost_effect",
            Invariant::NoDuplicateEffect => "no_duplicate_effect",
            Invariant::NothingStuck => "nothing_stuck",
            Invariant::AcknowledgedDurable => "acknowledged_durable",
        }
    }

    /// The column title in tables and in the picture.
    pub fn title(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no lost effect",
            Invariant::NoDuplicateEffect => "no duplicate effect",
            Invariant::NothingStuck => "nothing stuck",
            Invariant::AcknowledgedDurable => "ack => durable",
        }
    }

    /// A title narrow enough for the stdout table.
    pub fn short(self) -> &'static str {
        match self {
            Invariant::Reached => "reached",
            Invariant::NoLostEffect => "no-lost",
            Invariant::NoDuplicateEffect => "no-dup",
            Invariant::NothingStuck => "no-stuck",
            Invariant::AcknowledgedDurable => "ack=>dur",
        }
    }

    /// One letter for the picture's narrow columns.
    pub fn letter(self) -> &'static str {
        match self {
            Invariant::Reached => "R",
            Invariant::NoLostEffect => "L",
            Invariant::NoDuplicateEffect => "D",
            Invariant::NothingStuck => "S",
            Invariant::AcknowledgedDurable => "A",
        }
    }
}

/// How a case ended, as the matrix colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Reached, every invariant held.
    Holds,
    /// Reached, at least one invariant broke.
    Breaks,
    /// The crash never happened: nothing to judge, never a pass.
    NotReached,
    /// A process failed or timed out for another reason than the crash: the case says nothing.
    Error,
}

/// The invariants of one case; `None` where nothing was judged (not reached, or an error).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Invariants {
    pub reached: Option<bool>,
    pub no_lost_effect: Option<bool>,
    pub no_duplicate_effect: Option<bool>,
    pub nothing_stuck: Option<bool>,
    pub acknowledged_durable: Option<bool>,
}

impl Invariants {
    pub fn get(&self, invariant: Invariant) -> Option<bool> {
        match invariant {
            Invariant::Reached => self.reached,
            Invariant::NoLostEffect => self.no_lost_effect,
            Invariant::NoDuplicateEffect => self.no_duplicate_effect,
            Invariant::NothingStuck => self.nothing_stuck,
            Invariant::AcknowledgedDurable => self.acknowledged_durable,
        }
    }
}
