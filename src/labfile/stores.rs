//! A lab file's stores as the checks, the invariants and the audit read them: SQLite files
//! in a run's directory (a store on a server as its SQLite copy), attached by name to one
//! connection.

use std::path::Path;

use anyhow::{Context, Result};

use super::lab::{StoreDef, StoreKind};

/// What a run records of a store on a server it could not read back: `store 'NAME': reading
/// it back from KIND: why`, and it keeps no copy of it; the audit knows the two go together.
pub const UNREAD: &str = "reading it back from";

/// A queue's copy: its ready messages in the order the broker delivers them, each body as
/// text (a body that is not UTF-8 with U+FFFD for its bad bytes).
pub const QUEUE_TABLE: &str = "CREATE TABLE messages (\
    position INTEGER PRIMARY KEY, message_id TEXT, redelivered INTEGER NOT NULL, body TEXT)";

/// Open an in-memory connection with every store attached by its name: made first when
/// `make` (a SQLite store from its schema, a queue's copy empty; a PostgreSQL one is made on
/// its server), else read-only (a missing store is an error).
pub fn attach(dir: &Path, stores: &[StoreDef], make: bool) -> Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI;
    let conn = rusqlite::Connection::open_with_flags(":memory:", flags)?;
    // A PostgreSQL store's file is its copy, read back from its server (`servers::Made`); a
    // queue's copy has one shape, made here empty.
    for store in stores
        .iter()
        .filter(|s| !(make && s.kind == StoreKind::Postgres))
    {
        let path = dir.join(&store.file);
        if make {
            let file = rusqlite::Connection::open(&path)
                .with_context(|| format!("making store '{}'", store.name))?;
            let schema = match store.kind {
                StoreKind::Rabbitmq => Some(QUEUE_TABLE),
                _ => store.schema.as_deref(),
            };
            if let Some(schema) = schema {
                file.execute_batch(schema)
                    .with_context(|| format!("store '{}': its schema", store.name))?;
            }
        } else if !path.is_file() {
            anyhow::bail!(
                "store '{}': no file {} after the run",
                store.name,
                store.file
            );
        }
        let mode = if make { "rw" } else { "ro" };
        // A URI: the characters that end or escape its path are escaped in the file's name.
        let escaped = path
            .display()
            .to_string()
            .replace('%', "%25")
            .replace('#', "%23")
            .replace('?', "%3F");
        let uri = format!("file:{escaped}?mode={mode}");
        conn.execute("ATTACH DATABASE ?1 AS ?2", (&uri, &store.name))
            .with_context(|| format!("attaching store '{}'", store.name))?;
    }
    Ok(conn)
}

/// Roll back the hot journal a killed writer left, as the next ordinary reader of the store
/// would: the checks and invariants open the stores read-only, which cannot. A store that
/// cannot be opened is left as it is, for the reading to say so.
pub fn recover(dir: &Path, stores: &[StoreDef]) {
    for store in stores.iter().filter(|s| !s.kind.on_server()) {
        let path = dir.join(&store.file);
        let journal = dir.join(format!("{}-journal", store.file));
        if !path.is_file() || !journal.is_file() {
            continue;
        }
        if let Ok(conn) = rusqlite::Connection::open(&path) {
            let _ = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            });
        }
    }
}

/// The suffixes of a SQLite store's files: itself, its journal, its WAL and shared memory.
pub const STORE_SUFFIXES: [&str; 4] = ["", "-journal", "-wal", "-shm"];

/// Copy every file of every store in `dir` into the new directory `to`.
pub fn keep_stores(dir: &Path, stores: &[StoreDef], to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for store in stores {
        for suffix in STORE_SUFFIXES {
            let name = format!("{}{suffix}", store.file);
            if dir.join(&name).is_file() {
                std::fs::copy(dir.join(&name), to.join(&name))
                    .with_context(|| format!("keeping store '{}'", store.name))?;
            }
        }
    }
    Ok(())
}

/// A new, empty SQLite file at `file` for a store's copy, replacing the last one and its
/// journal files. Written once, and made again before it is next read: nothing to roll back
/// or flush if this process dies halfway.
pub fn fresh_copy(file: &Path) -> Result<rusqlite::Connection> {
    remove_copy(file)?;
    let conn = rusqlite::Connection::open(file)?;
    conn.pragma_update(None, "journal_mode", "OFF")?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    Ok(conn)
}

/// Remove a store's copy at `file` and its journal files, where there are any.
pub fn remove_copy(file: &Path) -> Result<()> {
    for suffix in STORE_SUFFIXES {
        let path = format!("{}{suffix}", file.display());
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {path}"))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `unreadable` (why a run's stores were unreadable, or a check's value after its
/// `error: `) says `store`, on a server, could not be read back: the run kept no copy of it.
pub fn unread(store: &StoreDef, unreadable: &str) -> bool {
    let said = format!("store '{}': {UNREAD} ", store.name);
    store.kind.on_server()
        && unreadable.starts_with("store '")
        && (unreadable.starts_with(&said) || unreadable.contains(&format!("; {said}")))
}

/// Whether a check's value `recorded` says stores could not be read back, and `reread`, the
/// check run again on the kept stores, finds the first of them missing: the two agree.
pub fn unread_agrees(stores: &[StoreDef], recorded: &str, reread: &str) -> bool {
    let Some(unreadable) = recorded.strip_prefix("error: ") else {
        return false;
    };
    stores.iter().any(|s| {
        unread(s, unreadable)
            && reread
                == format!(
                    "error: store '{}': no file {} after the run",
                    s.name, s.file
                )
    })
}
