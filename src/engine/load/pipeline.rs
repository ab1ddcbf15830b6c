//! A lab under load: its roles (from its load profile) as real processes on its files at
//! once, each restarted when it exits while work remains, with an optional seeded kill
//! schedule. `chaos` runs it with kills, `bench` without, to time end to end.
//!
//! A role that exits 0 had nothing left to do at that moment (a consumer found the queue
//! empty while the publisher was still running, say); it is started again after a short
//! pause while its upstream may still produce. A role the engine killed is started again at
//! once. The run ends at quiescence: the watcher sees no work for any role, and no process
//! is running.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::engine::evidence::Process;
use crate::engine::load::kills::{self, Kill};
use crate::engine::load::power_cut;
use crate::engine::load::server_kills;

use crate::engine::load::profile::{LoadProfile, Observed, Shape};
use crate::engine::load::reaped::reaped;
use crate::engine::load::roles::{spawn, stop_all, with_trace, Role};
use crate::engine::process;
use crate::fail;

/// How often the engine looks at the processes and the files.
const POLL: Duration = Duration::from_millis(3);
/// Pause before starting again a role that exited 0 (work it could not take yet, such as
/// deliveries another consumer holds, is not asked for in a busy loop).
pub const IDLE_RESTART: Duration = Duration::from_millis(10);
/// A role that failed this many starts in a row (ended with an unexpected code, or could not
/// be spawned at all) stops the run: on a full disk every restart fails the same way, and
/// restarting it until the deadline would only fill the logs.
pub const FAILED_STARTS_MAX: u32 = 5;
/// Children's logs and events, under the run directory.
pub const LOGS: &str = "logs";

#[derive(Debug, Clone)]
pub struct Schedule {
    pub shape: Shape,
    /// Kill moments, in progress units, ascending.
    pub kill_at: Vec<u64>,
    /// A child running longer than this is killed and recorded as timed out.
    pub process_timeout: Duration,
    /// The whole run, recovery included.
    pub deadline: Duration,
    /// The roles print their SQL trace (always, except in bench's measure of its cost).
    pub trace: bool,
    /// The roles write `logs/<step>.events.jsonl` (always in chaos).
    pub events: bool,
    /// Under power loss: every kill moment is a power cut of this style and seed.
    pub cut: Option<(crate::power::cut::Style, u64)>,
    /// Environment every role gets (the undo log, the store profile).
    pub env: Vec<(String, String)>,
}

/// What the run did, for the report and the evidence.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub wall_ms: f64,
    pub kills: Vec<Kill>,
    pub processes: Vec<Process>,
    /// Exits that are neither 0 nor the engine's kill: BUSY past the timeout (75) is
    /// restarted and counted; anything else fails the run.
    pub busy_exits: usize,
    pub unexpected_exits: usize,
    pub timed_out: usize,
    pub last_units: u64,
    /// Under power loss: what each cut took back (`power-cuts.jsonl`).
    pub cuts: Vec<serde_json::Value>,
    /// The servers chaos killed and restarted, and the exits (69) of the roles whose server
    /// went away under them (expected, restarted at once).
    pub server_kills: Vec<server_kills::ServerKill>,
    pub server_exits: usize,
}

/// Server kills during a run (a lab on servers the run started): which server, and when.
#[derive(Debug, Clone, Default)]
pub struct ServerPlan {
    pub server: Option<crate::engine::stack::Server>,
    /// Moments in progress units, ascending (`server_kills::schedule`).
    pub at: Vec<u64>,
}

/// A callback for progress: (units done, units total, kills done).
pub type OnProgress<'a> = &'a mut dyn FnMut(u64, u64, usize);

/// The roles of `schedule`, as `profile` gives them, with the run's trace setting.
pub fn roles(profile: &dyn LoadProfile, schedule: &Schedule) -> Vec<Role> {
    profile
        .roles(&schedule.shape)
        .into_iter()
        .map(|spec| {
            Role::new(
                spec.name,
                with_trace(&spec.argv, schedule.trace),
                spec.waits_on,
            )
        })
        .collect()
}

/// Run the lab's roles in `work` (its files must exist), logs under `<dir>/logs/`, until
/// quiescence or the deadline.
pub fn run(
    exe: &Path,
    profile: &dyn LoadProfile,
    work: &Path,
    dir: &Path,
    schedule: &Schedule,
    on_progress: OnProgress<'_>,
) -> Result<Outcome> {
    run_with(
        exe,
        profile,
        work,
        dir,
        schedule,
        &ServerPlan::default(),
        on_progress,
    )
}

/// As `run`, killing and restarting a server at the moments of `servers`.
pub fn run_with(
    exe: &Path,
    profile: &dyn LoadProfile,
    work: &Path,
    dir: &Path,
    schedule: &Schedule,
    servers: &ServerPlan,
    on_progress: OnProgress<'_>,
) -> Result<Outcome> {
    assert!(schedule.shape.messages >= 1 && schedule.shape.consumers >= 1);
    assert!(servers.at.is_empty() || servers.server.is_some());
    assert!(servers.at.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        schedule.kill_at.windows(2).all(|w| w[0] <= w[1]),
        "kill moments ascend"
    );
    let total_units = profile.units(schedule.shape.messages);
    let (_, mut pick) = kills::schedule(schedule.shape.seed, total_units, schedule.kill_at.len());
    let mut roles = roles(profile, schedule);
    let mut watcher = profile.watch(work, &schedule.shape)?;
    let started = Instant::now();
    let mut outcome = Outcome::default();
    let mut next_kill = 0usize;
    let mut next_server_kill = 0usize;
    let mut retry_kills = 0usize;
    let polls_max = schedule.deadline.as_millis() / POLL.as_millis().max(1) + 1;
    let mut quiescent = false;
    for _ in 0..polls_max {
        // The deadline in wall time too: a poll may take longer than POLL (a server restart
        // takes seconds), so the count of polls alone would not bound the run.
        if started.elapsed() >= schedule.deadline {
            break;
        }
        // 0. SIGINT or SIGTERM: every child killed and reaped, and the run unwinds.
        if let Err(interrupted) = crate::interrupt::check() {
            stop_all(&mut roles);
            return Err(interrupted);
        }
        // 1. Reap what ended; kill what hangs.
        for role in roles.iter_mut() {
            let Some(running) = role.running.as_ref() else {
                continue;
            };
            match process::poll_exit(&running.started)? {
                Some(ended) => {
                    let running = role.running.take().expect("checked above");
                    reaped(
                        role,
                        running,
                        ended,
                        schedule,
                        dir,
                        &mut outcome,
                        &mut retry_kills,
                    );
                }
                None if !running.killed
                    && running.started.started.elapsed() >= schedule.process_timeout =>
                {
                    process::kill(&running.started);
                    role.running.as_mut().expect("running").killed = true;
                }
                None => {}
            }
        }
        // 2. Look at the files.
        let observed: Observed = watcher.read()?;
        assert_eq!(
            observed.work.len(),
            work_entries(&roles),
            "one entry per waited-on stage"
        );
        outcome.last_units = observed.units;
        // (A kill still to be made again cannot find a process once all is quiet.)
        let nothing_running = roles.iter().all(|r| r.running.is_none() && !r.restart);
        if observed.idle() && nothing_running {
            quiescent = true;
            break;
        }
        on_progress(observed.units, total_units, outcome.kills.len());
        // 3. Kill at the scheduled moments: a seeded pick among the roles running now. When
        //    several moments have passed since the last poll, each takes another process.
        let kills_before = outcome.kills.len();
        for _ in 0..roles.len() {
            let due =
                next_kill < schedule.kill_at.len() && schedule.kill_at[next_kill] <= observed.units;
            if !due && retry_kills == 0 {
                break;
            }
            let alive: Vec<usize> = (0..roles.len())
                .filter(|&i| roles[i].running.as_ref().is_some_and(|r| !r.killed))
                .collect();
            if alive.is_empty() {
                break;
            }
            let index = alive[pick.range(0, alive.len() as u64 - 1) as usize];
            let role = &mut roles[index];
            let running = role.running.as_mut().expect("alive");
            process::kill(&running.started);
            running.killed = true;
            running.kill = Some(outcome.kills.len());
            let at_units = if due {
                next_kill += 1;
                schedule.kill_at[next_kill - 1]
            } else {
                retry_kills -= 1;
                observed.units
            };
            outcome.kills.push(Kill {
                kill: outcome.kills.len() + 1,
                at_units,
                progress_units: observed.units,
                role: role.name.clone(),
                step: running.step.clone(),
                since_start_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
                landed: true,
                cut: false,
            });
        }
        // 3b. Under power loss the moment is a cut: every role dies, the files lose what was
        //     never synced, and the watcher reads them afresh (its connections saw the old ones).
        if let (Some(cut), true) = (schedule.cut, outcome.kills.len() > kills_before) {
            power_cut::kill_the_rest(&mut roles, &mut outcome.kills, dir);
            drop(watcher);
            let summary = power_cut::cut(&roles, work, cut, kills_before..outcome.kills.len());
            let summary = match summary {
                Ok(s) => s,
                Err(e) => {
                    stop_all(&mut roles);
                    return Err(e);
                }
            };
            outcome.cuts.push(summary);
            watcher = profile.watch(work, &schedule.shape)?;
        }
        // 3c. A server kill due: SIGKILL the server and start it again (seconds), with the
        //     roles left running; the watcher's connections died with it and are made anew.
        if let Some(server) = servers.server {
            let due = servers.at.get(next_server_kill);
            if let Some(&at_units) = due.filter(|&&at| at <= observed.units) {
                next_server_kill += 1;
                drop(watcher);
                let made = server_kills::kill_now(
                    server,
                    (at_units, observed.units),
                    &mut roles,
                    started,
                    &mut outcome.server_kills,
                )
                .and_then(|()| profile.watch(work, &schedule.shape));
                watcher = match made {
                    Ok(w) => w,
                    Err(e) => {
                        stop_all(&mut roles);
                        return Err(e);
                    }
                };
                // The roles' exits during the restart are reaped next round; nothing is
                // started on what the watcher saw before the server went.
                continue;
            }
        }
        // 4. Start what is needed and not running: work for it now, and always after a kill.
        let now = Instant::now();
        for role in roles.iter_mut() {
            if role.running.is_some() || role.not_before.is_some_and(|t| now < t) {
                continue;
            }
            if !(role.restart || observed.work[role.waits_on]) {
                continue;
            }
            role.restart = false;
            match spawn(exe, work, dir, role, schedule.events, &schedule.env) {
                Ok(running) => role.running = Some(running),
                Err(e) if e.downcast_ref::<crate::interrupt::Interrupted>().is_some() => {
                    stop_all(&mut roles);
                    return Err(e);
                }
                Err(e) => {
                    let io = fail::exit_code(&e) == fail::EXIT_IOERR;
                    role.failed(format!("could not start: {}", fail::one_line(&e)), io);
                }
            }
        }
        if let Some(error) = roles.iter().find_map(Role::given_up) {
            stop_all(&mut roles);
            return Err(error);
        }
        std::thread::sleep(POLL);
    }
    if !quiescent {
        // Past the deadline: stop everything, reap it, and say so.
        stop_all(&mut roles);
        return Err(fail::failed(format!(
            "the pipeline did not reach quiescence within {} ms (last progress {} of {} units)",
            schedule.deadline.as_millis(),
            outcome.last_units,
            total_units
        )));
    }
    outcome.wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    Ok(outcome)
}

/// The number of entries the watcher must give: one past the highest a role waits on.
fn work_entries(roles: &[Role]) -> usize {
    roles.iter().map(|r| r.waits_on + 1).max().unwrap_or(0)
}
