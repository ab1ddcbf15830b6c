//! SQLite's errors in the words of the lab: one line that names the store and the file, and
//! the exit code that says what kind of failure it was.

use rusqlite::ErrorCode;

use super::sqlite::BUSY_TIMEOUT_MS;
use crate::fail;

/// Turn SQLite's errors about the file itself into one line that names the file.
pub fn explain(error: rusqlite::Error, db: &str, shown: &str) -> anyhow::Error {
    // A value SQLite stored but the lab cannot read as its schema says (text that is not
    // UTF-8, text in an integer column) was not written by crashlab: bad input, not a failure.
    if let rusqlite::Error::Utf8Error(..)
    | rusqlite::Error::InvalidColumnType(..)
    | rusqlite::Error::FromSqlConversionFailure(..) = error
    {
        return fail::usage(format!(
            "{db} database {shown} is corrupt or foreign: it holds a value the lab cannot read ({error})"
        ));
    }
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => {
            fail::usage(format!("{db} database {shown} is not a SQLite database"))
        }
        Some(ErrorCode::CannotOpen) => {
            fail::usage(format!("{db} database {shown} cannot be opened"))
        }
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            fail::locked(format!("{db} database {shown} {}", busy_words(&error)))
        }
        Some(ErrorCode::ReadOnly) => fail::usage(format!("{db} database {shown} is read-only")),
        Some(ErrorCode::DatabaseCorrupt) => fail::usage(format!(
            "{db} database {shown} is corrupt (database disk image is malformed)"
        )),
        Some(code) if fail::is_io_code(code) => {
            fail::io(format!("{db} database {shown}: {}", sqlite_message(&error)))
        }
        _ => anyhow::anyhow!("{db} database {shown}: {}", sqlite_message(&error)),
    }
}

/// What a BUSY means: only a plain BUSY waited out the busy timeout. SQLite answers some at
/// once, without waiting (a read snapshot gone stale under another writer, a recovery under
/// way), and saying "past the timeout" there would be false.
fn busy_words(error: &rusqlite::Error) -> String {
    let extended = match error {
        rusqlite::Error::SqliteFailure(e, _) => e.extended_code,
        _ => 0,
    };
    match extended {
        rusqlite::ffi::SQLITE_BUSY_SNAPSHOT => "was written by another process after this one read it (SQLITE_BUSY_SNAPSHOT); nothing was changed".to_string(),
        rusqlite::ffi::SQLITE_BUSY_RECOVERY => "is being recovered by another process (SQLITE_BUSY_RECOVERY)".to_string(),
        _ => format!("stayed locked past the {BUSY_TIMEOUT_MS} ms busy timeout"),
    }
}

/// SQLite's message and extended code, once (rusqlite's text repeats it after the code).
fn sqlite_message(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(e, Some(text)) => {
            format!("{text} (SQLite code {})", e.extended_code)
        }
        other => other.to_string(),
    }
}
