//! PostgreSQL facts a role traces beside its SQL (PostgreSQL-only values no SQLite replay
//! can make): `SEQUENCE <db> <sequence> <value>` (a `nextval`), `SEQUENCE-CREATED <db>
//! <sequence> start <n>`, `XID <db> <xid>` (`pg_current_xact_id()` of the open transaction)
//! and `HORIZON <db> <xmin>` (`pg_snapshot_xmin` of a fresh snapshot). Checked as PostgreSQL
//! gives them: a sequence's value is bound by the process's next INSERT on that database, is
//! at least the sequence's start, never given twice, and grows in one session; an xid is
//! read inside a transaction, belongs to that transaction alone and grows from one
//! transaction of a session to the next; a snapshot's xmin never moves back (the oldest
//! running transaction at a later time is one still running or one begun since). Across a
//! PostgreSQL kill an xid or a sequence value that was never logged may be given again, so
//! the rules between processes (distinct values, the horizon's order) hold only in a run
//! that killed no PostgreSQL server.

use std::collections::BTreeMap;

use super::scene::{sql, surely_precedes, Proc};

pub type Found = Vec<(usize, String)>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Fact {
    Created { db: String, seq: String, start: i64 },
    Sequence { db: String, seq: String, value: i64 },
    Xid { db: String, xid: i64 },
    Horizon { db: String, xmin: i64 },
}

fn fact(line: &str) -> Option<Fact> {
    let words: Vec<&str> = line.split(' ').collect();
    let num = |s: &str| s.parse::<i64>().ok();
    match words.as_slice() {
        ["SEQUENCE-CREATED", db, seq, "start", n] => Some(Fact::Created {
            db: db.to_string(),
            seq: seq.to_string(),
            start: num(n)?,
        }),
        ["SEQUENCE", db, seq, v] => Some(Fact::Sequence {
            db: db.to_string(),
            seq: seq.to_string(),
            value: num(v)?,
        }),
        ["XID", db, x] => Some(Fact::Xid {
            db: db.to_string(),
            xid: num(x)?,
        }),
        ["HORIZON", db, h] => Some(Fact::Horizon {
            db: db.to_string(),
            xmin: num(h)?,
        }),
        _ => None,
    }
}

/// The values of an `INSERT … VALUES (a, b, …)` statement, split at the commas outside
/// quotes and parentheses (the first row only).
pub fn insert_values(statement: &str) -> Vec<String> {
    let upper = statement.to_ascii_uppercase();
    let Some(at) = upper.find(" VALUES") else {
        return Vec::new();
    };
    let rest = &statement[at + " VALUES".len()..];
    let Some(open) = rest.find('(') else {
        return Vec::new();
    };
    let (mut values, mut current, mut depth, mut quoted) = (Vec::new(), String::new(), 0, false);
    for c in rest[open + 1..].chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                current.push(c);
            }
            '(' if !quoted => {
                depth += 1;
                current.push(c);
            }
            ')' if !quoted && depth == 0 => {
                values.push(current.trim().to_string());
                return values;
            }
            ')' if !quoted => {
                depth -= 1;
                current.push(c);
            }
            ',' if !quoted && depth == 0 => {
                values.push(std::mem::take(&mut current).trim().to_string())
            }
            _ => current.push(c),
        }
    }
    Vec::new()
}

/// One process's facts against its own SQL.
pub fn in_process(p: &Proc) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut open: BTreeMap<String, bool> = BTreeMap::new();
    // (db, seq) -> last value; db -> (last xid, its transaction's number)
    let mut seqs: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut xids: BTreeMap<String, (i64, usize)> = BTreeMap::new();
    let mut transactions = 0usize;
    // A sequence value waiting for the next INSERT on its database: (line, value).
    let mut waiting: BTreeMap<String, (usize, i64)> = BTreeMap::new();
    for (i, line) in p.lines.iter().enumerate() {
        let at = i + 1;
        if line.starts_with("SQL ") {
            let Some((db, statement, verb)) = sql(line) else {
                continue;
            };
            match verb.as_str() {
                "BEGIN" => {
                    transactions += 1;
                    open.insert(db.to_string(), true);
                }
                "COMMIT" | "END" | "ROLLBACK" => {
                    open.insert(db.to_string(), false);
                }
                "INSERT" => {
                    if let Some((line, value)) = waiting.remove(db) {
                        if !insert_values(statement).contains(&value.to_string()) {
                            found.push((
                                at,
                                format!("{}: this INSERT does not bind {value}, the value the sequence gave at line {line}", p.at(at)),
                            ));
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        match fact(line) {
            Some(Fact::Sequence { db, seq, value }) => {
                if let Some(last) = seqs.insert((db.clone(), seq.clone()), value) {
                    if value <= last {
                        found.push((
                            at,
                            format!(
                                "{}: {seq} gave {value} after {last} in one session",
                                p.at(at)
                            ),
                        ));
                    }
                }
                if let Some((line, v)) = waiting.insert(db, (at, value)) {
                    found.push((
                        at,
                        format!(
                            "{}: the value {v} {seq} gave at line {line} was bound by no INSERT",
                            p.at(at)
                        ),
                    ));
                }
            }
            Some(Fact::Xid { db, xid }) => {
                if open.get(&db) != Some(&true) {
                    found.push((
                        at,
                        format!("{}: an xid read outside a transaction on {db}", p.at(at)),
                    ));
                }
                if let Some((last, tx)) = xids.insert(db, (xid, transactions)) {
                    let ok = if tx == transactions {
                        xid == last
                    } else {
                        xid > last
                    };
                    if !ok {
                        found.push((
                            at,
                            format!("{}: xid {xid} after {last} in one session", p.at(at)),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if p.ended_well {
        for (db, (line, value)) in waiting {
            found.push((line, format!("{}: the value {value} was bound by no INSERT on {db}, though the process ended well", p.at(line))));
        }
    }
    found
}

/// The facts of a scenario's processes against each other: a sequence's values at least its
/// start; with no PostgreSQL kill, its values and the xids distinct between processes and
/// the horizon never moving back from one step to a later one.
pub fn across(procs: &[Proc], pg_killed: bool) -> Found {
    let mut found = Found::new();
    let mut starts: BTreeMap<(String, String), i64> = BTreeMap::new();
    let mut given: BTreeMap<(String, String, i64), (usize, usize)> = BTreeMap::new();
    let mut xid_of: BTreeMap<(String, i64), usize> = BTreeMap::new();
    let mut horizons: Vec<(usize, usize, i64)> = Vec::new();
    for (i, p) in procs.iter().enumerate() {
        for (l, line) in p.lines.iter().enumerate() {
            let at = l + 1;
            match fact(line) {
                Some(Fact::Created { db, seq, start }) => {
                    starts.insert((db, seq), start);
                }
                Some(Fact::Sequence { db, seq, value }) => {
                    if let Some(start) = starts.get(&(db.clone(), seq.clone())) {
                        if value < *start {
                            found.push((
                                i,
                                format!(
                                    "{}: {seq} gave {value}, below its start {start}",
                                    p.at(at)
                                ),
                            ));
                        }
                    }
                    let again = given.insert((db, seq.clone(), value), (i, at));
                    if let (Some((j, _)), false) = (again, pg_killed) {
                        found.push((
                            i,
                            format!(
                                "{}: {seq} gave {value} again (step {} had it)",
                                p.at(at),
                                procs[j].label
                            ),
                        ));
                    }
                }
                Some(Fact::Xid { db, xid }) if !pg_killed => {
                    if let Some(j) = xid_of.insert((db, xid), i) {
                        if j != i {
                            found.push((
                                i,
                                format!("{}: xid {xid} is also {}'s", p.at(at), procs[j].label),
                            ));
                        }
                    }
                }
                Some(Fact::Horizon { xmin, .. }) if !pg_killed => horizons.push((i, at, xmin)),
                _ => {}
            }
        }
    }
    for (n, &(j, b, later)) in horizons.iter().enumerate() {
        let back = horizons[..n].iter().find(|&&(i, a, earlier)| {
            earlier > later && surely_precedes(&procs[i], a, &procs[j], b)
        });
        if let Some(&(i, a, earlier)) = back {
            found.push((
                j,
                format!(
                    "{}: horizon {later}, back from {earlier} at {} line {a}",
                    procs[j].at(b),
                    procs[i].label
                ),
            ));
        }
    }
    found
}
