//! The phase's stdout: SQL trace lines, commit reports, crash lines.
//!
//! Lines go to a buffer that is flushed at every commit report and before every crash, so
//! what a crashed process claimed before it died is exactly what reached the file. A kill
//! from outside loses the unflushed tail, which is the honest outcome.

use std::io::{BufWriter, Stdout, Write};
use std::sync::Mutex;

static STDOUT: Mutex<Option<BufWriter<Stdout>>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut BufWriter<Stdout>) -> R) -> R {
    let mut guard = STDOUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let writer =
        guard.get_or_insert_with(|| BufWriter::with_capacity(64 * 1024, std::io::stdout()));
    f(writer)
}

/// One line to stdout (buffered). A closed stdout is not an error worth dying for.
pub fn line(text: &str) {
    with(|w| {
        let _ = w.write_all(text.as_bytes());
        let _ = w.write_all(b"\n");
    });
}

/// Push everything written so far to the file descriptor.
pub fn flush() {
    with(|w| {
        let _ = w.flush();
    });
}

/// A commit has returned: report it and make the report reach the file before going on.
pub fn committed(db: &str, what: &str) {
    line(&format!("COMMITTED {db} {what}"));
    flush();
}
