//! The server store: a lab's PostgreSQL databases and RabbitMQ queues, found by logical name
//! in the work directory's `stack.json` (`crate::stackfile`). Rows, digests, kept copies and
//! the audit's checks of them for a lab on servers.

use std::path::Path;

use anyhow::{bail, Result};

use super::{Cache, FileRow, Part, StateStore};
use crate::store::Schema;

/// The stores of a lab on servers. `schemas`: the lab's schemas by logical database name,
/// written so that SQLite accepts them as PostgreSQL does (the logical digest and the audit's
/// replay load rows into SQLite under them).
pub struct ServerStore {
    pub schemas: &'static [&'static Schema],
}

impl StateStore for ServerStore {
    fn kind(&self) -> &'static str {
        "server"
    }

    fn side_suffixes(&self) -> &'static [&'static str] {
        &[]
    }

    fn snapshot_cached(
        &self,
        _work: &Path,
        _names: &[&str],
        _scenario: &str,
        _step: &str,
        _cache: &mut Cache,
    ) -> Result<Vec<FileRow>> {
        bail!("the server store is not built yet")
    }

    fn snapshot_settled(
        &self,
        _work: &Path,
        _names: &[&str],
        _scenario: &str,
        _step: &str,
    ) -> Result<Vec<FileRow>> {
        bail!("the server store is not built yet")
    }

    fn logical_digest(&self, _work: &Path, _name: &str) -> Result<String> {
        bail!("the server store is not built yet")
    }

    fn keep(&self, _work: &Path, _name: &str, _to: &Path) -> Result<Option<String>> {
        bail!("the server store is not built yet")
    }

    fn kept_digest(&self, _bytes: &[u8], _side: &[(&str, &[u8])]) -> Result<String> {
        bail!("the server store is not built yet")
    }

    fn row_problems(&self, _row: &FileRow, _part: Part) -> Vec<String> {
        vec!["the server store is not built yet".to_string()]
    }

    fn rows_problems(&self, _names: &[&str], _rows: &[FileRow]) -> Vec<String> {
        Vec::new()
    }
}
