//! Deliberately broken designs, to show what each rule of the lab protects against.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// The design of the lab: queue commit before mark-sent, Inbox + ledger in one tx, ack last.
    Correct,
    /// Publisher marks the Outbox row sent before it writes the queue: a crash loses the message.
    MarkBeforeSend,
    /// Consumer keeps the Inbox in a process-local set: a restart credits again.
    MemoryInbox,
    /// Inbox insert and ledger credit in two transactions: a crash between loses the credit.
    SplitInboxTx,
    /// Consumer acks the delivery before it applies it: a crash loses the effect.
    AckBeforeApply,
}

impl Variant {
    pub const ALL: [Variant; 5] = [
        Variant::Correct,
        Variant::MarkBeforeSend,
        Variant::MemoryInbox,
        Variant::SplitInboxTx,
        Variant::AckBeforeApply,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::MarkBeforeSend => "mark-before-send",
            Variant::MemoryInbox => "memory-inbox",
            Variant::SplitInboxTx => "split-inbox-tx",
            Variant::AckBeforeApply => "ack-before-apply",
        }
    }

    /// The phase whose code the variant changes (`None` for the correct design).
    pub fn phase(self) -> Option<&'static str> {
        match self {
            Variant::Correct => None,
            Variant::MarkBeforeSend => Some("publisher"),
            Variant::MemoryInbox | Variant::SplitInboxTx | Variant::AckBeforeApply => {
                Some("consumer")
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Refuse a variant on a phase it does not change: it would run the correct code silently.
pub fn check_phase(variant: Variant, phase: &str) -> anyhow::Result<()> {
    match variant.phase() {
        Some(p) if p != phase => Err(crate::fail::usage(format!(
            "variant {} changes the {p}, not the {phase}",
            variant.name()
        ))),
        _ => Ok(()),
    }
}
