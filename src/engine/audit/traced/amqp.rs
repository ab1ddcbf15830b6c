//! `AMQP …` trace lines as AMQP 0-9-1 operations, and one process's operations checked as the
//! protocol allows them on its one channel: publishes numbered 1, 2, 3… (the broker numbers a
//! confirm channel's publishes so, and the role traces the same count); a confirm only of a
//! tag this channel published and not yet confirmed, with that publish's message id; delivery
//! tags 1, 2, 3… (channel-scoped, one per `basic.get-ok` or `basic.deliver`); an ack or nack
//! only of a manual-ack delivery of this channel not yet settled, with its message id.

use std::collections::BTreeMap;

/// The first word of a broker operation's line.
pub const WORD: &str = "AMQP";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Publish {
        queue: String,
        message: String,
        publish: String,
        tag: u64,
        persistent: bool,
    },
    /// The broker's answer to a publish: `ack`, or anything else (`nack`, `not-requested`).
    Confirm {
        message: String,
        tag: u64,
        ack: bool,
    },
    Deliver {
        queue: String,
        message: String,
        publish: String,
        tag: u64,
        redelivered: bool,
        auto_ack: bool,
    },
    /// `confirm.select`: the channel is in confirm mode from here on (traced by a role that
    /// writes `AMQP confirm-select`; without it, the first confirm shows the mode).
    Select,
    /// `ack`, or `nack` (with `requeue`).
    Settle {
        message: String,
        tag: u64,
        nack: bool,
        requeue: bool,
    },
}

/// The operation of an `AMQP …` line; None for any other line; Err for an AMQP line that
/// does not read as one of the five.
pub fn parse(line: &str) -> Option<Result<Op, String>> {
    let rest = line.strip_prefix(WORD)?.strip_prefix(' ')?;
    let mut words = rest.split(' ');
    let verb = words.next().unwrap_or("");
    let mut fields = BTreeMap::new();
    let mut bare = Vec::new();
    for word in words {
        match word.split_once('=') {
            Some((k, v)) => {
                fields.insert(k, v);
            }
            None => bare.push(word),
        }
    }
    let text = |k: &str| -> Result<String, String> {
        fields
            .get(k)
            .map(|v| v.to_string())
            .ok_or_else(|| format!("an AMQP {verb} line without {k}="))
    };
    let number = |k: &str| -> Result<u64, String> {
        text(k)?
            .parse::<u64>()
            .map_err(|_| format!("an AMQP {verb} line whose {k}= is not a number"))
    };
    let flag = |k: &str| -> Result<bool, String> {
        match text(k)?.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!(
                "an AMQP {verb} line whose {k}= is not true or false"
            )),
        }
    };
    let op = (|| -> Result<Op, String> {
        Ok(match verb {
            "publish" => Op::Publish {
                queue: text("queue")?,
                message: text("message")?,
                publish: text("publish")?,
                tag: number("tag")?,
                persistent: flag("persistent")?,
            },
            "confirm" => Op::Confirm {
                message: text("message")?,
                tag: number("tag")?,
                ack: bare == ["ack"],
            },
            "deliver" => Op::Deliver {
                queue: text("queue")?,
                message: text("message")?,
                publish: text("publish")?,
                tag: number("tag")?,
                redelivered: flag("redelivered")?,
                auto_ack: flag("auto_ack")?,
            },
            "confirm-select" => Op::Select,
            "ack" => Op::Settle {
                message: text("message")?,
                tag: number("tag")?,
                nack: false,
                requeue: false,
            },
            "nack" => Op::Settle {
                message: text("message")?,
                tag: number("tag")?,
                nack: true,
                requeue: fields.get("requeue") == Some(&"true"),
            },
            _ => return Err(format!("an AMQP line of no known operation '{verb}'")),
        })
    })();
    Some(op)
}

/// One process's operations, each with its line number (1-based) in its stdout.
pub type Ops = Vec<(usize, Op)>;

/// Problems of one process's channel, each (line number, text). `ended_well`: it exited 0
/// by itself, so its channel was closed normally (every publish on a confirm channel then
/// had its answer).
pub fn protocol(ops: &Ops, ended_well: bool) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    // tag -> (message, confirmed)
    let mut published: BTreeMap<u64, (String, bool)> = BTreeMap::new();
    // tag -> (message, settled); manual-ack deliveries only
    let mut delivered: BTreeMap<u64, (String, bool)> = BTreeMap::new();
    let mut deliveries = 0u64;
    let mut confirm_mode = false;
    let selects = ops.iter().any(|(_, op)| *op == Op::Select);
    for (at, op) in ops {
        match op {
            Op::Select => {
                if confirm_mode {
                    problems.push((
                        *at,
                        "confirm.select on a channel already in confirm mode".to_string(),
                    ));
                }
                if !published.is_empty() {
                    problems.push((*at, "confirm.select after this channel published: its publishes are not numbered from 1".to_string()));
                }
                confirm_mode = true;
            }
            Op::Publish { message, tag, .. } => {
                let want = published.len() as u64 + 1;
                if *tag != want {
                    problems.push((
                        *at,
                        format!("publish of {message} has tag {tag}, but it is this channel's publish {want}"),
                    ));
                }
                published.insert(want, (message.clone(), false));
            }
            Op::Confirm { message, tag, .. } => {
                if selects && !confirm_mode {
                    problems.push((
                        *at,
                        format!("confirm of tag {tag} before the channel was put in confirm mode"),
                    ));
                }
                confirm_mode = true;
                match published.get_mut(tag) {
                    None => problems.push((
                        *at,
                        format!("confirm of tag {tag}, which this channel never published"),
                    )),
                    Some((_, true)) => problems.push((
                        *at,
                        format!("confirm of tag {tag}, which the broker had already confirmed"),
                    )),
                    Some((m, done)) => {
                        *done = true;
                        if m != message {
                            problems.push((
                                *at,
                                format!("confirm of tag {tag} names {message}, but that publish was {m}"),
                            ));
                        }
                    }
                }
            }
            Op::Deliver {
                message,
                tag,
                auto_ack,
                ..
            } => {
                deliveries += 1;
                if *tag != deliveries {
                    problems.push((
                        *at,
                        format!("delivery of {message} has tag {tag}, but it is this channel's delivery {deliveries}"),
                    ));
                }
                if !auto_ack {
                    delivered.insert(*tag, (message.clone(), false));
                }
            }
            Op::Settle {
                message, tag, nack, ..
            } => {
                let verb = if *nack { "nack" } else { "ack" };
                match delivered.get_mut(tag) {
                    None => problems.push((
                        *at,
                        format!("{verb} of delivery tag {tag}, which this channel was never delivered (with manual ack)"),
                    )),
                    Some((_, true)) => problems.push((
                        *at,
                        format!("{verb} of delivery tag {tag}, which this channel had already settled"),
                    )),
                    Some((m, done)) => {
                        *done = true;
                        if m != message {
                            problems.push((
                                *at,
                                format!("{verb} of delivery tag {tag} names {message}, but that delivery was {m}"),
                            ));
                        }
                    }
                }
            }
        }
    }
    if ended_well && confirm_mode {
        for (tag, (message, done)) in &published {
            if !done {
                let at = ops
                    .iter()
                    .find(|(_, op)| matches!(op, Op::Publish { tag: t, .. } if t == tag))
                    .map_or(0, |(at, _)| *at);
                problems.push((
                    at,
                    format!("publish of {message} (tag {tag}) on a confirm channel never confirmed, though the process ended well"),
                ));
            }
        }
    }
    problems
}
