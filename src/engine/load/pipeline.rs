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
use crate::engine::load::kills::{self, Kill, NEMESIS};
use crate::engine::load::power_cut;
use crate::engine::load::profile::{LoadProfile, Observed, Shape};
use crate::engine::load::roles::{first_line, spawn, stop_all, with_trace, Role, Running};
use crate::engine::nemesis::Nemesis;
use crate::engine::process::{self, Ended};
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
    assert!(schedule.shape.messages >= 1 && schedule.shape.consumers >= 1);
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
    let mut retry_kills = 0usize;
    let polls_max = schedule.deadline.as_millis() / POLL.as_millis().max(1) + 1;
    let mut quiescent = false;
    for _ in 0..polls_max {
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

/// A process of `role` ended: record it, count how it ended, and say when to start again.
fn reaped(
    role: &mut Role,
    running: Running,
    ended: Ended,
    schedule: &Schedule,
    dir: &Path,
    outcome: &mut Outcome,
    retry_kills: &mut usize,
) {
    let (exit, signal) = (ended.exit, ended.signal);
    let timed_out = running.killed
        && running.kill.is_none()
        && running.started.started.elapsed() >= schedule.process_timeout;
    // A kill sent as the process was ending by itself did not land: do it again.
    let missed = running.kill.is_some() && signal != Some(libc::SIGKILL);
    if let (Some(k), true) = (running.kill, missed) {
        outcome.kills[k].landed = false;
        // A role killed for a cut that had ended by itself was not the moment's victim.
        if !outcome.kills[k].cut {
            *retry_kills += 1;
        }
    }
    let killed_by_engine = running.kill.is_some() && !missed;
    let expected_exit = if killed_by_engine {
        NEMESIS.expected_exit()
    } else {
        fail::EXIT_OK
    };
    if timed_out {
        outcome.timed_out += 1;
    } else if exit == fail::EXIT_LOCKED {
        outcome.busy_exits += 1;
    } else if exit != expected_exit {
        outcome.unexpected_exits += 1;
    }
    let failed_start = !timed_out && exit != fail::EXIT_LOCKED && exit != expected_exit;
    if !failed_start && exit != fail::EXIT_LOCKED {
        role.failed_starts = 0;
    }
    let mut argv = vec!["crashlab".to_string()];
    argv.extend(role.argv.iter().cloned());
    outcome.processes.push(Process {
        scenario: "chaos".into(),
        step: running.step,
        argv,
        expected_exit,
        exit,
        signal,
        crash_point: None,
        crash_mode: killed_by_engine.then(|| NEMESIS.name().to_string()),
        stdout: running.stdout,
        stderr: running.stderr,
        wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
        max_rss_kb: ended.max_rss_kb,
        timed_out,
    });
    // Killed: start again at once. Ended by itself: after a pause.
    role.restart = killed_by_engine;
    role.not_before = (!killed_by_engine).then(|| Instant::now() + IDLE_RESTART);
    if failed_start {
        let said = first_line(dir, &outcome.processes[outcome.processes.len() - 1]);
        let io = exit == fail::EXIT_IOERR;
        // On a full disk the child's own stderr line may not have been written.
        let what = match (io, said.is_empty()) {
            (true, true) => " (an I/O error; its stderr log is empty: is the disk full?)",
            (true, false) => " (an I/O error)",
            _ => "",
        };
        role.failed(format!("exit {exit}{what}{said}"), io);
    }
}
