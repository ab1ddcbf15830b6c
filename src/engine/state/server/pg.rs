//! A PostgreSQL database read into SQLite: a fresh in-memory SQLite database built from the
//! lab's DDL (which both accept with the same meaning), every table's rows copied in. SQLite's
//! logical digest of it is the server database's, so a digest means the same for both stores
//! and the audit's replay (which runs the traced statements on SQLite) can compare them.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use postgres::types::Type;
use postgres::{Client, NoTls};
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::store::Schema;

/// Connecting and every statement have this bound (a killed server is not waited on forever).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Rows read per table: a lab's tables hold a handful (a chaos run thousands).
pub const ROWS_MAX: usize = 1_000_000;

/// A client of the database at `url`; None when that database does not exist.
pub fn connect(url: &str) -> Result<Option<Client>> {
    let mut config: postgres::Config = url.parse().context("a PostgreSQL URL")?;
    config.connect_timeout(CONNECT_TIMEOUT);
    config.options("-c statement_timeout=10000");
    match config.connect(NoTls) {
        Ok(client) => Ok(Some(client)),
        // 3D000 invalid_catalog_name: the database is not there (released, or never made).
        Err(e) if e.code() == Some(&postgres::error::SqlState::INVALID_CATALOG_NAME) => Ok(None),
        Err(e) => Err(anyhow::Error::from(e).context("connecting to PostgreSQL")),
    }
}

/// One PostgreSQL value as the SQLite value it stands for.
fn value(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_().clone();
    let v = if ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?
            .map(|v| Value::Integer(v.into()))
    } else if ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map(|v| Value::Integer(v.into()))
    } else if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.map(Value::Integer)
    } else if ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?.map(Value::Real)
    } else if ty == Type::FLOAT4 {
        row.try_get::<_, Option<f32>>(i)?
            .map(|v| Value::Real(v.into()))
    } else if ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map(|v| Value::Integer(v.into()))
    } else if [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME].contains(&ty) {
        row.try_get::<_, Option<String>>(i)?.map(Value::Text)
    } else {
        bail!(
            "column {} is of type {ty}, which has no SQLite meaning the audit can replay",
            row.columns()[i].name()
        )
    };
    Ok(v.unwrap_or(Value::Null))
}

/// The content of the database at `url` under `schema`, in a fresh in-memory SQLite
/// database; None when the database does not exist or holds none of the schema's tables yet
/// (a role creates them on its first connection, as a SQLite file appears on its first open).
pub fn read(url: &str, schema: &Schema) -> Result<Option<Connection>> {
    let Some(mut client) = connect(url)? else {
        return Ok(None);
    };
    // One snapshot of every table: a repeatable-read, read-only transaction.
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let tables = {
        let rows = tx.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
        )?;
        let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        schema
            .tables
            .iter()
            .map(|(t, _)| *t)
            .filter(|t| names.iter().any(|n| n == t))
            .collect::<Vec<_>>()
    };
    if tables.is_empty() {
        return Ok(None);
    }
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(schema.ddl)
        .with_context(|| format!("the {} schema's DDL on SQLite", schema.db))?;
    for table in tables {
        let columns: Vec<String> = {
            let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
            let names = stmt
                .query_map([table], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            names
        };
        anyhow::ensure!(
            !columns.is_empty(),
            "table {table} is not in the {} DDL",
            schema.db
        );
        let quoted: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
        let select = format!("SELECT {} FROM \"{table}\"", quoted.join(", "));
        let rows = tx
            .query(select.as_str(), &[])
            .with_context(|| format!("reading {table}"))?;
        anyhow::ensure!(
            rows.len() <= ROWS_MAX,
            "table {table} holds over {ROWS_MAX} rows"
        );
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let insert = format!(
            "INSERT INTO \"{table}\" ({}) VALUES ({})",
            quoted.join(", "),
            marks.join(", ")
        );
        let mut stmt = conn.prepare(&insert)?;
        for row in &rows {
            let values = (0..columns.len())
                .map(|i| value(row, i))
                .collect::<Result<Vec<_>>>()
                .with_context(|| format!("a row of {table}"))?;
            stmt.execute(rusqlite::params_from_iter(values))
                .with_context(|| format!("a row of {table} on SQLite"))?;
        }
    }
    tx.commit()?;
    Ok(Some(conn))
}
