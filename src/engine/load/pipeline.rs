//! The pipeline under load: a sender, one publisher and K consumers as real processes on the
//! three files at once, each restarted when it exits while work remains, with an optional
//! seeded kill schedule. `chaos` runs it with kills, `bench` without, to time end to end.
//!
//! A role that exits 0 had nothing left to do at that moment (a consumer found the queue
//! empty while the publisher was still running, say); it is started again after a short
//! pause while its upstream may still produce. A role the driver killed is started again at
//! once. The run ends at quiescence: every contract written, no Outbox row pending, no
//! delivery pending, no process running.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use rusqlite::OptionalExtension;
use serde::Serialize;

use crate::engine::evidence::Process;
use crate::engine::load::roles::{first_line, reap, role_argv, spawn, stop_all, Kind, Role};
use crate::fail;
use crate::labs::outbox_inbox::schema::{QUEUE, RECEIVER, SENDER};
use crate::rng::SplitMix64;
use crate::store::{self, Access, Db};

/// The three files, relative to the work directory (children run there).
pub const SENDER_DB: &str = "sender.db";
pub const QUEUE_DB: &str = "queue.db";
pub const RECEIVER_DB: &str = "receiver.db";

/// How often the driver looks at the processes and the files.
const POLL: Duration = Duration::from_millis(3);
/// Pause before starting again a role that exited 0 (work it could not take yet, such as
/// deliveries another consumer holds, is not asked for in a busy loop).
pub const IDLE_RESTART: Duration = Duration::from_millis(10);
/// A role that failed this many starts in a row (ended with an unexpected code, or could not
/// be spawned at all) stops the run: on a full disk every restart fails the same way, and
/// restarting it until the deadline would only fill the logs.
pub const FAILED_STARTS_MAX: u32 = 5;

#[derive(Debug, Clone)]
pub struct Plan {
    pub messages: usize,
    pub consumers: usize,
    pub batch: u32,
    pub seed: u64,
    pub lease_ms: i64,
    /// Kill moments, in progress units (contracts + sent + applied, 0 to 3N), ascending.
    pub kill_at: Vec<u64>,
    /// A child running longer than this is killed and recorded as timed out.
    pub process_timeout: Duration,
    /// The whole run, recovery included.
    pub deadline: Duration,
    /// The roles print their SQL trace (always, except in bench's measure of its cost).
    pub trace: bool,
}

/// The kill moments for `kills` kills over `messages` messages, from the seed alone. They lie
/// in the first 95% of the work, so each one finds a role still at work.
pub fn kill_schedule(seed: u64, messages: usize, kills: usize) -> (Vec<u64>, SplitMix64) {
    // A stream of its own, so the amounts (rng::amounts(seed, ..)) and the kills never overlap.
    let mut rng = SplitMix64::new(seed ^ 0x6b69_6c6c_7363_6864);
    let units = 3 * messages as u64;
    let high = (units * 95 / 100).max(1) - 1;
    let mut at: Vec<u64> = (0..kills).map(|_| rng.range(0, high)).collect();
    at.sort_unstable();
    (at, rng)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub contracts: u64,
    pub outbox_pending: u64,
    pub outbox_sent: u64,
    pub queue_pending: u64,
    pub applied: u64,
}

impl Progress {
    pub fn units(&self) -> u64 {
        self.contracts + self.outbox_sent + self.applied
    }
}

/// Read-only connections kept open for the run: cheap counts, estimated from rowids where
/// rows are only ever appended (the final check counts exactly).
struct Watcher {
    sender: Db,
    queue: Db,
    receiver: Db,
}

impl Watcher {
    fn open(work: &Path) -> Result<Watcher> {
        Ok(Watcher {
            sender: store::open_traced(&work.join(SENDER_DB), &SENDER, Access::Read, false)?,
            queue: store::open_traced(&work.join(QUEUE_DB), &QUEUE, Access::Read, false)?,
            receiver: store::open_traced(&work.join(RECEIVER_DB), &RECEIVER, Access::Read, false)?,
        })
    }

    fn read(&self) -> Result<Progress> {
        let one = |db: &Db, sql: &str| -> Result<u64> {
            let n: Option<i64> = db
                .conn
                .query_row(sql, [], |r| r.get(0))
                .optional()
                .map_err(|e| store::explain(e, db.db, db.db))?
                .flatten();
            Ok(n.unwrap_or(0).max(0) as u64)
        };
        let contracts = one(&self.sender, "SELECT max(rowid) FROM contracts")?;
        let outbox = one(&self.sender, "SELECT max(seq) FROM outbox")?;
        let outbox_pending = one(
            &self.sender,
            "SELECT count(*) FROM outbox WHERE status = 'pending'",
        )?;
        let queue_pending = one(
            &self.queue,
            "SELECT count(*) FROM deliveries WHERE status = 'pending'",
        )?;
        let applied = one(&self.receiver, "SELECT max(rowid) FROM inbox")?;
        Ok(Progress {
            contracts,
            outbox_pending,
            outbox_sent: outbox.saturating_sub(outbox_pending),
            queue_pending,
            applied,
        })
    }
}

/// Create the three files with their schemas, so every role and the watcher find them.
pub fn create_files(work: &Path) -> Result<()> {
    store::open_traced(&work.join(SENDER_DB), &SENDER, Access::WriteCreate, false)?;
    store::open_traced(&work.join(QUEUE_DB), &QUEUE, Access::WriteCreate, false)?;
    store::open_traced(
        &work.join(RECEIVER_DB),
        &RECEIVER,
        Access::WriteCreate,
        false,
    )?;
    Ok(())
}

/// One kill the driver made (a row of kills.json); read strictly, so a field chaos does not
/// write makes a malformed row (the audit relies on it).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    pub kill: usize,
    /// The scheduled moment, in progress units.
    pub at_units: u64,
    /// Progress when the signal was sent.
    pub progress_units: u64,
    pub role: String,
    pub step: String,
    pub since_start_ms: f64,
    /// False when the process had already ended by itself: the kill is made again.
    pub landed: bool,
}

/// What the run did, for the report and the evidence.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub wall_ms: f64,
    pub kills: Vec<Kill>,
    pub processes: Vec<Process>,
    /// Exits that are neither 0 nor the driver's kill: BUSY past the timeout (75) is
    /// restarted and counted; anything else fails the run.
    pub busy_exits: usize,
    pub unexpected_exits: usize,
    pub timed_out: usize,
    pub last_progress: Progress,
}

/// Where children's output goes: files under `<dir>/logs/` (recorded as `logs/<step>…`).
pub enum Logs {
    Dir(PathBuf),
}

pub const LOGS: &str = "logs";

/// A callback for progress: (units done, units total, kills done).
pub type OnProgress<'a> = &'a mut dyn FnMut(u64, u64, usize);

/// Run the pipeline in `work` (the three files must exist) until quiescence or the deadline.
pub fn run(
    exe: &Path,
    work: &Path,
    logs: &Logs,
    plan: &Plan,
    on_progress: OnProgress<'_>,
) -> Result<Outcome> {
    assert!(plan.messages >= 1 && plan.consumers >= 1);
    assert!(
        plan.kill_at.windows(2).all(|w| w[0] <= w[1]),
        "kill moments ascend"
    );
    let (_, mut pick) = kill_schedule(plan.seed, plan.messages, plan.kill_at.len());
    let mut roles = vec![
        Role::new(
            "sender".into(),
            Kind::Sender,
            role_argv(Kind::Sender, plan, 0),
        ),
        Role::new(
            "publisher".into(),
            Kind::Publisher,
            role_argv(Kind::Publisher, plan, 0),
        ),
    ];
    for c in 1..=plan.consumers {
        roles.push(Role::new(
            format!("consumer-c{c}"),
            Kind::Consumer,
            role_argv(Kind::Consumer, plan, c),
        ));
    }
    let watcher = Watcher::open(work)?;
    let total_units = 3 * plan.messages as u64;
    let started = Instant::now();
    let mut outcome = Outcome::default();
    let mut next_kill = 0usize;
    let mut retry_kills = 0usize;
    let polls_max = plan.deadline.as_millis() / POLL.as_millis().max(1) + 1;
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
            if let Some((exit, signal, max_rss_kb)) = reap(running.pid)? {
                let running = role.running.take().expect("checked above");
                let timed_out = running.killed
                    && running.kill.is_none()
                    && running.started.elapsed() >= plan.process_timeout;
                // A kill sent as the process was ending by itself did not land: do it again.
                let missed = running.kill.is_some() && signal != Some(libc::SIGKILL);
                if let (Some(k), true) = (running.kill, missed) {
                    outcome.kills[k].landed = false;
                    retry_kills += 1;
                }
                let killed_by_driver = running.kill.is_some() && !missed;
                let expected_exit = if killed_by_driver {
                    128 + libc::SIGKILL
                } else {
                    0
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
                let wall_ms = running.started.elapsed().as_secs_f64() * 1000.0;
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
                    crash_mode: killed_by_driver.then(|| "sigkill".to_string()),
                    stdout: running.stdout,
                    stderr: running.stderr,
                    wall_ms: (wall_ms * 1000.0).round() / 1000.0,
                    max_rss_kb,
                    timed_out,
                });
                // Killed: start again at once. Ended by itself: after a pause.
                role.restart = killed_by_driver;
                role.not_before = (!killed_by_driver).then(|| Instant::now() + IDLE_RESTART);
                if failed_start {
                    let said = first_line(logs, &outcome.processes[outcome.processes.len() - 1]);
                    let io = exit == fail::EXIT_IOERR;
                    // On a full disk the child's own stderr line may not have been written.
                    let what = match (io, said.is_empty()) {
                        (true, true) => {
                            " (an I/O error; its stderr log is empty: is the disk full?)"
                        }
                        (true, false) => " (an I/O error)",
                        _ => "",
                    };
                    role.failed(format!("exit {exit}{what}{said}"), io);
                }
            } else if !running.killed && running.started.elapsed() >= plan.process_timeout {
                // SAFETY: kill has no memory effects; the pid is not reaped yet, so still ours.
                unsafe { libc::kill(running.pid, libc::SIGKILL) };
                role.running.as_mut().expect("running").killed = true;
            }
        }
        // 2. Look at the files.
        let progress = watcher.read()?;
        outcome.last_progress = progress;
        let nothing_running = roles.iter().all(|r| r.running.is_none() && !r.restart);
        // (A kill still to be made again cannot find a process once all is quiet.)
        let sender_needed = progress.contracts < plan.messages as u64;
        if !sender_needed
            && progress.outbox_pending == 0
            && progress.queue_pending == 0
            && nothing_running
        {
            quiescent = true;
            break;
        }
        on_progress(progress.units(), total_units, outcome.kills.len());
        // 3. Kill at the scheduled moments: a seeded pick among the roles running now. When
        //    several moments have passed since the last poll, each takes another process.
        for _ in 0..roles.len() {
            let due = next_kill < plan.kill_at.len() && plan.kill_at[next_kill] <= progress.units();
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
            // SAFETY: kill has no memory effects; the pid is not reaped yet, so still ours.
            unsafe { libc::kill(running.pid, libc::SIGKILL) };
            running.killed = true;
            running.kill = Some(outcome.kills.len());
            let at_units = if due {
                next_kill += 1;
                plan.kill_at[next_kill - 1]
            } else {
                retry_kills -= 1;
                progress.units()
            };
            outcome.kills.push(Kill {
                kill: outcome.kills.len() + 1,
                at_units,
                progress_units: progress.units(),
                role: role.name.clone(),
                step: running.step.clone(),
                since_start_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
                landed: true,
            });
        }
        // 4. Start what is needed and not running.
        let now = Instant::now();
        for role in roles.iter_mut() {
            if role.running.is_some() || role.not_before.is_some_and(|t| now < t) {
                continue;
            }
            // A role starts when there is work for it now, and always after a kill.
            let needed = role.restart
                || match role.kind {
                    Kind::Sender => sender_needed,
                    Kind::Publisher => progress.outbox_pending > 0,
                    Kind::Consumer => progress.queue_pending > 0,
                };
            if needed {
                role.restart = false;
                match spawn(exe, work, logs, role) {
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
            plan.deadline.as_millis(),
            outcome.last_progress.units(),
            total_units
        )));
    }
    outcome.wall_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    Ok(outcome)
}
