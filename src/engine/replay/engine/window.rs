//! Under power loss, the states a cut may take a replayed file back to: its state when the
//! window opened (at the scenario's start, or right after the previous cut), then its state
//! after each commit since. A cut takes back what was never synced, and what was never
//! synced is never older than the previous cut: so the file after a cut is one of these, and
//! the replay picks the latest that gives the recorded digest (`Store::roll_back`).

use std::collections::BTreeMap;

use rusqlite::{Connection, MAIN_DB};

/// The most states kept per file and window: a driver scenario commits tens of times.
pub const STATES_MAX: usize = 10_000;

/// One state: the file's bytes, or None when there was no file.
pub type Image = Option<Vec<u8>>;

#[derive(Default)]
pub struct Windows {
    /// Recording: the run is a power-loss run.
    pub on: bool,
    /// Per file, its states in this window, oldest first (its base first).
    states: BTreeMap<String, Vec<Image>>,
}

/// A database's bytes, as SQLite serializes it (None: it could not be).
pub fn image_of(conn: &mut Connection) -> Image {
    conn.serialize(MAIN_DB).ok().map(|d| d.to_vec())
}

impl Windows {
    /// A new window: each file's base is its current image.
    pub fn open(&mut self, current: BTreeMap<String, Image>) {
        self.states = current.into_iter().map(|(f, i)| (f, vec![i])).collect();
    }

    /// `file` committed: its image now is a state a later cut may take it back to.
    pub fn committed(&mut self, file: &str, image: Image) {
        if !self.on {
            return;
        }
        let states = self
            .states
            .entry(file.to_string())
            .or_insert_with(|| vec![None]);
        if states.len() < STATES_MAX {
            states.push(image);
        }
    }

    /// The states of `file` in this window, latest first, each with how many of its commits
    /// it takes back.
    pub fn candidates(&self, file: &str) -> Vec<(usize, &Image)> {
        match self.states.get(file) {
            Some(states) => states.iter().rev().enumerate().collect(),
            None => Vec::new(),
        }
    }
}

/// An in-memory database holding `image` (an empty one for None).
pub fn load(image: &Image) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    if let Some(bytes) = image {
        conn.deserialize_read_exact(MAIN_DB, &bytes[..], bytes.len(), false)?;
    }
    Ok(conn)
}
