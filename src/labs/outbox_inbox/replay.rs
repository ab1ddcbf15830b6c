//! Lab 14's claims in the audit's replay. On SQLite: the consumer's DUPLICATE, REJECTED and
//! CONSUMED lines against its replayed claims, Inbox look-ups, Inbox inserts, credits and
//! acks; the publisher's and enqueue's counts against the deliveries they committed. On the
//! servers the replay has no queue to check them against: the scenario's stages check the
//! roles' counts by the readbacks.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::types::Value;

use super::model::Payload;
use crate::engine::replay::claims_api::{
    as_int, as_text, col, committed_line, committed_rows, field, literals, none, other_lines,
    sql_at, statements, End, LabReplay, Proc, RoleClaims,
};

/// The lines the roles print besides `SQL`, `COMMITTED` and the crash lines.
const LINES: [&str; 7] = [
    "SENT",
    "PUBLISHED",
    "CONSUMED",
    "DUPLICATE",
    "REJECTED",
    "RACE",
    "ENQUEUED",
];

/// What the replay needs to know of this lab's roles on SQLite.
pub const ON_SQLITE: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[&LINES],
    claims,
};

/// On the servers, with the broker's trace (`AMQP`) and the queue's declare.
pub const ON_SERVERS: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[&LINES, &["DECLARED", "AMQP"]],
    claims: none,
};

/// `LabReplay::claims`: the consumer (its variants print other lines), the publisher and
/// a raw enqueue.
pub fn claims(c: &mut RoleClaims<'_>) {
    let p = c.proc;
    let mut say = |line: usize, what: String| c.say(line, what);
    match p.step.phase {
        "consumer" if !p.record.argv.iter().any(|a| a == "--variant") => consumer(p, &mut say),
        "publisher" => {
            let n = committed_rows(p, "deliveries").count() as i64;
            for (j, text) in other_lines(p) {
                if let Some(rest) = text.strip_prefix("PUBLISHED ") {
                    let claimed = rest.split_whitespace().next().and_then(|w| w.parse().ok());
                    if claimed != Some(n) {
                        say(j, format!("'{text}', but the replay shows {n} deliveries committed by this process"));
                    }
                }
            }
        }
        "enqueue" => {
            let ids: BTreeSet<i64> = committed_rows(p, "deliveries")
                .map(|(_, t)| t.rowid)
                .collect();
            for (j, text) in other_lines(p) {
                if let Some(rest) = text.strip_prefix("ENQUEUED delivery ") {
                    if !rest.parse().is_ok_and(|id: i64| ids.contains(&id)) {
                        say(j, format!("'{text}', but the replay shows this process committed deliveries {ids:?}"));
                    }
                }
            }
        }
        _ => {}
    }
}

/// Lab 14's consumer: a DUPLICATE needs the Inbox row with the delivery's digest, a
/// REJECTED a row with another digest (or a malformed payload), and every delivery it
/// claimed and acked has exactly one outcome: applied (its Inbox row committed), duplicate
/// or rejected.
fn consumer(p: &Proc<'_>, say: &mut dyn FnMut(usize, String)) {
    // Claims: the RETURNING rows of the committed claim transactions.
    let mut claims: BTreeMap<i64, (String, String, usize)> = BTreeMap::new();
    for unit in p.session.units.iter().filter(|u| u.end == End::Committed) {
        for line in &unit.statements {
            if !sql_at(p, *line).contains("RETURNING delivery_id, message_id, payload") {
                continue;
            }
            for row in &p.session.outcomes[line].rows {
                if let (Some(Value::Integer(id)), Some(Value::Text(m)), Some(Value::Text(pl))) =
                    (row.first(), row.get(1), row.get(2))
                {
                    claims.insert(*id, (m.clone(), pl.clone(), *line));
                }
            }
        }
    }
    // Inbox look-ups: (line, message, digest found).
    let mut lookups: Vec<(usize, String, Option<String>)> = Vec::new();
    for (line, sql, o) in statements(
        p,
        "SELECT digest, contract_id, amount FROM inbox WHERE message_id =",
    ) {
        if let Some(m) = literals(sql).into_iter().next() {
            let found = o
                .rows
                .first()
                .and_then(|r| as_text(r.first()))
                .map(str::to_string);
            lookups.push((line, m, found));
        }
    }
    for (line, _, o) in statements(
        p,
        "SELECT message_id, digest, contract_id, amount FROM inbox",
    ) {
        let found: BTreeMap<&str, &str> = o
            .rows
            .iter()
            .filter_map(|r| Some((as_text(r.first())?, as_text(r.get(1))?)))
            .collect();
        for (m, _, _) in claims.values() {
            lookups.push((
                line,
                m.clone(),
                found.get(m.as_str()).map(|d| d.to_string()),
            ));
        }
    }
    lookups.sort_by_key(|(line, _, _)| *line);
    let applied: BTreeSet<i64> = committed_rows(p, "inbox")
        .filter_map(|(_, t)| as_int(col(t, 4)))
        .collect();
    let credits = statements(p, "INSERT INTO ledger")
        .filter(|(line, _, o)| o.changes > 0 && committed_line(p, *line))
        .count() as i64;
    let mut status: BTreeMap<i64, String> = BTreeMap::new();
    for (_, t) in committed_rows(p, "deliveries") {
        if let Some(s) = as_text(col(t, 3)) {
            status.insert(t.rowid, s.to_string());
        }
    }
    let (mut duplicates, mut rejected) = (BTreeSet::new(), BTreeSet::new());
    for (j, text) in other_lines(p) {
        let (kind, rest) = match text.split_once(" delivery ") {
            Some(("DUPLICATE", rest)) => ("DUPLICATE", rest),
            Some(("REJECTED", rest)) => ("REJECTED", rest),
            _ => {
                if let Some(rest) = text.strip_prefix("CONSUMED ") {
                    let want = (credits, duplicates.len() as i64, rejected.len() as i64);
                    let got = (
                        field(rest, "applied"),
                        field(rest, "duplicates"),
                        field(rest, "rejected"),
                    );
                    if got != (Some(want.0), Some(want.1), Some(want.2)) {
                        say(j, format!("'{text}', but the replay shows applied={} (ledger credits committed), and the trace has {} DUPLICATE and {} REJECTED lines", want.0, want.1, want.2));
                    }
                }
                continue;
            }
        };
        let mut words = rest.split_whitespace();
        let id: Option<i64> = words.next().and_then(|w| w.parse().ok());
        let message = words.nth(1).map(|w| w.trim_end_matches(':').to_string());
        let (Some(id), Some(message)) = (id, message) else {
            say(j, format!("'{text}' names no delivery and message"));
            continue;
        };
        let Some((claimed_message, payload, _)) = claims.get(&id).filter(|(m, _, _)| *m == message)
        else {
            say(j, format!("'{text}', but this process claimed no delivery {id} of message {message} in the replay"));
            continue;
        };
        debug_assert_eq!(claimed_message, &message);
        let seen = lookups
            .iter()
            .rev()
            .find(|(l, m, _)| *l < j && *m == message);
        let parsed = Payload::parse(payload)
            .ok()
            .filter(|pl| pl.message == message);
        let replay = match (&parsed, seen) {
            (None, _) => "REJECTED (its payload is malformed)",
            (Some(_), None) => "undecided (no Inbox look-up of the message before the line)",
            (Some(_), Some((_, _, None))) => "applied (the Inbox look-up found no row)",
            (Some(pl), Some((_, _, Some(d)))) if *d == pl.digest() => "DUPLICATE",
            (Some(_), Some(_)) => "REJECTED (the Inbox row has another digest)",
        };
        if !replay.starts_with(kind) {
            say(
                j,
                format!("'{text}', but in the replay delivery {id} is {replay}"),
            );
        }
        if applied.contains(&id) {
            say(
                j,
                format!("'{text}', but this process committed the Inbox row of delivery {id}"),
            );
        }
        if kind == "DUPLICATE" {
            duplicates.insert(id)
        } else {
            rejected.insert(id)
        };
    }
    for (id, (message, _, claimed_at)) in &claims {
        let Some(s) = status.get(id).filter(|s| *s != "pending") else {
            continue;
        };
        let outcomes = [
            applied.contains(id),
            duplicates.contains(id),
            rejected.contains(id),
        ];
        let n = outcomes.iter().filter(|x| **x).count();
        if n != 1 || (s == "rejected") != rejected.contains(id) {
            say(*claimed_at, format!(
                "delivery {id} of message {message} was claimed and {s} by this process, but the replay shows it applied: {}, and the trace reports DUPLICATE: {}, REJECTED: {}; exactly one must hold, REJECTED exactly when it was rejected",
                outcomes[0], outcomes[1], outcomes[2]
            ));
        }
    }
}
