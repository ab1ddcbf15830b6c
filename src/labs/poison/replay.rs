//! Lab f2's claims in the audit's replay: the producer's PRODUCED count against the messages
//! it committed, and the consumer's CONSUMED counts against the credits it committed and the
//! failed attempts and parks it recorded.

use crate::engine::replay::claims_api::{
    committed_rows, field, other_lines, statements, LabReplay, RoleClaims,
};

use super::roles;

pub const REPLAY: LabReplay = LabReplay {
    threaded: &[],
    raw_replies: &[],
    lines: &[
        "PRODUCED",
        "CONSUMED",
        "STALLED",
        "REJECTED",
        "DUPLICATE",
        "REPLAYED",
        "ALREADY",
    ],
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
        roles::PRODUCE => {
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
        roles::CONSUME => {
            let credits = inserted(c, "credits", "INSERT INTO credits");
            let parks = inserted(c, "dead_letters", "INSERT INTO dead_letters");
            let rejected = lines
                .iter()
                .filter(|(_, t)| t.starts_with("REJECTED "))
                .count() as i64;
            for (j, text) in &lines {
                let Some(rest) = text.strip_prefix("CONSUMED ") else {
                    continue;
                };
                let got = (
                    field(rest, "applied"),
                    field(rest, "parked"),
                    field(rest, "failed_attempts"),
                );
                if got != (Some(credits), Some(parks), Some(rejected)) {
                    c.say(*j, format!("'{text}', but the replay shows applied={credits} (credits committed), parked={parks} (dead letters committed), and the trace has {rejected} REJECTED lines"));
                }
            }
        }
        _ => {}
    }
}
