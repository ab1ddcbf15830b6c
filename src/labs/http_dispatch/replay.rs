//! Lab 13's claims in the audit's replay: the receiver's and dispatcher's REQUEST, EXPIRED,
//! RESPONSE and DISPATCHED lines against their replayed statements, and each reply against
//! the receiver's file.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::replay::claims_api::{
    as_int, as_text, certain_read, clean_exit, col, committed_rows, field, literals, other_lines,
    statements, LabReplay, Proc, RoleClaims,
};
use crate::engine::replay::Problems;
use crate::labs::http_dispatch::roles::{Dispatcher, Post, Receiver};
use crate::role::Role;

/// The lines the receiver prints.
pub const RECEIVER_LINES: &[&str] = &[
    "READY", "REQUEST", "ACCEPT", "STOPPED", "EXPIRED", "RECEIVER",
];

/// What the replay needs to know of this lab's roles.
pub const REPLAY: LabReplay = LabReplay {
    // The receiver serves requests on several workers.
    threaded: &[Receiver::NAME],
    // The raw client prints the reply's status, then its headers and body as they came.
    raw_replies: &[Post::NAME],
    lines: &[
        RECEIVER_LINES,
        &[
            "LOCKED",
            "WAITING",
            "RESPONSE",
            "UNKNOWN",
            "RESEND",
            "HELD",
            "REPAIR",
            "DISPATCHED",
            "ALREADY",
        ],
    ],
    claims,
};

/// `LabReplay::claims`: the receiver's and dispatcher's own lines, then every reply that
/// names an effect against the receiver's replayed file.
pub fn claims(c: &mut RoleClaims<'_>) {
    let p = c.proc;
    {
        let mut say = |line: usize, what: String| c.say(line, what);
        match p.step.phase {
            Receiver::NAME => receiver(p, &mut say),
            Dispatcher::NAME => dispatcher(p, &mut say),
            _ => {}
        }
    }
    let receiver = c.file_of("receiver", "db");
    responses_name_effects(c.scenario, p, receiver, c.problems);
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
        if let (Some(k), false) = (literals(sql).into_iter().next(), o.rows.is_empty()) {
            *found.entry(k).or_default() += 1;
        }
    }
    let mut expired: BTreeMap<String, usize> = BTreeMap::new();
    for (_, sql, o) in statements(p, "DELETE FROM idempotency WHERE key =") {
        if let (Some(k), true) = (literals(sql).into_iter().next(), o.changes > 0) {
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
            if status != "200" {
                say(j, format!("'{text}': an applied effect is answered 200"));
            }
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
            let lookup = statements(p, "SELECT count(*) FROM effects WHERE key =")
                .filter(|(l, sql, _)| {
                    *l < j && literals(sql).first().map(String::as_str) == Some(k)
                })
                .last();
            // A count read while another worker's commit was in flight is not decided.
            if lookup.is_some_and(|(l, _, _)| !certain_read(p, l)) {
                continue;
            }
            let counted =
                lookup.and_then(|(_, _, o)| as_int(o.rows.first().and_then(|r| r.first())));
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

/// Lab 13 across processes: a reply with status 200 that names an effect (a dispatcher's
/// `RESPONSE key K status 200 {"effect":N,…}`, a raw client's `STATUS 200` and body) names
/// one the receiver's replayed file holds under that key at the scenario's end (effects are
/// never deleted).
fn responses_name_effects(
    scenario: &str,
    p: &Proc<'_>,
    receiver: Option<&rusqlite::Connection>,
    problems: &mut Problems,
) {
    // (line, the reply's text, the key it was sent with, its body)
    let mut replies: Vec<(usize, String, Option<String>, String)> = Vec::new();
    let lines: Vec<(usize, &str)> = other_lines(p).collect();
    for (n, (j, text)) in lines.iter().enumerate() {
        match p.step.phase {
            Dispatcher::NAME => {
                let Some(rest) = text.strip_prefix("RESPONSE key ") else {
                    continue;
                };
                let mut parts = rest.splitn(4, ' ');
                let key = parts.next().unwrap_or("").to_string();
                if parts.nth(1) != Some("200") {
                    continue;
                }
                let body = parts.next().unwrap_or("");
                let body = body.strip_prefix("replayed ").unwrap_or(body);
                replies.push((*j, text.to_string(), Some(key), body.to_string()));
            }
            Post::NAME if *text == "STATUS 200" => {
                let key = p
                    .record
                    .argv
                    .windows(2)
                    .find(|w| w[0] == "--key")
                    .map(|w| w[1].clone());
                let body = lines[n + 1..]
                    .iter()
                    .map(|(_, t)| *t)
                    .find(|t| t.starts_with('{'))
                    .unwrap_or("");
                if let Ok(reply) = serde_json::from_str::<serde_json::Value>(body) {
                    let names = ["key", "effect", "effects"]
                        .iter()
                        .any(|f| reply.get(f).is_some());
                    if names && reply["key"].as_str() != key.as_deref() {
                        problems.push((
                            p.record.stdout.clone(),
                            format!(
                                "{scenario}/{} line {}: '{body}' names another key than the request's {:?}",
                                p.step.name,
                                j + 2,
                                key
                            ),
                        ));
                    }
                    effects_of_key(
                        scenario,
                        p,
                        *j + 1,
                        &reply,
                        key.as_deref(),
                        receiver,
                        problems,
                    );
                }
                replies.push((*j, format!("{text} {body}"), key, body.to_string()));
            }
            _ => {}
        }
    }
    for (j, text, key, body) in replies {
        let Some(effect) = serde_json::from_str::<serde_json::Value>(&body)
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
        if stored.as_ref() != Some(&key) {
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

/// A raw client's `GET /effect/<key>` reply: `effects` and `ran` against the receiver's
/// replayed file at the scenario's end (effects only grow, so the reply can be no larger).
fn effects_of_key(
    scenario: &str,
    p: &Proc<'_>,
    line: usize,
    reply: &serde_json::Value,
    key: Option<&str>,
    receiver: Option<&rusqlite::Connection>,
    problems: &mut Problems,
) {
    let Some(effects) = reply.get("effects").and_then(serde_json::Value::as_i64) else {
        return;
    };
    let at_end: Option<i64> = receiver.and_then(|c| {
        c.query_row("SELECT count(*) FROM effects WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .ok()
    });
    let ran = reply.get("ran").and_then(serde_json::Value::as_bool);
    if at_end.is_none_or(|n| effects > n) || ran != Some(effects > 0) {
        problems.push((
            p.record.stdout.clone(),
            format!(
                "{scenario}/{} line {}: '{reply}', but the receiver's replayed history ends with {at_end:?} effects of key {key:?}",
                p.step.name,
                line + 1
            ),
        ));
    }
}
