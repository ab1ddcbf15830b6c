//! The pause nemesis, role side: `--pause-at POINT[@N]` makes a role stop itself (SIGSTOP)
//! at the N-th hit of a typed crash point, after telling the harness so (a `PAUSED` line and
//! a `paused` event). The harness waits for the stopped state, runs whatever must happen
//! while the role is frozen (another consumer takes its expired lease), and continues it with
//! SIGCONT; the role then goes on from the very same place, as a process paused by a GC, a
//! VM migration or a `kill -STOP` would. The stop is the role's own doing, so where it lands
//! is exact, never a matter of timing.

use std::sync::Mutex;

use anyhow::Result;

use crate::crash::{self, CrashAt, PointDef};
use crate::events::{self, Event};
use crate::out;

/// The flag that arms a pause (the engine's `nemesis::Pause` spells it through this).
pub const FLAG: &str = "--pause-at";

static ARMED: Mutex<Option<CrashAt>> = Mutex::new(None);

/// Arm the pause of `spec` (`POINT[@N]`, a point of `phase`); a bad spec is a usage error
/// (exit 2), with the known points.
pub fn arm(spec: &str, points: &'static [PointDef], phase: &str) -> Result<()> {
    let at = crash::parse(spec, points, Some(phase))
        .map_err(|e| crate::fail::usage(format!("{FLAG} {e}")))?;
    let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
    assert!(armed.is_none(), "a process arms at most one pause");
    *armed = Some(at);
    crash::also_at_points(at_point);
    Ok(())
}

/// The line a role prints right before it stops itself.
pub fn paused_line(point: &str, hit: u32) -> String {
    format!("PAUSED {point} #{hit}")
}

/// The line a role prints once it was continued.
pub fn resumed_line(point: &str) -> String {
    format!("RESUMED {point}")
}

/// Called by `crash::point` at every hit, once armed: stop here when this is the armed point
/// and hit.
/// The line and the event reach their files before the stop, so the harness that sees the
/// event knows the stop is the next thing this process does.
fn at_point(point: &str, hit: u32) {
    let due = {
        let armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
        armed
            .as_ref()
            .is_some_and(|a| a.point == point && a.hit == hit)
    };
    if !due {
        return;
    }
    out::line(&paused_line(point, hit));
    out::flush();
    events::emit(&Event::Paused {
        point: point.to_string(),
        hit,
    });
    // SAFETY: raise has no memory effects; SIGSTOP cannot be caught, so this thread stops
    // here with the whole process until a SIGCONT (or a SIGKILL) arrives.
    unsafe { libc::raise(libc::SIGSTOP) };
    out::line(&resumed_line(point));
}

#[cfg(test)]
mod tests {
    use super::*;

    static POINTS: &[PointDef] = &[crash::Point::new("c.after-claim", "claimed")];

    #[test]
    fn a_bad_spec_is_a_usage_error_naming_the_flag_and_an_unarmed_point_passes() {
        let e = arm("c.nowhere", POINTS, "c").unwrap_err();
        assert_eq!(crate::fail::exit_code(&e), crate::fail::EXIT_USAGE);
        assert!(
            e.to_string().starts_with("--pause-at unknown crash point"),
            "{e}"
        );
        let e = arm("c.after-claim@0", POINTS, "c").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        // Nothing armed: a point passes without stopping.
        at_point("c.after-claim", 1);
        assert_eq!(paused_line("c.after-claim", 2), "PAUSED c.after-claim #2");
    }
}
