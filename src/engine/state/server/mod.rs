//! The server store: a lab's PostgreSQL databases and RabbitMQ queues, found by logical name
//! in the work directory's `stack.json` (`crate::stackfile`). Rows, digests, kept copies and
//! the audit's checks of them for a lab on servers.
//!
//! A row of a server store has no size and no raw digest (a server's files are its own, and
//! shared by every database in it): only `exists` and the logical digest. A database exists
//! once it holds its schema's tables (a role makes them on its first connection, as a SQLite
//! file appears on its first open); its logical digest is its rows loaded into SQLite under
//! the lab's DDL (pg.rs), so the audit's replay on SQLite reaches the same digest. A queue
//! exists once declared; its logical digest is its ready-message count (queue.rs).

use std::path::Path;

use anyhow::{Context, Result};

use super::{Cache, FileRow, Part, SnapshotOf, StateStore};
use crate::stackfile::{self, StackFile};
use crate::store::Schema;

pub mod dump;
pub mod pg;
pub mod queue;
#[cfg(test)]
mod tests;

/// The stores of a lab on servers. `schemas`: the lab's schemas by logical database name,
/// written so that SQLite accepts them as PostgreSQL does (the logical digest and the audit's
/// replay load rows into SQLite under them).
pub struct ServerStore {
    pub schemas: &'static [&'static Schema],
}

/// Where one logical store is this scenario.
enum Place<'a> {
    Database(String, &'a Schema),
    Queue { url: String, name: String },
}

impl ServerStore {
    fn place(&self, file: &StackFile, name: &str) -> Result<Place<'static>> {
        if let Some(url) = file.postgres.get(name) {
            let schema = self
                .schemas
                .iter()
                .copied()
                .find(|s| s.db == name)
                .with_context(|| format!("database {name} has no schema in its lab"))?;
            return Ok(Place::Database(url.clone(), schema));
        }
        if let Some(queue) = file.queues.get(name) {
            let url = file
                .amqp_url
                .clone()
                .with_context(|| format!("queue {name}: {} names no broker", stackfile::NAME))?;
            return Ok(Place::Queue {
                url,
                name: queue.clone(),
            });
        }
        anyhow::bail!("{} names no database or queue {name}", stackfile::NAME)
    }

    /// `(exists, logical digest)` of one store.
    fn state(&self, file: &StackFile, name: &str) -> Result<(bool, Option<String>)> {
        Ok(match self.place(file, name)? {
            Place::Database(url, schema) => {
                match pg::read(&url, schema).with_context(|| format!("reading database {name}"))? {
                    Some(conn) => (true, Some(super::sqlite::logical_sha256_conn(&conn)?)),
                    None => (false, None),
                }
            }
            Place::Queue { url, name: queue } => {
                match queue::count(&url, &queue).with_context(|| format!("reading queue {name}"))? {
                    Some(n) => (true, Some(queue::digest_of_count(n))),
                    None => (false, None),
                }
            }
        })
    }
}

impl StateStore for ServerStore {
    fn kind(&self) -> &'static str {
        "server"
    }

    fn side_suffixes(&self) -> &'static [&'static str] {
        &[]
    }

    fn snapshot_cached(&self, of: &SnapshotOf<'_>, _cache: &mut Cache) -> Result<Vec<FileRow>> {
        let file = stackfile::read(of.work)?;
        let mut rows = Vec::with_capacity(of.names.len());
        for name in of.names {
            let (exists, logical) = self.state(&file, name)?;
            rows.push(of.row(name.to_string(), exists, 0, None, logical));
        }
        // Postcondition: one row per store, in the order of `names`.
        debug_assert_eq!(rows.len(), of.names.len());
        Ok(rows)
    }

    fn logical_digest(&self, work: &Path, name: &str) -> Result<String> {
        let file = stackfile::read(work)?;
        match self.state(&file, name)? {
            (true, Some(digest)) => Ok(digest),
            _ => anyhow::bail!("{name} does not exist"),
        }
    }

    /// A database as a plain-SQL dump `to/<name>`, a queue as its messages `to/<name>`.
    fn keep(&self, work: &Path, name: &str, to: &Path) -> Result<Option<String>> {
        let file = stackfile::read(work)?;
        let (text, digest) = match self.place(&file, name)? {
            Place::Database(url, schema) => {
                let conn = pg::read(&url, schema)?
                    .with_context(|| format!("keeping {name}: it has no tables"))?;
                let text = dump::write(&conn, schema)?;
                // The digest is the dump's own, loaded back: what the audit will read.
                let loaded = dump::load(text.as_bytes(), &[schema])?;
                let digest = super::sqlite::logical_sha256_conn(&loaded)?;
                (text, digest)
            }
            Place::Queue { url, name: queue } => {
                let kept = queue::messages(&url, &queue)?;
                let text = queue::write(name, &kept)?;
                (text, queue::digest_of_count(kept.len() as u32))
            }
        };
        let path = to.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(Some(digest))
    }

    fn kept_digest(&self, bytes: &[u8], side: &[(&str, &[u8])]) -> Result<String> {
        anyhow::ensure!(side.is_empty(), "a server store keeps no side files");
        if let Some(digest) = queue::kept_digest(bytes) {
            return digest;
        }
        let conn = dump::load(bytes, self.schemas)?;
        super::sqlite::logical_sha256_conn(&conn)
    }

    fn row_problems(&self, row: &FileRow, part: Part) -> Vec<String> {
        rows::row_problems(row, part)
    }

    fn rows_problems(&self, names: &[&str], rows: &[FileRow]) -> Vec<String> {
        rows::rows_problems(names, rows)
    }
}

mod rows;
