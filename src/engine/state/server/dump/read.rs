//! Reading a kept dump back without running it. A dump in evidence is input like any other:
//! its text is never handed to SQLite. It must be exactly what `write` makes for one of the
//! lab's schemas: the header, `BEGIN;`, that schema's DDL as written, one
//! `INSERT INTO "<table>" (<columns>) VALUES (<literals>);` per row, `COMMIT;` and nothing
//! after. The tables come from the lab's own DDL (compiled in, not read from the file), and
//! each row's literals are parsed and bound as parameters to an INSERT the loader writes.
//! Anything else is refused with the line it starts on.

use anyhow::{bail, Context, Result};
use rusqlite::limits::Limit;
use rusqlite::types::Value;
use rusqlite::Connection;

use super::{ddl_text, quote, write, DUMP_BYTES_MAX, HEADER};
use crate::store::Schema;

/// SQLite virtual-machine steps the loader's connection may take, per byte of dump, counted
/// in units of `PROGRESS_STEPS`: far above what loading and digesting a row costs, so it
/// only stops something that would otherwise not end.
const PROGRESS_STEPS: i32 = 1000;
const PROGRESS_CALLS_PER_BYTE: u64 = 1;
const PROGRESS_CALLS_MIN: u64 = 100_000;

/// One table of the schema: the text an INSERT of it starts with, and its bound INSERT.
struct Table {
    prefix: String,
    columns: usize,
    insert: String,
}

/// Load a dump into a fresh in-memory SQLite database (the audit's digest of a kept copy),
/// refusing anything not in the form `write` makes for one of `schemas`.
pub fn load(bytes: &[u8], schemas: &[&Schema]) -> Result<Connection> {
    anyhow::ensure!(
        bytes.len() <= DUMP_BYTES_MAX,
        "a dump of {} bytes is over the {DUMP_BYTES_MAX} the audit reads",
        bytes.len()
    );
    let text = std::str::from_utf8(bytes).context("a dump is UTF-8 text")?;
    let opening = format!("{HEADER}\nBEGIN;\n");
    if !text.starts_with(&opening) {
        let line = if text.starts_with(&format!("{HEADER}\n")) {
            2
        } else {
            1
        };
        bail!("line {line}: not a server database dump (it does not open with crashlab's header and BEGIN;)");
    }
    // The longest lab DDL the dump goes on with: one schema's DDL may start another's.
    let after = &text[opening.len()..];
    let Some((schema, ddl)) = schemas
        .iter()
        .map(|s| (*s, ddl_text(s)))
        .filter(|(_, ddl)| after.starts_with(ddl.as_str()))
        .max_by_key(|(_, ddl)| ddl.len())
    else {
        // Named at the line where it parts from the lab DDL it follows furthest.
        let same = schemas
            .iter()
            .map(|s| common_prefix(after, &ddl_text(s)))
            .max()
            .unwrap_or(0);
        let line = 1 + text[..opening.len() + same].matches('\n').count();
        bail!("line {line}: its DDL is not the lab's DDL of any of its databases");
    };
    let conn = fresh(bytes.len())?;
    // The lab's DDL, not the file's: the file's was only compared with it.
    conn.execute_batch(schema.ddl).context("the lab's DDL")?;
    let tables = tables(&conn)?;
    conn.execute_batch("BEGIN")?;
    let mut at = opening.len() + ddl.len();
    let mut line = 1 + text[..at].matches('\n').count();
    let mut rows: u64 = 0;
    loop {
        let rest = &text[at..];
        if rest.starts_with("COMMIT;") {
            anyhow::ensure!(
                rest == "COMMIT;\n",
                "line {}: something other than one newline after COMMIT;",
                line + usize::from(rest.starts_with("COMMIT;\n"))
            );
            break;
        }
        let (len, table, values) = insert(rest, &tables).with_context(|| format!("line {line}"))?;
        conn.prepare_cached(&table.insert)?
            .execute(rusqlite::params_from_iter(values))
            .with_context(|| format!("line {line}: loading its row"))?;
        rows += 1;
        line += rest[..len].matches('\n').count();
        at += len;
        // Every statement ends with a newline; a dump's rows cannot outnumber its bytes.
        debug_assert!(rows as usize <= bytes.len());
    }
    conn.execute_batch("COMMIT")?;
    // Rows in key order, each once, and every literal in its one form: the dump is the one
    // the writer makes of what was loaded, byte for byte.
    let again = write(&conn, schema)?;
    if again != text {
        let differ = again
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| again.lines().count().min(text.lines().count()));
        bail!(
            "line {}: not as crashlab writes it (rows out of key order, repeated, or a value in another form)",
            differ + 1
        );
    }
    Ok(conn)
}

/// How many bytes `a` and `b` start with alike.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// An in-memory connection that can attach nothing and run only a bounded number of steps.
fn fresh(bytes: usize) -> Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    let calls_max = PROGRESS_CALLS_MIN + PROGRESS_CALLS_PER_BYTE * bytes as u64;
    let mut calls: u64 = 0;
    conn.progress_handler(
        PROGRESS_STEPS,
        Some(move || {
            calls += 1;
            calls > calls_max
        }),
    )?;
    Ok(conn)
}

/// The schema's tables (SQLite's own among them, as the writer walks them), by how an
/// INSERT of each starts.
fn tables(conn: &Connection) -> Result<Vec<Table>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut tables = Vec::with_capacity(names.len());
    for name in names {
        let mut info = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
        let columns: Vec<String> = info
            .query_map([&name], |r| r.get::<_, String>(0))?
            .map(|c| c.map(|c| quote(&c)))
            .collect::<rusqlite::Result<_>>()?;
        let list = columns.join(", ");
        let marks = vec!["?"; columns.len()].join(", ");
        tables.push(Table {
            prefix: format!("INSERT INTO {} ({list}) VALUES (", quote(&name)),
            columns: columns.len(),
            insert: format!("INSERT INTO {} ({list}) VALUES ({marks})", quote(&name)),
        });
    }
    Ok(tables)
}

/// One INSERT at the start of `text`: its length (through its newline), table and values.
fn insert<'t>(text: &str, tables: &'t [Table]) -> Result<(usize, &'t Table, Vec<Value>)> {
    let table = tables
        .iter()
        .find(|t| text.starts_with(&t.prefix))
        .context("not an INSERT of the lab's tables as crashlab writes it, nor COMMIT;")?;
    let mut at = table.prefix.len();
    let mut values = Vec::with_capacity(table.columns);
    for i in 0..table.columns {
        if i > 0 {
            anyhow::ensure!(
                text[at..].starts_with(", "),
                "values not separated by \", \""
            );
            at += 2;
        }
        let (len, value) = literal(&text[at..])?;
        values.push(value);
        at += len;
    }
    anyhow::ensure!(
        text[at..].starts_with(");\n"),
        "an INSERT that does not end with its {} values, \");\" and a newline",
        table.columns
    );
    Ok((at + 3, table, values))
}

/// One literal as the writer writes them: `NULL`, an integer, a real, or a string with `''`
/// for a quote. Its length and value.
fn literal(text: &str) -> Result<(usize, Value)> {
    if let Some(body) = text.strip_prefix('\'') {
        let mut value = String::new();
        let mut rest = body;
        loop {
            let end = rest.find('\'').context("a string that does not end")?;
            value.push_str(&rest[..end]);
            rest = &rest[end + 1..];
            match rest.strip_prefix('\'') {
                Some(after) => {
                    value.push('\'');
                    rest = after;
                }
                None => break,
            }
        }
        return Ok((text.len() - rest.len(), Value::Text(value)));
    }
    let len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '+' || c == '.'))
        .unwrap_or(text.len());
    let token = &text[..len];
    let value = if token == "NULL" {
        Value::Null
    } else if !token.is_empty()
        && token
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e'))
    {
        if token.contains(['.', 'e']) {
            let f: f64 = token.parse().ok().context("a real that does not read")?;
            anyhow::ensure!(f.is_finite(), "a real that is not finite");
            Value::Real(f)
        } else {
            Value::Integer(token.parse().ok().context("an integer out of range")?)
        }
    } else {
        bail!("a value that is not a literal crashlab writes");
    };
    Ok((len, value))
}
