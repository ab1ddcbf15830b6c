//! The roles' claims against what their replayed statements did: the consumer's DUPLICATE /
//! REJECTED / CONSUMED, the publisher's and enqueue's counts, the receiver's REQUEST and
//! EXPIRED lines, the dispatcher's RESPONSE and DISPATCHED lines.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::types::Value;

use super::commits::clean_exit;
use super::engine::{End, Outcome, Touched};
use super::trace::{self, Line};
use super::walk::Proc;
use super::Problems;
use crate::outbox::model::Payload;

fn sql_at<'a>(p: &'a Proc<'_>, line: usize) -> &'a str {
    match &p.lines[line] {
        Line::Sql { sql, .. } => sql,
        _ => "",
    }
}

/// Statements of this process that start with `prefix`, with their outcomes, in line order.
fn statements<'a>(
    p: &'a Proc<'_>,
    prefix: &'a str,
) -> impl Iterator<Item = (usize, &'a str, &'a Outcome)> + 'a {
    p.session.outcomes.iter().filter_map(move |(line, o)| {
        let sql = sql_at(p, *line);
        sql.trim_start()
            .starts_with(prefix)
            .then_some((*line, sql, o))
    })
}

/// Rows of `table` left changed by this process's committed transactions, with the line of
/// the commit, in commit order.
fn committed_rows<'a>(
    p: &'a Proc<'_>,
    table: &'a str,
) -> impl Iterator<Item = (usize, &'a Touched)> + 'a {
    p.session
        .units
        .iter()
        .filter(|u| u.end == End::Committed)
        .flat_map(move |u| {
            u.touched
                .iter()
                .filter(move |t| t.table == table)
                .map(move |t| (u.end_line, t))
        })
}

fn col(t: &Touched, i: usize) -> Option<&Value> {
    t.row.as_ref().and_then(|r| r.get(i))
}

fn as_text(v: Option<&Value>) -> Option<&str> {
    match v {
        Some(Value::Text(s)) => Some(s),
        _ => None,
    }
}

fn as_int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Integer(i)) => Some(*i),
        _ => None,
    }
}

/// `NAME=<n>` in a summary line.
fn field(text: &str, name: &str) -> Option<i64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
}

fn other_lines<'a>(p: &'a Proc<'_>) -> impl Iterator<Item = (usize, &'a str)> + 'a {
    p.lines.iter().enumerate().filter_map(|(j, l)| match l {
        Line::Other(t) => Some((j, t.as_str())),
        _ => None,
    })
}

pub fn check(scenario: &str, p: &Proc<'_>, problems: &mut Problems) {
    let mut say = |line: usize, what: String| {
        problems.push((
            p.record.stdout.clone(),
            format!("{scenario}/{} line {}: {what}", p.step.name, line + 1),
        ));
    };
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
        "receiver" => receiver(p, &mut say),
        "dispatcher" => dispatcher(p, &mut say),
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
        if let Some(m) = trace::literals(sql).into_iter().next() {
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

/// Is the statement at `line` part of a transaction that committed?
fn committed_line(p: &Proc<'_>, line: usize) -> bool {
    p.session
        .units
        .iter()
        .any(|u| u.end == End::Committed && u.statements.contains(&line))
}

/// Lab 13's receiver: `applied effect N` needs its committed effect N under the request's
/// key; a replay or a 409 needs a look-up that found the key; `N effects` the count the
/// replay gives; `EXPIRED key K` a deletion of K's idempotency row.
fn receiver(p: &Proc<'_>, say: &mut dyn FnMut(usize, String)) {
    let effects: BTreeMap<i64, Option<String>> = committed_rows(p, "effects")
        .filter(|(_, t)| t.row.is_some())
        .map(|(_, t)| (t.rowid, as_text(col(t, 1)).map(str::to_string)))
        .collect();
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    for (_, sql, o) in statements(
        p,
        "SELECT body_sha256, status, response FROM idempotency WHERE key =",
    ) {
        if let (Some(k), false) = (trace::literals(sql).into_iter().next(), o.rows.is_empty()) {
            *found.entry(k).or_default() += 1;
        }
    }
    let mut expired: BTreeMap<String, usize> = BTreeMap::new();
    for (_, sql, o) in statements(p, "DELETE FROM idempotency WHERE key =") {
        if let (Some(k), true) = (trace::literals(sql).into_iter().next(), o.changes > 0) {
            *expired.entry(k).or_default() += 1;
        }
    }
    let mut reported = BTreeSet::new();
    for (j, text) in other_lines(p) {
        if let Some(key) = text
            .strip_prefix("EXPIRED key ")
            .and_then(|r| r.split(':').next())
        {
            match expired.get_mut(key) {
                Some(n) if *n > 0 => *n -= 1,
                _ => say(
                    j,
                    format!(
                        "'{text}', but no idempotency row of key {key} is deleted in the replay"
                    ),
                ),
            }
            continue;
        }
        let Some(rest) = text.strip_prefix("REQUEST ") else {
            continue;
        };
        let Some((left, right)) = rest.split_once(" -> ") else {
            continue;
        };
        let mut words = left.split_whitespace();
        let url = words.nth(1).unwrap_or("");
        let key = words
            .next()
            .and_then(|w| w.strip_prefix("key="))
            .unwrap_or("-");
        let (status, note) = right.split_once(' ').unwrap_or((right, ""));
        if let Some(n) = note
            .strip_prefix("applied effect ")
            .and_then(|n| n.parse::<i64>().ok())
        {
            let want = (key != "-").then(|| key.to_string());
            if effects.contains_key(&n) {
                reported.insert(n);
            }
            match effects.get(&n) {
                Some(k) if *k == want => {}
                Some(k) => say(j, format!("'{text}', but effect {n} in the replay has key {}", k.as_deref().unwrap_or("NULL"))),
                None => say(j, format!("'{text}', but this process committed no effect {n} in the replay (it committed {:?})", effects.keys().collect::<Vec<_>>())),
            }
        } else if note.starts_with("replayed") || status == "409" {
            match found.get_mut(key) {
                Some(n) if *n > 0 => *n -= 1,
                _ => say(j, format!("'{text}', but no look-up of key {key} finds a stored request in the replay")),
            }
        } else if let (Some(k), Some(n)) =
            (url.strip_prefix("/effect/"), note.strip_suffix(" effects"))
        {
            let counted = statements(p, "SELECT count(*) FROM effects WHERE key =")
                .filter(|(l, sql, _)| {
                    *l < j && trace::literals(sql).first().map(String::as_str) == Some(k)
                })
                .last()
                .and_then(|(_, _, o)| as_int(o.rows.first().and_then(|r| r.first())));
            if counted.map(|c| c.to_string()).as_deref() != Some(n) {
                say(
                    j,
                    format!("'{text}', but the replayed count of key {k} is {counted:?}"),
                );
            }
        }
    }
    if clean_exit(p) {
        for n in effects.keys().filter(|n| !reported.contains(*n)) {
            say(p.lines.len().saturating_sub(1), format!("effect {n} is committed in the replay, but no REQUEST line reports it, and the process ended by itself"));
        }
    }
}

/// A committed receipt: status, response, replayed.
type Receipt = (Option<i64>, Option<String>, Option<i64>);

/// Lab 13's dispatcher: each receipt it committed holds the RESPONSE it printed, and its
/// DISPATCHED counts are its committed receipts, HELD lines and REPAIR lines.
fn dispatcher(p: &Proc<'_>, say: &mut dyn FnMut(usize, String)) {
    let receipts: BTreeMap<String, Receipt> = committed_rows(p, "receipts")
        .filter_map(|(_, t)| {
            let key = as_text(col(t, 0))?.to_string();
            Some((
                key,
                (
                    as_int(col(t, 1)),
                    as_text(col(t, 2)).map(str::to_string),
                    as_int(col(t, 3)),
                ),
            ))
        })
        .collect();
    let marked = committed_rows(p, "intents")
        .filter(|(_, t)| as_text(col(t, 3)) == Some("unknown"))
        .count();
    let (mut held, mut repaired) = (marked, 0);
    for (j, text) in other_lines(p) {
        if text.starts_with("HELD key ") {
            held += 1;
        } else if text.starts_with("REPAIR key ") {
            repaired += 1;
        } else if let Some(rest) = text.strip_prefix("RESPONSE key ") {
            let mut parts = rest.splitn(4, ' ');
            let key = parts.next().unwrap_or("");
            let status: Option<i64> = parts.nth(1).and_then(|s| s.parse().ok());
            let tail = parts.next().unwrap_or("");
            let (replayed, body) = match tail.strip_prefix("replayed ") {
                Some(body) => (1, body),
                None => (0, tail),
            };
            if let Some((s, b, r)) = receipts.get(key) {
                if (*s, b.as_deref(), *r) != (status, Some(body), Some(replayed)) {
                    say(j, format!("'{text}', but the receipt this process committed for key {key} holds status {s:?}, replayed {r:?}, response {b:?}"));
                }
            }
        } else if let Some(rest) = text.strip_prefix("DISPATCHED ") {
            let delivered = receipts.len() as i64;
            let replayed = receipts.values().filter(|(_, _, r)| *r == Some(1)).count() as i64;
            let want = [delivered, replayed, held as i64, repaired];
            let got = ["delivered", "replayed", "held", "repaired_history"].map(|f| field(rest, f));
            if got != want.map(Some) {
                say(j, format!("'{text}', but the replay shows delivered={delivered} replayed={replayed} (receipts committed), held={held}, repaired_history={repaired}"));
            }
        }
    }
}

/// Lab 13 across processes: a dispatcher's `RESPONSE key K status 200 {"effect":N,…}` names
/// an effect the receiver's replayed file holds under key K at the scenario's end.
pub fn responses_name_effects(
    scenario: &str,
    p: &Proc<'_>,
    receiver: Option<&rusqlite::Connection>,
    problems: &mut Problems,
) {
    if p.step.phase != "dispatcher" {
        return;
    }
    for (j, text) in other_lines(p) {
        let Some(rest) = text.strip_prefix("RESPONSE key ") else {
            continue;
        };
        let mut parts = rest.splitn(4, ' ');
        let key = parts.next().unwrap_or("");
        if parts.nth(1) != Some("200") {
            continue;
        }
        let body = parts.next().unwrap_or("");
        let body = body.strip_prefix("replayed ").unwrap_or(body);
        let Some(effect) = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["effect"].as_i64())
        else {
            continue;
        };
        let stored: Option<Option<String>> = receiver.and_then(|c| {
            c.query_row("SELECT key FROM effects WHERE rowid = ?1", [effect], |r| {
                r.get(0)
            })
            .ok()
        });
        if stored.as_ref().and_then(|k| k.as_deref()) != Some(key) {
            problems.push((
                p.record.stdout.clone(),
                format!(
                    "{scenario}/{} line {}: '{text}', but the receiver's replayed history holds {}",
                    p.step.name,
                    j + 1,
                    match stored {
                        None => format!("no effect {effect}"),
                        Some(k) => format!(
                            "effect {effect} under key {}",
                            k.as_deref().unwrap_or("NULL")
                        ),
                    }
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn summary_fields_parse() {
        assert_eq!(
            super::field("applied=0 duplicates=2 rejected=0", "duplicates"),
            Some(2)
        );
        assert_eq!(super::field("delivered=1 replayed=0", "held"), None);
    }

    #[test]
    fn texts_of_values() {
        use rusqlite::types::Value;
        assert_eq!(crate::lab::replay::engine::text(&Value::Integer(25)), "25");
        assert_eq!(crate::lab::replay::engine::text(&Value::Null), "NULL");
    }
}
