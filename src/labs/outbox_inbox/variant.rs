//! The designs of lab 14: the correct one, and deliberately broken ones, each dropping one
//! rule (or, on the servers, one guarantee of a server) to show what it protects. Each stack
//! declares the designs it has: the SQL queue's break the protocol, the servers' give up
//! PostgreSQL's or RabbitMQ's durability.

use serde::Serialize;

use super::stack::Stack;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The design of the lab: the transport holds a message before its Outbox row is marked
    /// sent; Inbox + ledger in one (synchronous) commit; the ack last.
    Correct,
    /// Publisher marks the Outbox row sent before it writes the queue: a crash loses the message.
    MarkBeforeSend,
    /// Consumer keeps the Inbox in a process-local set: a restart credits again.
    MemoryInbox,
    /// Inbox insert and ledger credit in two transactions: a crash between loses the credit.
    SplitInboxTx,
    /// Consumer acks the delivery before it applies it: a crash loses the effect.
    AckBeforeApply,
    /// The consumer's session commits with `synchronous_commit=off`: a commit it was told
    /// about is lost when PostgreSQL is killed before its WAL is flushed.
    AsyncCommit,
    /// The publisher marks the Outbox row sent without waiting for the broker's confirm: a
    /// broker kill loses a message it never stored.
    NoConfirm,
    /// The consumer acks on delivery, before it applies: a consumer crash loses the effect.
    AutoAck,
    /// Non-persistent messages: a broker restart loses what is in the queue.
    Transient,
}

impl Variant {
    pub const ALL: [Variant; 9] = [
        Variant::Correct,
        Variant::MarkBeforeSend,
        Variant::MemoryInbox,
        Variant::SplitInboxTx,
        Variant::AckBeforeApply,
        Variant::AsyncCommit,
        Variant::NoConfirm,
        Variant::AutoAck,
        Variant::Transient,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::MarkBeforeSend => "mark-before-send",
            Variant::MemoryInbox => "memory-inbox",
            Variant::SplitInboxTx => "split-inbox-tx",
            Variant::AckBeforeApply => "ack-before-apply",
            Variant::AsyncCommit => "async-commit",
            Variant::NoConfirm => "no-confirm",
            Variant::AutoAck => "auto-ack",
            Variant::Transient => "transient",
        }
    }

    /// The role whose code the variant changes (`None` for the correct design).
    pub fn phase(self) -> Option<&'static str> {
        match self {
            Variant::Correct => None,
            Variant::MarkBeforeSend | Variant::NoConfirm | Variant::Transient => Some("publisher"),
            Variant::MemoryInbox
            | Variant::SplitInboxTx
            | Variant::AckBeforeApply
            | Variant::AsyncCommit
            | Variant::AutoAck => Some("consumer"),
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The variant role `role` runs in a run of this design: the design's own in the role it
    /// changes, the correct code in every other.
    pub fn in_role(self, role: &str) -> Variant {
        match self.phase() {
            Some(phase) if phase == role => self,
            _ => Variant::Correct,
        }
    }
}

/// The designs of a stack, the correct one first.
pub fn designs(stack: Stack) -> &'static [&'static str] {
    match stack {
        Stack::Sqlite => &[
            "correct",
            "mark-before-send",
            "memory-inbox",
            "split-inbox-tx",
            "ack-before-apply",
        ],
        Stack::Servers => &[
            "correct",
            "async-commit",
            "no-confirm",
            "auto-ack",
            "transient",
        ],
    }
}

/// Refuse a variant its stack lacks, or one on a role it does not change (it would run the
/// correct code silently): one line, exit 2.
pub fn check(variant: Variant, stack: Stack, phase: &str) -> anyhow::Result<()> {
    if !designs(stack).contains(&variant.name()) {
        return Err(crate::fail::usage(format!(
            "variant {} is not a design of lab 14 on stack {}; its designs: {}",
            variant.name(),
            stack.name(),
            designs(stack).join(", ")
        )));
    }
    match variant.phase() {
        Some(p) if p != phase => Err(crate::fail::usage(format!(
            "variant {} changes the {p}, not the {phase}",
            variant.name()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_a_design_of_one_stack_and_each_stack_starts_with_the_correct_one() {
        for v in Variant::ALL {
            let on: Vec<Stack> = Stack::ALL
                .into_iter()
                .filter(|s| designs(*s).contains(&v.name()))
                .collect();
            assert_eq!(on.len(), if v == Variant::Correct { 2 } else { 1 }, "{v:?}");
        }
        for s in Stack::ALL {
            assert_eq!(designs(s)[0], "correct");
            assert!(designs(s).iter().all(|d| Variant::from_name(d).is_some()));
        }
        assert!(check(Variant::AutoAck, Stack::Sqlite, "consumer").is_err());
        assert!(check(Variant::AutoAck, Stack::Servers, "consumer").is_ok());
        assert!(check(Variant::AutoAck, Stack::Servers, "publisher").is_err());
    }
}
