//! What a power cut does to the replay: after a step a cut followed, each database file it
//! changed goes back to a state its history passed through (the one the recorded digest
//! gives), and a reader that found a file holding nothing (a cut can leave it so) reads an
//! empty database of its kind.

use std::collections::BTreeSet;

use super::engine::Store;
use super::trace::Line;
use super::walk::{Proc, Scene};

/// A power cut after a step, as the audit read it from `power-cuts.jsonl`: the database
/// files it changed (itself, its WAL or its journal), which the replay may take back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub scenario: String,
    pub step: String,
    pub files: std::collections::BTreeSet<String>,
}

/// What one process read as holding nothing: a file a cut left empty, or never made, read by
/// a process that ran no quick_check on it (the store checks every file with content).
pub struct EmptyReads {
    /// The lab's schemas: a reader of a file holding nothing reads an empty one of its kind.
    /// None for a lab on servers: a cut never reaches a server's store.
    pub schemas: Option<&'static [&'static crate::store::Schema]>,
    /// The files it read so, replayed on `store`, never on the files.
    pub files: BTreeSet<String>,
    pub store: Store,
    /// Files it read as holding nothing while the replayed history gives them content.
    pub misread: Vec<String>,
}

impl EmptyReads {
    pub fn new(schemas: Option<&'static [&'static crate::store::Schema]>) -> EmptyReads {
        EmptyReads {
            schemas,
            files: BTreeSet::new(),
            store: Store::default(),
            misread: Vec::new(),
        }
    }
}

impl Proc<'_> {
    /// Feed its SQL line `at` on `file`: to the empty database it reads when it read the
    /// file as holding nothing, else to the files (a commit there is one of the file's
    /// states a cut may take it back to). True when it completed a commit on the files.
    pub(super) fn feed(
        &mut self,
        store: &mut Store,
        at: usize,
        (db, file, sql): (&str, &str, &str),
    ) -> bool {
        if self.reads_empty(store, db, file) {
            self.session.feed(&mut self.empty.store, at, file, sql);
            return false;
        }
        let committed = self.session.feed(store, at, file, sql);
        if committed {
            store.committed(file);
        }
        committed
    }

    /// Does it read `file` as holding nothing? Decided at its first statement on the file:
    /// a process that never writes it and never ran a quick_check on it found it holding
    /// nothing, which the replayed file must then do (else it is `misread`).
    fn reads_empty(&mut self, store: &Store, db: &str, file: &str) -> bool {
        let Some(schemas) = self.empty.schemas else {
            return false;
        };
        if self.empty.files.contains(file) {
            return true;
        }
        let first = self.line_files[..self.pos - 1]
            .iter()
            .all(|f| f.as_deref() != Some(file));
        if !first || self.writes.contains(file) {
            return false;
        }
        let checked = self.lines.iter().zip(&self.line_files).any(|(l, f)| {
            matches!(l, Line::Sql { sql, .. } if sql.starts_with("PRAGMA quick_check"))
                && f.as_deref() == Some(file)
        });
        if checked {
            return false;
        }
        if !store.holds_nothing(file) {
            self.empty.misread.push(file.to_string());
            return false;
        }
        let schema = schemas.iter().find(|s| s.db == db);
        if let Some(schema) = schema {
            self.empty.store.create(file, schema);
        }
        self.empty.files.insert(file.to_string());
        true
    }
}

impl Scene<'_> {
    /// After a step a power cut followed: each file the cut changed goes back to the latest
    /// state of its window that gives the row recorded after the step (no row, no rollback);
    /// then a new window opens. A file no state explains is left, and its row reported.
    pub(super) fn cut(&self, store: &mut Store, at: usize) {
        let Some(files) = self.cuts.as_ref().and_then(|c| c.get(&at)) else {
            return;
        };
        let step = self.procs[at].step.name.as_str();
        for file in files {
            let row = self
                .rows
                .iter()
                .find(|r| r.after_step == step && r.file == *file);
            if let Some(row) = row {
                let holds = |digest: Option<&str>| match (row.exists, digest) {
                    (false, None) => true,
                    (true, Some(d)) => row.logical_sha256.as_deref() == Some(d),
                    _ => false,
                };
                store.roll_back(file, &holds);
            }
        }
        store.open_window();
    }
}
