//! A role's stdout as the replay reads it: `SQL <db> <statement>` lines (traced when each
//! statement starts, with its bound values expanded), `COMMITTED <db> <what>` reports, and
//! every other line (points, crashes, claims, the readback JSON) kept as text.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One line of a role's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `SQL <db> <statement>`: `db` is the short name of the database kind (`sender`, …).
    Sql { db: String, sql: String },
    /// `COMMITTED <db> <what>`: the role's report that a commit returned.
    Committed { db: String, text: String },
    /// Anything else, verbatim.
    Other(String),
}

/// A stdout up to and with its last newline. A last line without its newline was cut off
/// mid-write (a kill from outside can end a long write at a page boundary): half a
/// statement or half a claim is no line a role printed.
pub fn complete(text: &str) -> &str {
    text.rfind('\n').map_or("", |end| &text[..=end])
}

/// The lines of a stdout, its cut-off last line dropped (`complete`).
pub fn parse(text: &str) -> Vec<Line> {
    match complete(text).strip_suffix('\n') {
        Some(whole) => whole.split('\n').map(parse_line).collect(),
        None => Vec::new(),
    }
}

fn parse_line(line: &str) -> Line {
    if let Some(rest) = line.strip_prefix("SQL ") {
        if let Some((db, sql)) = rest.split_once(' ') {
            if !db.is_empty() {
                return Line::Sql {
                    db: db.to_string(),
                    sql: sql.to_string(),
                };
            }
        }
    }
    if let Some(rest) = line.strip_prefix("COMMITTED ") {
        if let Some((db, what)) = rest.split_once(' ') {
            return Line::Committed {
                db: db.to_string(),
                text: what.to_string(),
            };
        }
    }
    Line::Other(line.to_string())
}

/// What a traced statement does to the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Begin,
    Commit,
    Rollback,
    /// A comment SQLite traces for a statement it runs internally (`-- PRAGMA table_info=…`).
    Comment,
    /// A pragma that configures the connection or the file, not the content
    /// (`journal_mode`, `synchronous`, `busy_timeout`, `query_only`, …): skipped, since an
    /// in-memory database has no journal and the replay shares one connection per file.
    Connection,
    /// `PRAGMA foreign_keys=ON|OFF`: per connection, but it decides which writes fail.
    ForeignKeys(bool),
    /// Reads only.
    Read,
    /// May change content: DML, DDL, `PRAGMA application_id=` / `user_version=`.
    Write,
}

/// Pragmas that only configure a connection or the file layout, never the rows.
const CONNECTION_PRAGMAS: &[&str] = &[
    "journal_mode",
    "synchronous",
    "busy_timeout",
    "query_only",
    "locking_mode",
    "wal_checkpoint",
    "wal_autocheckpoint",
    "cache_size",
    "cache_spill",
    "mmap_size",
    "temp_store",
    "journal_size_limit",
];

fn words(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
}

pub fn classify(sql: &str) -> Kind {
    let sql = sql.trim();
    if sql.starts_with("--") || sql.starts_with("/*") {
        return Kind::Comment;
    }
    let mut w = words(sql);
    let first = w.next().unwrap_or_default();
    let second = w.next().unwrap_or_default();
    match first.as_str() {
        "BEGIN" => Kind::Begin,
        "COMMIT" | "END" => Kind::Commit,
        // `ROLLBACK TO <savepoint>` stays inside the transaction.
        "ROLLBACK" if second != "TO" && !words(sql).any(|x| x == "TO") => Kind::Rollback,
        "ROLLBACK" => Kind::Write,
        "PRAGMA" => pragma(sql, &second),
        "SELECT" | "VALUES" | "EXPLAIN" => Kind::Read,
        _ => Kind::Write,
    }
}

fn pragma(sql: &str, name: &str) -> Kind {
    let name = name.to_ascii_lowercase();
    if CONNECTION_PRAGMAS.contains(&name.as_str()) {
        return Kind::Connection;
    }
    let assigned = sql
        .split_once('=')
        .map(|(_, v)| v.trim().trim_end_matches(';'));
    if name == "foreign_keys" {
        return match assigned.map(|v| v.to_ascii_lowercase()) {
            Some(v) => Kind::ForeignKeys(matches!(v.as_str(), "on" | "1" | "true" | "yes")),
            None => Kind::Read,
        };
    }
    if assigned.is_some() {
        Kind::Write
    } else {
        Kind::Read
    }
}

/// A statement as the trace prints it: each source line trimmed, joined by one space (what
/// `store` does to multi-line SQL).
pub fn one_line(sql: &str) -> String {
    sql.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The DDL of every crashlab database, by the one-line text the trace shows for each of its
/// statements. SQLite keeps a table's `CREATE` text verbatim in `sqlite_schema`, and the
/// logical digest covers it, so the replay runs the source text of a traced DDL statement
/// (the trace proves which one ran; the layout of its lines is all the trace loses).
fn ddl_sources() -> &'static BTreeMap<String, &'static str> {
    static MAP: OnceLock<BTreeMap<String, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| {
        // Every lab's, through the registry.
        let schemas = crate::engine::registry::stacks().flat_map(|lab| lab.schemas.iter());
        let mut map = BTreeMap::new();
        for schema in schemas {
            // The DDL has no `;` inside a literal, so `;` ends each statement.
            for piece in schema.ddl.split_inclusive(';') {
                if piece.trim().is_empty() {
                    continue;
                }
                let statement = piece.trim_end_matches(';');
                map.insert(one_line(piece).trim().to_string(), statement);
            }
        }
        map
    })
}

/// The text to run for a traced statement: the source of a known DDL statement, else as traced.
/// A role on servers traces each DDL statement as it runs it, without the `;` that ends it in
/// the schema's text: the same statement.
pub fn runnable(sql: &str) -> &str {
    let sources = ddl_sources();
    let key = sql.trim();
    sources
        .get(key)
        .or_else(|| match key.ends_with(';') {
            true => None,
            false => sources.get(&format!("{key};")),
        })
        .copied()
        .unwrap_or(sql)
}

/// The literal values of a statement: quoted strings (with `''` unescaped), numbers, and the
/// words and numbers inside each string (a payload's JSON names its amount).
pub fn literals(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = sql.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' {
            let mut text = Vec::new();
            i += 1;
            while i < bytes.len() {
                if bytes[i] == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        text.push(b'\'');
                        i += 2;
                        continue;
                    }
                    break;
                }
                text.push(bytes[i]);
                i += 1;
            }
            i += 1;
            let text = String::from_utf8_lossy(&text).into_owned();
            out.extend(tokens(&text));
            out.push(text);
            continue;
        }
        if c.is_ascii_digit() && (i == 0 || !is_word(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i >= bytes.len() || !is_word(bytes[i]) {
                out.push(sql[start..i].to_string());
            }
            continue;
        }
        i += 1;
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The words of a text (runs of letters, digits, `_` and `-`).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map(|t| t.trim_matches('-'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The words of a report that name a value (they hold a digit: `M1`, `25`, `c1`).
pub fn named_values(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| t.bytes().any(|b| b.is_ascii_digit()))
        .collect()
}

/// The files a process writes, from its trace (statements that may change content).
pub fn written(
    lines: &[Line],
    line_files: &[Option<String>],
) -> std::collections::BTreeSet<String> {
    lines
        .iter()
        .zip(line_files)
        .filter_map(|(line, file)| match (line, file) {
            (Line::Sql { sql, .. }, Some(file)) if classify(sql) == Kind::Write => {
                Some(file.clone())
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_by_kind_and_a_cut_last_line_is_dropped() {
        let text = "SQL sender BEGIN IMMEDIATE\nCOMMITTED sender contract R1 message M1 amount 25\nPOINT a.b #1\nSQL queue INSERT INTO x VALUES ('half";
        let lines = parse(text);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            Line::Sql {
                db: "sender".into(),
                sql: "BEGIN IMMEDIATE".into()
            }
        );
        assert_eq!(
            lines[1],
            Line::Committed {
                db: "sender".into(),
                text: "contract R1 message M1 amount 25".into()
            }
        );
        assert_eq!(lines[2], Line::Other("POINT a.b #1".into()));
        assert!(parse("").is_empty());
        assert!(parse("no newline").is_empty());
        assert_eq!(parse("\n"), vec![Line::Other(String::new())]);
    }

    #[test]
    fn statements_are_classified() {
        assert_eq!(classify("BEGIN IMMEDIATE"), Kind::Begin);
        assert_eq!(classify("COMMIT"), Kind::Commit);
        assert_eq!(classify("ROLLBACK"), Kind::Rollback);
        assert_eq!(classify("ROLLBACK TO sp"), Kind::Write);
        assert_eq!(classify("-- PRAGMA table_info='x'"), Kind::Comment);
        assert_eq!(classify("PRAGMA journal_mode=wal"), Kind::Connection);
        assert_eq!(classify("PRAGMA query_only=ON"), Kind::Connection);
        assert_eq!(classify("PRAGMA foreign_keys=ON"), Kind::ForeignKeys(true));
        assert_eq!(
            classify("PRAGMA foreign_keys=off"),
            Kind::ForeignKeys(false)
        );
        assert_eq!(classify("PRAGMA application_id"), Kind::Read);
        assert_eq!(classify(" PRAGMA user_version=1401"), Kind::Write);
        assert_eq!(classify("SELECT 1"), Kind::Read);
        assert_eq!(classify("INSERT INTO t VALUES (1)"), Kind::Write);
        assert_eq!(classify("CREATE TABLE t(a);"), Kind::Write);
    }

    #[test]
    fn literals_and_named_values() {
        let sql = "INSERT INTO deliveries(message_id, payload, x2) VALUES ('M1', '{\"amount\":25,\"it''s\":\"R1\"}', 17)";
        let l = literals(sql);
        assert!(l.contains(&"M1".to_string()));
        assert!(l.contains(&"25".to_string()));
        assert!(l.contains(&"R1".to_string()));
        assert!(l.contains(&"17".to_string()));
        assert!(l.contains(&"{\"amount\":25,\"it's\":\"R1\"}".to_string()));
        // A digit inside an identifier is not a literal.
        assert!(!l.contains(&"2".to_string()));
        assert_eq!(
            named_values("inbox and ledger for message M1 (+25 to R1)"),
            vec!["M1", "25", "R1"]
        );
        assert_eq!(
            named_values("claim of 2 deliveries 1..2 by c1"),
            vec!["2", "1", "2", "c1"]
        );
    }

    #[test]
    fn traced_ddl_runs_as_its_source() {
        let traced = "CREATE TABLE contracts( contract_id TEXT PRIMARY KEY, amount INTEGER NOT NULL CHECK (amount > 0));";
        let source = runnable(traced);
        assert!(source.contains('\n'), "{source}");
        assert_eq!(one_line(source).trim(), traced.trim_end_matches(';'));
        assert_eq!(runnable("SELECT 1"), "SELECT 1");
    }
}
