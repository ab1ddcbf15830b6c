//! The kept copy of a server database: a plain-SQL dump that both `psql -f` and `sqlite3`
//! load. `BEGIN;`, the lab's DDL as written (the lab keeps it valid for both), one `INSERT`
//! per row in primary-key order with literal values, `COMMIT;`. Literals are the ones both
//! dialects read the same way: integers, reals in Rust's shortest round-trip form, strings
//! with `''` doubled, `NULL`. A blob has no literal both read alike, so a database holding
//! one is refused rather than kept in a form one of the two tools reads otherwise.

use anyhow::{bail, Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::engine::state::sqlite::{walk_content, Content};
use crate::store::Schema;

/// The first line of every dump: says what it is and how to load it.
pub const HEADER: &str = "-- crashlab server database dump: psql -f FILE, or sqlite3 DB < FILE";

/// The largest dump loaded back (the audit reads kept copies from evidence).
pub const DUMP_BYTES_MAX: usize = 256 << 20;

/// A value as a literal both PostgreSQL and SQLite read as the same value.
pub fn literal(value: ValueRef<'_>) -> Result<String> {
    Ok(match value {
        ValueRef::Null => "NULL".to_string(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => {
            anyhow::ensure!(f.is_finite(), "a real value {f} has no SQL literal");
            // `{:?}` keeps a `.0` on integral values, so both read a real back.
            format!("{f:?}")
        }
        ValueRef::Text(t) => {
            let text = std::str::from_utf8(t).context("a text value is not UTF-8")?;
            anyhow::ensure!(!text.contains('\0'), "a text value holds a NUL byte");
            format!("'{}'", text.replace('\'', "''"))
        }
        ValueRef::Blob(_) => bail!("a blob value has no literal psql and sqlite3 read alike"),
    })
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The lab's DDL as a dump holds it: each statement trimmed, on its own line(s).
fn ddl_text(schema: &Schema) -> String {
    let mut text = String::new();
    for piece in schema.ddl.split_inclusive(';') {
        let piece = piece.trim();
        if !piece.is_empty() && piece != ";" {
            text.push_str(piece);
            text.push('\n');
        }
    }
    text
}

/// The dump of the database open on `conn`, built from `schema` (its DDL is the dump's).
pub fn write(conn: &Connection, schema: &Schema) -> Result<String> {
    let mut text = String::new();
    text.push_str(HEADER);
    text.push_str("\nBEGIN;\n");
    text.push_str(&ddl_text(schema));
    let mut table = String::new();
    let mut columns = Vec::new();
    walk_content(conn, &mut |item| {
        match item {
            Content::Table(name, cols) => {
                table = quote(name);
                columns = cols.iter().map(|c| quote(c)).collect();
            }
            Content::Row(values) => {
                let literals = values
                    .iter()
                    .map(|v| literal(*v))
                    .collect::<Result<Vec<_>>>()
                    .with_context(|| format!("a row of {table}"))?;
                text.push_str(&format!(
                    "INSERT INTO {table} ({}) VALUES ({});\n",
                    columns.join(", "),
                    literals.join(", ")
                ));
            }
            Content::Pragma(..) | Content::Schema(..) => {}
        }
        Ok(())
    })?;
    text.push_str("COMMIT;\n");
    Ok(text)
}

mod read;
pub use read::load;
