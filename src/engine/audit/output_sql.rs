//! What the audit reads of one traced statement: a pinned pragma it sets, whether it is on
//! the data, and the consumer id it claims under.

use super::output::{Ran, Which};

/// `PRAGMA synchronous=FULL` → (`synchronous`, `FULL`), for the pinned pragmas only.
pub(super) fn pinned_pragma(statement: &str) -> Option<(&'static str, &str)> {
    let rest = statement.trim().strip_prefix("PRAGMA ")?;
    let (name, value) = rest.split_once('=')?;
    let name = name.trim();
    let known = crate::store::PRAGMAS.iter().find(|(n, _)| *n == name)?.0;
    Some((known, value.trim().trim_end_matches(';')))
}

/// A statement on the data, not the connection's set-up (pragmas, schema checks).
pub(super) fn is_data(statement: &str) -> bool {
    let s = statement.trim_start();
    !(s.starts_with("PRAGMA ")
        || s.starts_with("--")
        || s.contains("sqlite_schema")
        || s.contains("pragma_table_info"))
}

/// A consumer claims under its own id only.
pub(super) fn echo_consumer(
    ran: &Ran<'_>,
    statement: &str,
    index: usize,
    say: &mut impl FnMut(Which, String),
) {
    let Some(id) = ran.arg("--consumer-id") else {
        return;
    };
    let mut rest = statement;
    // Bounded by the statement's length: each round consumes at least the marker.
    while let Some(at) = rest.find("claimed_by = '") {
        rest = &rest[at + "claimed_by = '".len()..];
        let named = rest.split('\'').next().unwrap_or("");
        if named != id {
            say(
                Which::Stdout,
                format!(
                    "line {}: claimed_by '{named}', but this process is consumer {id}",
                    index + 1
                ),
            );
        }
    }
}
