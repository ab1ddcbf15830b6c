//! Lab f2's claims in the audit's replay: the producer's PRODUCED count against the messages
//! it committed, and the consumer's CONSUMED counts against the credits it committed and the
//! failed attempts and parks it recorded.

use crate::engine::replay::claims_api::{
    committed_rows, field, other_lines, statements, LabReplay, Outcome, Proc, RoleClaims,
};
use rusqlite::types::Value;

use super::roles::{Consume, Produce, Replay};
use crate::role::Role;

pub const REPLAY: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[&[
        "PRODUCED",
        "CONSUMED",
        "STALLED",
        "REJECTED",
        "DUPLICATE",
        "REPLAYED",
        "ALREADY",
    ]],
    claims,
};

/// Rows of `table` this process inserted in committed transactions (an insert leaves a row
/// the table did not have; an update touches one it had).
fn inserted(c: &RoleClaims<'_>, table: &str, insert: &str) -> i64 {
    let inserts = statements(c.proc, insert)
        .filter(|(_, _, o)| o.changes > 0)
        .count();
    let committed = committed_rows(c.proc, table).count();
    inserts.min(committed) as i64
}

pub fn claims(c: &mut RoleClaims<'_>) {
    let p = c.proc;
    let lines: Vec<(usize, String)> = other_lines(p).map(|(j, t)| (j, t.to_string())).collect();
    match p.step.phase {
        Produce::NAME => {
            let n = committed_rows(p, "messages").count() as i64;
            for (j, text) in &lines {
                if let Some(rest) = text.strip_prefix("PRODUCED ") {
                    let claimed = rest.split_whitespace().next().and_then(|w| w.parse().ok());
                    if claimed != Some(n) {
                        c.say(*j, format!("'{text}', but the replay shows {n} messages committed by this process"));
                    }
                }
            }
        }
        Consume::NAME | Replay::NAME => {
            credit_lines(c, &lines);
            if p.step.phase == Consume::NAME {
                stalled_lines(c, &lines);
                consumed_lines(c, &lines);
            }
        }
        _ => {}
    }
}

/// `CONSUMED applied=… duplicates=… parked=… failed_attempts=…` against the credits and
/// dead letters this process committed, the credits the key absorbed, and its REJECTED lines.
fn consumed_lines(c: &mut RoleClaims<'_>, lines: &[(usize, String)]) {
    let p = c.proc;
    let credits = inserted(c, "credits", "INSERT INTO credits");
    let parks = inserted(c, "dead_letters", "INSERT INTO dead_letters");
    let rejected = lines
        .iter()
        .filter(|(_, t)| t.starts_with("REJECTED "))
        .count() as i64;
    for (j, text) in lines {
        let Some(rest) = text.strip_prefix("CONSUMED ") else {
            continue;
        };
        let duplicates = absorbed(p).count() as i64;
        let got = (
            field(rest, "applied"),
            field(rest, "duplicates"),
            field(rest, "parked"),
            field(rest, "failed_attempts"),
        );
        if got != (Some(credits), Some(duplicates), Some(parks), Some(rejected)) {
            c.say(*j, format!("'{text}', but the replay shows applied={credits} (credits committed), duplicates={duplicates} (credits the receiver's key absorbed), parked={parks} (dead letters committed), and the trace has {rejected} REJECTED lines"));
        }
    }
}

const CREDIT: &str = "INSERT INTO credits";

/// The message and amount a traced `INSERT INTO credits(...) VALUES ('M2', 5000, …)` gives.
fn credit_values(sql: &str) -> Option<(String, String)> {
    let values = sql.split_once("VALUES (")?.1;
    let mut words = values.split(',').map(str::trim);
    let message = words.next()?.trim_matches('\'').to_string();
    let amount = words.next()?.to_string();
    Some((message, amount))
}

/// Credits the receiver's key absorbed: an insert that ran without an error and changed
/// nothing.
fn absorbed<'a>(p: &'a Proc<'_>) -> impl Iterator<Item = (usize, &'a str, &'a Outcome)> + 'a {
    statements(p, CREDIT).filter(|(_, _, o)| o.error.is_none() && o.changes == 0)
}

/// The last credit statement before line `j`, with its outcome.
fn credit_before<'a>(p: &'a Proc<'_>, j: usize) -> Option<(usize, &'a str, &'a Outcome)> {
    statements(p, CREDIT).filter(|(l, _, _)| *l < j).last()
}

/// REJECTED, DUPLICATE and REPLAYED lines name the message (and amount) of the credit
/// statement they follow, and that statement did what the line says: refused by a
/// constraint, absorbed by the key, or credited. Every absorbed credit has its DUPLICATE line.
fn credit_lines(c: &mut RoleClaims<'_>, lines: &[(usize, String)]) {
    let p = c.proc;
    let mut duplicates = 0;
    for (j, text) in lines {
        let (kind, named, amount) = if let Some(rest) = text.strip_prefix("REJECTED message ") {
            ("refused", rest.split(':').next().unwrap_or(""), None)
        } else if let Some(rest) = text.strip_prefix("DUPLICATE message ") {
            duplicates += 1;
            ("absorbed", rest.split(' ').next().unwrap_or(""), None)
        } else if let Some(rest) = text.strip_prefix("REPLAYED message ") {
            let mut w = rest.split(' ');
            let named = w.next().unwrap_or("");
            ("credited", named, w.nth(1))
        } else {
            continue;
        };
        let Some((_, sql, o)) = credit_before(p, *j) else {
            c.say(
                *j,
                format!("'{text}', but no credit statement comes before it"),
            );
            continue;
        };
        let did = match (&o.error, o.changes) {
            (Some(_), _) => "refused",
            (None, 0) => "absorbed",
            (None, _) => "credited",
        };
        // A replay may credit now or find the credit of an earlier run: both end REPLAYED.
        let kind_holds = kind == did || (kind == "credited" && did == "absorbed");
        let values = credit_values(sql);
        let values_hold = values
            .as_ref()
            .is_some_and(|(m, a)| m == named && amount.is_none_or(|claimed| claimed == a));
        if !kind_holds || !values_hold {
            c.say(*j, format!("'{text}', but the credit statement before it (`{sql}`) was {did} in the replay"));
        }
    }
    let absorbed = absorbed(p).count();
    if duplicates != absorbed {
        c.say(
            lines.last().map_or(0, |(j, _)| *j),
            format!("{duplicates} DUPLICATE lines, but the replay shows {absorbed} credits the receiver's key absorbed"),
        );
    }
}

fn int(o: &Outcome, column: usize) -> Option<i64> {
    match o.rows.first().and_then(|r| r.get(column)) {
        Some(Value::Integer(i)) => Some(*i),
        _ => None,
    }
}

/// `STALLED message M at the head: N failed attempts in this run over T ms (bound …), R
/// recorded, W messages waiting behind it`: M and R are what the last look at the head
/// returned, N the REJECTED lines of M in this run, W what the last count behind it returned.
fn stalled_lines(c: &mut RoleClaims<'_>, lines: &[(usize, String)]) {
    let p = c.proc;
    for (j, text) in lines {
        let Some(rest) = text.strip_prefix("STALLED message ") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let named = words.first().copied().unwrap_or("");
        let number_before = |word: &str| {
            words
                .iter()
                .position(|w| w.trim_end_matches(',') == word)
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| words[i].parse::<i64>().ok())
        };
        let attempts = words.get(4).and_then(|w| w.parse::<i64>().ok());
        let recorded = number_before("recorded");
        let behind = words
            .iter()
            .position(|w| *w == "waiting")
            .and_then(|i| words.get(i.checked_sub(2)?))
            .and_then(|w| w.parse::<i64>().ok());
        let head = statements(p, "SELECT seq, message_id, amount, failures FROM messages")
            .filter(|(l, _, _)| l < j)
            .last();
        let head_message = head.and_then(|(_, _, o)| match o.rows.first().and_then(|r| r.get(1)) {
            Some(Value::Text(t)) => Some(t.clone()),
            _ => None,
        });
        let head_failures = head.and_then(|(_, _, o)| int(o, 3));
        let counted = statements(
            p,
            "SELECT count(*) FROM messages WHERE status = 'pending' AND seq >",
        )
        .filter(|(l, _, _)| l < j)
        .last()
        .and_then(|(_, _, o)| int(o, 0));
        let rejected = lines
            .iter()
            .filter(|(l, t)| l < j && t.starts_with(&format!("REJECTED message {named}:")))
            .count() as i64;
        let replayed = (
            Some(named.to_string()),
            Some(rejected),
            head_failures,
            counted,
        );
        if (head_message.clone(), attempts, recorded, behind) != replayed {
            c.say(*j, format!(
                "'{text}', but the replay shows message {} at the head with {} recorded, {} messages behind it, and the trace has {rejected} REJECTED lines of {named}",
                head_message.as_deref().unwrap_or("-"),
                head_failures.map_or("-".to_string(), |n| n.to_string()),
                counted.map_or("-".to_string(), |n| n.to_string()),
            ));
        }
    }
}
