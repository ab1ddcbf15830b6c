//! The AMQP operations of a scenario's processes against each other and against the SQL
//! beside them: a delivery only of a publish some process made before it (the same publish
//! id, the same message id); a second delivery of one publish carries `redelivered=true`
//! (AMQP: `redelivered` false means the message was never delivered before); and every
//! message id a relay publishes (a process that traces SQL and publishes: it reads rows and
//! sends them) was written by a committed SQL `INSERT` of the scenario before its publish (a
//! message exists as a committed row before it leaves). A process that publishes and runs no
//! SQL is an upstream putting messages straight on the queue; its ids are not held to rows.

use super::amqp::Op;
use super::scene::{may_precede, publishes, sql, surely_precedes, Proc};

/// (process index, finding) pairs.
pub type Found = Vec<(usize, String)>;

pub fn deliveries(procs: &[Proc]) -> Found {
    let mut found = Found::new();
    let published = publishes(procs);
    let mut seen: Vec<(&Proc, usize, &str)> = Vec::new();
    for (i, q) in procs.iter().enumerate() {
        for (b, op) in &q.ops {
            let Op::Deliver {
                message,
                publish,
                redelivered,
                ..
            } = op
            else {
                continue;
            };
            let same: Vec<_> = published
                .iter()
                .filter(|(_, _, op)| matches!(op, Op::Publish { publish: id, .. } if id == publish))
                .collect();
            let why = if same.is_empty() {
                Some(format!(
                    "delivery of {message} publish {publish}, which no process of the scenario published"
                ))
            } else if !same.iter().any(|(p, a, _)| may_precede(p, *a, q, *b)) {
                Some(format!(
                    "delivery of {message} publish {publish} before any process published it"
                ))
            } else if let Some((_, _, Op::Publish { message: m, .. })) = same
                .iter()
                .find(|(_, _, op)| !matches!(op, Op::Publish { message: m, .. } if m == message))
            {
                Some(format!(
                    "delivery of {message} publish {publish}, but that publish was of {m}"
                ))
            } else {
                None
            };
            if let Some(why) = why {
                found.push((i, format!("{}: {why}", q.at(*b))));
            }
            let before = seen
                .iter()
                .any(|(p, a, id)| *id == publish.as_str() && surely_precedes(p, *a, q, *b));
            if before && !redelivered {
                found.push((
                    i,
                    format!(
                        "{}: publish {publish} delivered again with redelivered=false",
                        q.at(*b)
                    ),
                ));
            }
            seen.push((q, *b, publish.as_str()));
        }
    }
    found
}

/// Each process's committed `INSERT` statements: (line of the COMMIT, or of the statement
/// itself outside a transaction; its text), per traced `SQL <db>` transaction.
fn committed_inserts(p: &Proc) -> Vec<(usize, &str)> {
    let mut open: std::collections::BTreeMap<&str, Vec<(usize, &str)>> = Default::default();
    let mut done = Vec::new();
    for (i, line) in p.lines.iter().enumerate() {
        let Some((db, statement, verb)) = sql(line) else {
            continue;
        };
        match verb.as_str() {
            "BEGIN" => {
                open.insert(db, Vec::new());
            }
            "COMMIT" | "END" => {
                for (_, s) in open.remove(db).unwrap_or_default() {
                    done.push((i + 1, s));
                }
            }
            "ROLLBACK" => {
                open.remove(db);
            }
            "INSERT" => match open.get_mut(db) {
                Some(tx) => tx.push((i + 1, statement)),
                None => done.push((i + 1, statement)),
            },
            _ => {}
        }
    }
    done
}

pub fn published_rows(procs: &[Proc]) -> Found {
    let mut found = Found::new();
    let inserts: Vec<(&Proc, Vec<(usize, &str)>)> =
        procs.iter().map(|p| (p, committed_inserts(p))).collect();
    let relays = procs
        .iter()
        .enumerate()
        .filter(|(_, p)| p.lines.iter().any(|l| l.starts_with("SQL ")));
    for (i, q) in relays {
        for (b, op) in &q.ops {
            let Op::Publish { message, .. } = op else {
                continue;
            };
            let literal = format!("'{}'", message.replace('\'', "''"));
            let written = inserts.iter().any(|(p, list)| {
                list.iter()
                    .any(|(a, s)| s.contains(&literal) && may_precede(p, *a, q, *b))
            });
            if !written {
                found.push((
                    i,
                    format!(
                        "{}: publish of {message}, which no committed INSERT of the scenario wrote before it",
                        q.at(*b)
                    ),
                ));
            }
        }
    }
    found
}
