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

/// Kill every role still running that the kill moment did not pick: one row each in
/// `kills`, marked as the cut's, at the same moment as the row before them.
pub fn kill_the_rest(roles: &mut [Role], kills: &mut Vec<Kill>) {
    let Some(moment) = kills.last().cloned() else {
        return;
    };
    for role in roles.iter_mut() {
        let Some(running) = role.running.as_mut() else {
            continue;
        };
        if running.killed {
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
        // Every running role was sent SIGKILL: this returns once it is dead.
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
