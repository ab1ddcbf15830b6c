//! Everything crashlab prints on stdout goes through here: a phase's trace (SQL lines, commit
//! reports, crash lines) and the report commands' tables.
//!
//! Lines go to a buffer that is flushed at every commit report and before every crash, so
//! what a crashed process claimed before it died is exactly what reached the file. A kill
//! from outside loses the unflushed tail, which is the honest outcome.
//!
//! A write that fails ends the process at once: the trace is the evidence, and a role that
//! went on committing with its trace lost would leave commits nothing reports. A closed pipe
//! (`| head -1`: the reader chose to stop) ends it quietly with 141; any other failure (a full
//! disk, `/dev/full`) with one line on stderr and 74.

use std::io::{BufWriter, ErrorKind, Stdout, Write};
use std::sync::Mutex;

use crate::fail;

static STDOUT: Mutex<Option<BufWriter<Stdout>>> = Mutex::new(None);

/// The trace buffer: large enough that a phase writes in few system calls.
const BUFFER_BYTES: usize = 64 * 1024;

fn with<R>(f: impl FnOnce(&mut BufWriter<Stdout>) -> R) -> R {
    let mut guard = STDOUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let writer =
        guard.get_or_insert_with(|| BufWriter::with_capacity(BUFFER_BYTES, std::io::stdout()));
    f(writer)
}

/// How a failed write of stdout ends the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The reader closed the pipe: stop quietly.
    Quiet,
    /// The write failed: one line on stderr.
    Failed,
}

impl Ending {
    pub fn of(kind: ErrorKind) -> Ending {
        match kind {
            ErrorKind::BrokenPipe => Ending::Quiet,
            _ => Ending::Failed,
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Ending::Quiet => fail::EXIT_PIPE_CLOSED,
            Ending::Failed => fail::EXIT_IOERR,
        }
    }
}

/// End the process after a failed write of stdout (see the module's comment).
pub fn write_failed(error: &std::io::Error) -> ! {
    write_failed_to("stdout", error)
}

/// End the process after a failed write of `what` (stdout, or the events file): the line
/// names the stream that failed, so a full events file is not blamed on stdout.
pub fn write_failed_to(what: &str, error: &std::io::Error) -> ! {
    let ending = Ending::of(error.kind());
    if ending == Ending::Failed {
        // stderr may be gone as well; there is nobody left to tell then.
        let _ = writeln!(
            std::io::stderr(),
            "crashlab: writing {what} failed: {error}; what this process printed is incomplete"
        );
    }
    std::process::exit(ending.exit_code())
}

/// One line to stdout (buffered).
pub fn line(text: &str) {
    with(|w| {
        if let Err(e) = w
            .write_all(text.as_bytes())
            .and_then(|()| w.write_all(b"\n"))
        {
            write_failed(&e);
        }
    });
}

/// Push everything written so far to the file descriptor.
pub fn flush() {
    with(|w| {
        if let Err(e) = w.flush() {
            write_failed(&e);
        }
    });
}

/// One line of a report (driver, explore, chaos, bench, points, digest), on its way at once
/// as `println!` would be on a terminal, with the same handling of a failed write.
pub fn say(text: &str) {
    line(text);
    flush();
}

/// Text that ends its own lines (a whole table), on its way at once.
pub fn print(text: &str) {
    with(|w| {
        if let Err(e) = w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
            write_failed(&e);
        }
    });
}

/// A count and its noun, singular for exactly one: `plural(1, "crash", "crashes")` is
/// "1 crash", `plural(2, …)` "2 crashes", `plural(0, …)` "0 crashes".
pub fn plural<N>(n: N, one: &str, many: &str) -> String
where
    N: std::fmt::Display + PartialEq + From<u8>,
{
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

/// `println!` for reports: `say!("x {}", 1)`.
#[macro_export]
macro_rules! say {
    () => {
        $crate::out::say("")
    };
    ($($arg:tt)*) => {
        $crate::out::say(&format!($($arg)*))
    };
}

/// A `println!` left in code that does not go through this module panics with "failed
/// printing to stdout: <error>" when the write fails; end such a process as `write_failed`
/// would instead of with a panic (101) and its backtrace.
pub fn catch_print_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if let Some(code) = text.and_then(print_panic_errno) {
            write_failed(&std::io::Error::from_raw_os_error(code));
        }
        previous(info);
    }));
}

/// The errno of std's "failed printing to stdout: … (os error N)" panic message.
fn print_panic_errno(text: &str) -> Option<i32> {
    let rest = text.strip_prefix("failed printing to stdout: ")?;
    let (_, tail) = rest.rsplit_once("(os error ")?;
    tail.strip_suffix(')')?.parse().ok()
}

/// One line on stderr (an error, a progress note). A stderr that cannot be written has nobody
/// left to tell, so a failure here is ignored rather than a panic: the exit code still speaks.
pub fn warn(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// A commit has returned: report it and make the report reach the file before going on.
pub fn committed(db: &str, what: &str) {
    line(&format!("COMMITTED {db} {what}"));
    flush();
    crate::events::emit(&crate::events::Event::commit(db, what));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_quiet_and_every_other_failure_is_an_io_error() {
        assert_eq!(Ending::of(ErrorKind::BrokenPipe), Ending::Quiet);
        assert_eq!(Ending::Quiet.exit_code(), 141);
        for kind in [
            ErrorKind::StorageFull,
            ErrorKind::FileTooLarge,
            ErrorKind::Other,
        ] {
            assert_eq!(Ending::of(kind), Ending::Failed, "{kind:?}");
        }
        assert_eq!(Ending::Failed.exit_code(), 74);
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(Ending::of(full.kind()), Ending::Failed);
        let pipe = std::io::Error::from_raw_os_error(libc::EPIPE);
        assert_eq!(Ending::of(pipe.kind()), Ending::Quiet);
    }

    #[test]
    fn plural_is_singular_for_exactly_one() {
        assert_eq!(plural(1usize, "crash", "crashes"), "1 crash");
        assert_eq!(plural(2usize, "crash", "crashes"), "2 crashes");
        assert_eq!(plural(0i64, "difference", "differences"), "0 differences");
        assert_eq!(plural(-1i64, "step", "steps"), "-1 steps");
        assert_eq!(plural(1u64, "process", "processes"), "1 process");
    }

    #[test]
    fn std_print_panics_are_recognised_by_their_errno() {
        assert_eq!(
            print_panic_errno("failed printing to stdout: Broken pipe (os error 32)"),
            Some(32)
        );
        assert_eq!(
            print_panic_errno("failed printing to stdout: No space left on device (os error 28)"),
            Some(28)
        );
        assert_eq!(print_panic_errno("index out of bounds"), None);
        assert_eq!(print_panic_errno("failed printing to stdout: odd"), None);
    }
}
