//! Failures that carry their documented exit code (README, "Exit codes").
//!
//! Every error a user can cause is one line that says what and where; `main` prints it to
//! stderr and exits with the code here. An I/O failure (a full disk, a file past its size
//! limit, a failed write of the trace) exits 74 wherever it comes from; anything else exits 1
//! with the same one-line shape.

use std::fmt;

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_CONFLICT: i32 = 65;
pub const EXIT_UNAVAILABLE: i32 = 69;
pub const EXIT_CRASH: i32 = 73;
/// EX_IOERR: a write or read failed (ENOSPC, EFBIG, EIO; SQLITE_FULL, SQLITE_IOERR; stdout).
pub const EXIT_IOERR: i32 = 74;
pub const EXIT_LOCKED: i32 = 75;
/// EX_CONFIG: the run's configuration armed a crash point the phase never reached.
pub const EXIT_NOT_REACHED: i32 = 78;
/// 128 + SIGINT, as a shell reports a process ended by Ctrl-C: also used for SIGTERM, after
/// the run has killed its children and removed what it had written.
pub const EXIT_INTERRUPTED: i32 = 130;
/// 128 + SIGPIPE, as a shell reports `cat` stopped by a closed pipe: stdout's reader went
/// away (`| head -1`), the process stops quietly.
pub const EXIT_PIPE_CLOSED: i32 = 141;

/// An error with the exit code the process must end with.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

fn failure(code: i32, message: String) -> anyhow::Error {
    anyhow::Error::new(Failure { code, message })
}

/// Bad input: a missing or foreign file, a malformed argument (exit 2).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_USAGE, message.into())
}

/// An expectation or invariant did not hold (exit 1).
pub fn failed(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_FAILED, message.into())
}

/// Same id, different payload (exit 65).
pub fn conflict(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_CONFLICT, message.into())
}

/// The peer could not be reached (exit 69).
pub fn unavailable(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_UNAVAILABLE, message.into())
}

/// An I/O failure: a full disk, a file over its size limit, a failed write (exit 74).
pub fn io(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_IOERR, message.into())
}

/// A lock is held by another process (exit 75).
pub fn locked(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_LOCKED, message.into())
}

/// The exit code an error ends the process with: the code of the first `Failure` in its
/// chain; else 74 when an I/O error caused it (std's or SQLite's); else 1.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    if let Some(failure) = error.chain().find_map(|c| c.downcast_ref::<Failure>()) {
        return failure.code;
    }
    if error.chain().any(is_io) {
        return EXIT_IOERR;
    }
    EXIT_FAILED
}

/// An operating-system I/O error, or SQLite's word for one (SQLITE_FULL, SQLITE_IOERR_*).
fn is_io(cause: &(dyn std::error::Error + 'static)) -> bool {
    if cause.is::<std::io::Error>() {
        return true;
    }
    cause
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        .is_some_and(is_io_code)
}

/// SQLite's result codes for a failed read or write of the file itself.
pub fn is_io_code(code: rusqlite::ErrorCode) -> bool {
    matches!(
        code,
        rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::SystemIoFailure
    )
}

/// The one line printed for an error: the chain joined with ": ".
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for (index, cause) in error.chain().enumerate() {
        if index > 0 {
            line.push_str(": ");
        }
        line.push_str(&cause.to_string());
    }
    line.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_failures_exit_74_wherever_they_come_from() {
        let disk = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let e = anyhow::Error::new(disk).context("writing results.json");
        assert_eq!(exit_code(&e), EXIT_IOERR);
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        assert_eq!(exit_code(&anyhow::Error::new(full)), EXIT_IOERR);
        let ioerr = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_WRITE),
            None,
        );
        assert_eq!(exit_code(&anyhow::Error::new(ioerr)), EXIT_IOERR);
        // A documented failure keeps its code under any context; anything else is 1.
        assert_eq!(exit_code(&usage("bad").context("outer")), EXIT_USAGE);
        assert_eq!(exit_code(&io("full")), EXIT_IOERR);
        let constraint = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
            None,
        );
        assert_eq!(exit_code(&anyhow::Error::new(constraint)), EXIT_FAILED);
        assert_eq!(exit_code(&anyhow::anyhow!("odd")), EXIT_FAILED);
    }
}
