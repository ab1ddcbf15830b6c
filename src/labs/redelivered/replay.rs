//! Lab f3's roles in the audit's replay: lab 13's receiver is checked by lab 13's own
//! claims; this lab's roles print lines the replay knows by their first word, and on SQLite
//! the consumer's RESPONSE, ACKED and LEASE-LOST lines are held to the statements around them.

use rusqlite::types::Value;

use super::roles::{Consumer, RECEIVER};
use crate::engine::replay::claims_api::{other_lines, statements, LabReplay, Proc, RoleClaims};
use crate::labs::http_dispatch::replay::RECEIVER_LINES;
use crate::role::Role;

pub const ON_SQLITE: LabReplay = LabReplay {
    // Lab 13's receiver serves requests on several workers.
    threaded: &[RECEIVER],
    raw_replies: &[],
    lines: &[
        RECEIVER_LINES,
        // This lab's roles.
        &[
            "ALREADY",
            "EMPTY",
            "WAITING",
            "RESPONSE",
            "ACKED",
            "LEASE-LOST",
        ],
    ],
    claims,
};

/// On the servers, besides `SQL`, `COMMITTED` and the crash lines (`AMQP` is the broker's
/// trace). The consumer's lines are checked against the readbacks by the scenario's stages.
pub const ON_SERVERS: LabReplay = LabReplay {
    threaded: &[RECEIVER],
    raw_replies: &[],
    lines: &[
        RECEIVER_LINES,
        // This lab's roles.
        &[
            "ENQUEUED",
            "CONNECTED",
            "EMPTY",
            "WAITING",
            "RESPONSE",
            "ACKED",
            "CHANNEL-LOST",
            "DECLARED",
            "AMQP",
        ],
    ],
    claims: receiver_claims,
};

/// The receiver's REQUEST lines against its replayed effects, as lab 13 checks them; on
/// SQLite the consumer's own lines against its claim, its recorded reply and its ack.
pub fn claims(c: &mut RoleClaims<'_>) {
    receiver_claims(c);
    if c.proc.step.phase == Consumer::NAME {
        consumer(c);
    }
}

fn receiver_claims(c: &mut RoleClaims<'_>) {
    if c.proc.step.phase == RECEIVER {
        crate::labs::http_dispatch::replay::claims(c);
    }
}

const CLAIM: &str = "SELECT id, body, owner, lease_until_ms, deliveries FROM messages";
const REPLY: &str = "INSERT INTO replies(";
const ACK: &str = "UPDATE messages SET acked_by";

/// The values of a traced `INSERT … VALUES ('M1', 'A', 1, 200, 1, 0, …)`, quotes dropped.
fn values(sql: &str) -> Vec<String> {
    sql.split_once("VALUES (").map_or(Vec::new(), |(_, v)| {
        v.trim_end_matches(')')
            .split(',')
            .map(|w| w.trim().trim_matches('\'').to_string())
            .collect()
    })
}

/// The message and delivery the last claim before line `j` handed out: the head it read, and
/// its deliveries plus one.
fn claimed_before(p: &Proc<'_>, j: usize) -> Option<(String, i64)> {
    let (_, _, o) = statements(p, CLAIM).filter(|(l, _, _)| *l < j).last()?;
    let row = o.rows.first()?;
    match (row.first(), row.get(4)) {
        (Some(Value::Text(id)), Some(Value::Integer(n))) => Some((id.clone(), n + 1)),
        _ => None,
    }
}

/// `RESPONSE message M delivery D status S [replayed]`: M and D are the claim's, and the
/// reply it recorded after says the same D, S and replayed. `ACKED` / `LEASE-LOST`: the ack
/// statement changed the row, or did not.
fn consumer(c: &mut RoleClaims<'_>) {
    let p = c.proc;
    let lines: Vec<(usize, String)> = other_lines(p).map(|(j, t)| (j, t.to_string())).collect();
    for (j, text) in &lines {
        if let Some(rest) = text.strip_prefix("RESPONSE message ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            let said = (
                words.first().map(|w| w.to_string()),
                words.get(2).and_then(|w| w.parse::<i64>().ok()),
            );
            let claimed = claimed_before(p, *j);
            if claimed.as_ref().map(|(m, d)| (Some(m.clone()), Some(*d))) != Some(said) {
                c.say(
                    *j,
                    format!(
                        "'{text}', but the claim before it handed out {}",
                        claimed.map_or("nothing".to_string(), |(m, d)| format!(
                            "message {m} delivery {d}"
                        ))
                    ),
                );
                continue;
            }
            let status = words.get(4).copied().unwrap_or("");
            let replayed = if words.get(5) == Some(&"replayed") {
                "1"
            } else {
                "0"
            };
            let recorded = statements(p, REPLY)
                .find(|(l, _, _)| l > j)
                .map(|(_, sql, _)| values(sql));
            if let Some(v) = recorded {
                let fields: Vec<&str> = v.iter().map(String::as_str).collect();
                if fields.get(2).copied() != words.get(2).copied()
                    || fields.get(3).copied() != Some(status)
                    || fields.get(4).copied() != Some(replayed)
                {
                    c.say(*j, format!("'{text}', but the reply recorded after it says delivery {}, status {}, replayed {}", fields.get(2).unwrap_or(&"-"), fields.get(3).unwrap_or(&"-"), fields.get(4).unwrap_or(&"-")));
                }
            }
        } else if text.starts_with("ACKED ") || text.starts_with("LEASE-LOST ") {
            let ack = statements(p, ACK).filter(|(l, _, _)| l < j).last();
            let did = ack.map(|(_, _, o)| o.changes > 0);
            if did != Some(text.starts_with("ACKED ")) {
                let what = match did {
                    Some(true) => "acked the message",
                    Some(false) => "changed nothing (the lease had passed on)",
                    None => "is not in the trace",
                };
                c.say(
                    *j,
                    format!("'{text}', but the ack statement before it {what}"),
                );
            }
        }
    }
}
