//! The designs of lab 14 on the stack: the correct one and four that each drop one guarantee
//! of PostgreSQL or RabbitMQ, to show what that guarantee protects.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Persistent messages, publisher confirms before mark-sent, Inbox + ledger in one
    /// synchronous commit, ack last.
    Correct,
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
    pub const ALL: [Variant; 5] = [
        Variant::Correct,
        Variant::AsyncCommit,
        Variant::NoConfirm,
        Variant::AutoAck,
        Variant::Transient,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
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
            Variant::NoConfirm | Variant::Transient => Some(super::roles::PUBLISHER),
            Variant::AsyncCommit | Variant::AutoAck => Some(super::roles::CONSUMER),
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Refuse a variant on a role it does not change: it would run the correct code silently.
pub fn check_phase(variant: Variant, phase: &str) -> anyhow::Result<()> {
    match variant.phase() {
        Some(p) if p != phase => Err(crate::fail::usage(format!(
            "variant {} changes the {p}, not the {phase}",
            variant.name()
        ))),
        _ => Ok(()),
    }
}
