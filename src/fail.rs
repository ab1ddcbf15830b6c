//! Failures that carry their documented exit code (README, "Exit codes").
//!
//! Every error a user can cause is one line that says what and where; `main` prints it to
//! stderr and exits with the code here. Anything else (an I/O error deep in SQLite, say)
//! exits 1 with the same one-line shape.

use std::fmt;

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_CONFLICT: i32 = 65;
pub const EXIT_UNAVAILABLE: i32 = 69;
pub const EXIT_CRASH: i32 = 73;
pub const EXIT_LOCKED: i32 = 75;

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

/// A lock is held by another process (exit 75).
pub fn locked(message: impl Into<String>) -> anyhow::Error {
    failure(EXIT_LOCKED, message.into())
}

/// The exit code an error ends the process with.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    match error.downcast_ref::<Failure>() {
        Some(failure) => failure.code,
        None => EXIT_FAILED,
    }
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
