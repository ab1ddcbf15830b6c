//! Chaos under power loss: at each kill moment the seeded victim dies with every other role
//! of the run (a machine that loses power stops every process on it), and once none of them
//! runs, the work directory loses what was never synced (`nemesis::PowerLoss`). The roles
//! are then started again, as after a reboot, and recover from the files.

use std::path::Path;

use anyhow::Result;

use crate::engine::crash_mode;
use crate::engine::load::kills::Kill;
use crate::engine::load::roles::Role;
use crate::engine::nemesis::{Aftermath, Nemesis, PowerLoss};
use crate::engine::process;
use crate::power::cut::Style;

/// How long a role that already said `end` may take to exit before the cut.
const ENDING_MS_MAX: u64 = 5_000;

/// Kill every role still running that the kill moment did not pick: one row each in
/// `kills`, marked as the cut's, at the same moment as the row before them. A role that
/// has already emitted its `end` event is left to exit: a SIGKILL then would contradict
/// its own events, and whatever it wrote is in the files the cut judges either way.
pub fn kill_the_rest(roles: &mut [Role], kills: &mut Vec<Kill>, dir: &Path) {
    let Some(moment) = kills.last().cloned() else {
        return;
    };
    for role in roles.iter_mut() {
        let Some(running) = role.running.as_mut() else {
            continue;
        };
        if running.killed || ended(dir, &running.step) {
            continue;
        }
        process::kill(&running.started);
        running.killed = true;
        running.kill = Some(kills.len());
        kills.push(Kill {
            kill: kills.len() + 1,
            role: role.name.clone(),
            step: running.step.clone(),
            cut: true,
            ..moment.clone()
        });
    }
}

/// Once every process of the run has ended (killed, not reaped yet: the pipeline records
/// them), cut the work directory in `style` seeded by `seed`; the summary of the cut, with
/// the rows of `kills.json` it followed (numbered from 1), comes back for `power-cuts.jsonl`.
pub fn cut(
    roles: &[Role],
    work: &Path,
    (style, seed): (Style, u64),
    kills: std::ops::Range<usize>,
) -> Result<serde_json::Value> {
    for running in roles.iter().filter_map(|r| r.running.as_ref()) {
        if !running.killed {
            // It said `end`: it exits by itself, bounded; then SIGKILL as a last resort.
            for _ in 0..ENDING_MS_MAX {
                if process::waitid_nowait(running.started.pid, libc::WEXITED | libc::WNOHANG)? {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            process::kill(&running.started);
        }
        // Every running role was sent SIGKILL or has exited: this returns once it is dead.
        process::waitid_nowait(running.started.pid, libc::WEXITED)?;
    }
    let nemesis = PowerLoss { cut: style, seed };
    nemesis.after_crash(&Aftermath {
        work_dir: work,
        point: "",
    })?;
    let mut summary = crash_mode::last_cut(work, "chaos", "", "")?;
    if let Some(map) = summary.as_object_mut() {
        map.remove("point");
        map.remove("scenario");
        map.remove("step");
        let numbers: Vec<usize> = kills.map(|k| k + 1).collect();
        map.insert("kills".to_string(), serde_json::Value::from(numbers));
    }
    Ok(summary)
}

/// The role's events file holds its `end` event.
fn ended(dir: &Path, step: &str) -> bool {
    let text = std::fs::read_to_string(dir.join(crate::engine::load::roles::events_rel(step)))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<crate::events::Event>(l).ok())
        .any(|e| matches!(e, crate::events::Event::End { .. }))
}
