//! Lab f2's roles, each one struct: its flags (`clap::Args`), its argv (`Role::argv`, from the
//! same fields) and its run. The driver's scenarios, explore's cases and the tests build them.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::model::{self, Variant};
use super::points::POINTS;
use super::{consume, produce, readback, replay_parked};
use crate::fail;
use crate::out;
use crate::role::{arm, expected_stage, readback_out, CrashArgs, ReadbackArgs, Role};

/// The two database files of a run, relative to its work directory.
pub const QUEUE: &str = "queue.db";
pub const RECEIVER: &str = "receiver.db";

/// The producer's amounts as its one flag value: `25,5000,30`.
fn amounts_word<S: serde::Serializer>(amounts: &model::Amounts, s: S) -> Result<S::Ok, S::Error> {
    let words: Vec<String> = amounts.iter().map(i64::to_string).collect();
    s.serialize_str(&words.join(","))
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f2 producer: messages M1, M2, … with these amounts, in one commit, into an empty queue"
)]
pub struct Produce {
    /// The queue database; created with its schema when missing
    #[arg(long, value_name = "FILE")]
    pub queue: PathBuf,
    /// The amounts of M1, M2, … in queue order, comma-separated (the receiver accepts 1 to 1000)
    #[arg(long, value_name = "A,B,…", value_parser = model::parse_amounts, allow_hyphen_values = true)]
    #[serde(serialize_with = "amounts_word")]
    pub amounts: model::Amounts,
}

impl Produce {
    /// Into the run's queue file.
    pub fn of(amounts: &[i64]) -> Produce {
        assert!(
            !amounts.is_empty(),
            "a producer writes at least one message"
        );
        Produce {
            queue: QUEUE.into(),
            amounts: amounts.to_vec(),
        }
    }
}

impl Role for Produce {
    const NAME: &'static str = "poison-produce";

    fn run(self) -> Result<i32> {
        let n = produce::run(&self.queue, &self.amounts)?;
        out::line(&format!(
            "PRODUCED {}",
            out::plural(n, "message", "messages")
        ));
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f2 consumer: the head of the queue credited at the receiver, a refusal recorded, retried"
)]
pub struct Consume {
    /// The queue database (must exist)
    #[arg(long, value_name = "FILE")]
    pub queue: PathBuf,
    /// The receiver database; created when missing
    #[arg(long, value_name = "FILE")]
    pub receiver: PathBuf,
    /// What to do with a message the receiver refuses
    #[arg(long, value_enum, default_value_t = Variant::RetryThenSkip)]
    pub variant: Variant,
    /// retry-then-skip: failed attempts recorded before a message is parked; retry-forever: attempts this run makes at the head before it reports the stall
    #[arg(long, default_value_t = model::ATTEMPTS_MAX_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=model::ATTEMPTS_MAX_MAX as i64))]
    pub attempts_max: u32,
    /// Pause after each failed attempt
    #[arg(long, default_value_t = model::BACKOFF_MS_DEFAULT, value_parser = clap::value_parser!(u64).range(0..=model::BACKOFF_MS_MAX))]
    pub backoff_ms: u64,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Consume {
    /// The design on the run's files, with the default bounds.
    pub fn of(variant: Variant) -> Consume {
        Consume {
            queue: QUEUE.into(),
            receiver: RECEIVER.into(),
            variant,
            attempts_max: model::ATTEMPTS_MAX_DEFAULT,
            backoff_ms: model::BACKOFF_MS_DEFAULT,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Consume {
    const NAME: &'static str = "poison-consume";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        consume::run(&consume::Options {
            queue: &self.queue,
            receiver: &self.receiver,
            variant: self.variant,
            attempts_max: self.attempts_max,
            backoff_ms: self.backoff_ms,
        })?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f2 replay: one parked message applied once, after its fix (a corrected amount)"
)]
pub struct Replay {
    /// The queue database (must exist)
    #[arg(long, value_name = "FILE")]
    pub queue: PathBuf,
    /// The receiver database; created when missing
    #[arg(long, value_name = "FILE")]
    pub receiver: PathBuf,
    /// The parked message to replay (M1, M2, …)
    #[arg(long, value_parser = model::parse_message)]
    pub message: String,
    /// The corrected amount, written into the dead letter before the replay (default: as parked)
    #[arg(long, value_parser = model::parse_amount, allow_hyphen_values = true)]
    pub amount: Option<i64>,
    #[command(flatten)]
    #[serde(skip)]
    pub crash: CrashArgs,
}

impl Replay {
    /// Of `message` on the run's files, with its corrected amount if any.
    pub fn of(message: &str, amount: Option<i64>) -> Replay {
        Replay {
            queue: QUEUE.into(),
            receiver: RECEIVER.into(),
            message: message.to_string(),
            amount,
            crash: CrashArgs::default(),
        }
    }
}

impl Role for Replay {
    const NAME: &'static str = "poison-replay";

    fn run(self) -> Result<i32> {
        arm(&self.crash, Self::NAME, POINTS)?;
        replay_parked::run(&replay_parked::Options {
            queue: &self.queue,
            receiver: &self.receiver,
            message: &self.message,
            amount: self.amount,
        })?;
        Ok(fail::EXIT_OK)
    }
}

#[derive(clap::Args, Serialize, Debug, Clone, PartialEq, Eq)]
#[command(
    about = "Lab f2 readback: open the queue and the receiver read-only and print their state"
)]
pub struct Verify {
    /// The queue database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub queue: PathBuf,
    /// The receiver database (a missing file reads as empty and is named in `absent`)
    #[arg(long, value_name = "FILE")]
    pub receiver: PathBuf,
    #[command(flatten)]
    #[serde(flatten)]
    pub output: ReadbackArgs,
}

impl Verify {
    /// Of the run's files, as JSON, checked against `stage` if any.
    pub fn of(stage: Option<&str>) -> Verify {
        Verify {
            queue: QUEUE.into(),
            receiver: RECEIVER.into(),
            output: ReadbackArgs::expecting(stage),
        }
    }
}

impl Role for Verify {
    const NAME: &'static str = "poison-verify";

    fn run(self) -> Result<i32> {
        let stages = super::lab::ON_SQLITE.stages;
        let stage = expected_stage(self.output.expect.as_deref(), stages)?;
        let s = readback::read(&self.queue, &self.receiver, crate::store::trace_on())?;
        let line = format!(
            "queue: messages {} pending {} done {} parked {} failures {} dead_letters {} (parked {} replayed {}) | receiver: credits {} total {}",
            s.queue.messages, s.queue.pending, s.queue.done, s.queue.parked, s.queue.failures,
            s.queue.dead_letters, s.queue.dead_parked, s.queue.dead_replayed,
            s.receiver.credits, s.receiver.total
        );
        readback_out(self.output.json, &s, &line, stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_spells_its_flags_with_defaults_left_out() {
        assert_eq!(
            Produce::of(&[25, 5000]).argv().into_vec().join(" "),
            "poison-produce --queue queue.db --amounts 25,5000"
        );
        let c = Consume {
            attempts_max: 5,
            ..Consume::of(Variant::RetryForever)
        };
        assert_eq!(
            c.argv().args().join(" "),
            "--queue queue.db --receiver receiver.db --variant retry-forever --attempts-max 5"
        );
        assert_eq!(
            Consume::of(Variant::RetryThenSkip).argv().args().join(" "),
            "--queue queue.db --receiver receiver.db"
        );
        assert_eq!(
            Replay::of("M2", Some(500)).argv().args().join(" "),
            "--queue queue.db --receiver receiver.db --message M2 --amount 500"
        );
        assert_eq!(
            Verify::of(Some("final-skip")).argv().args().join(" "),
            "--queue queue.db --receiver receiver.db --json --expect final-skip"
        );
    }

    /// Each role's argv parses back into the very same values.
    #[test]
    fn every_argv_parses_back_into_its_role() {
        use crate::role::parses_back;
        parses_back(&Produce::of(&[1, -2]));
        parses_back(&Consume::of(Variant::RetryThenSkip));
        parses_back(&Consume {
            backoff_ms: 0,
            ..Consume::of(Variant::RetryForever)
        });
        parses_back(&Replay::of("M2", None));
        parses_back(&Verify::of(None));
        parses_back(&Verify::of(Some("final-skip")));
    }
}
