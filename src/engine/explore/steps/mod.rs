//! The processes of one case: each a real child through `engine::process`, its stdout,
//! stderr and events (`CRASHLAB_EVENTS`) beside each other in the case's directory. The
//! case's crash is armed here, in the first scenario step of the point's role; a lab's plan
//! only names its steps.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

mod cut;
mod fork;
mod pause;
mod record;

use crate::engine::evidence::Process;
use crate::engine::process::{self, Ended, Started};
use crate::events::{self, Event};
use crate::fail;
pub use fork::{Forked, Prefix};
pub use record::{Crash, Env, PowerDesign, StepRecord};

/// A process started in the background and not stopped yet.
pub struct Background {
    name: String,
    argv: Vec<String>,
    armed: bool,
    /// None for a step a state of `--cut exhaustive` replays: the case ran it before its cut.
    started: Option<Started>,
}

/// Polls of a background process's events while it gets ready.
const READY_POLL: Duration = Duration::from_millis(2);

/// The processes of one case, and where their outputs go.
pub struct Steps<'a> {
    env: &'a Env<'a>,
    crash: Option<Crash>,
    armed: bool,
    /// The armed step, while it runs in the background.
    armed_running: Option<String>,
    recovering: bool,
    rel: String,
    case_dir: PathBuf,
    work: &'a Path,
    pub(super) processes: Vec<Process>,
    pub(super) records: Vec<StepRecord>,
    reaper: process::Reaper,
    /// Processes started so far: a background one is numbered when it starts and recorded
    /// when it ends.
    started: usize,
    /// The lab's last reading of the files, valid while no process runs (`memo`).
    memo: Option<Box<dyn Any + Send>>,
    /// Environment every process of the case gets (the undo log, the store profile).
    vars: Vec<(String, String)>,
    /// Background steps a power cut killed: they end by its SIGKILL.
    cut_killed: Vec<String>,
    /// Every background step started: its pid and name.
    background: Vec<(libc::pid_t, String)>,
    /// Under `--cut exhaustive`: the calls up to the cut, the fork made there, or the replay
    /// of a state (`fork`).
    fork: fork::Fork,
}

impl<'a> Steps<'a> {
    pub(super) fn new(
        env: &'a Env<'a>,
        crash: Option<Crash>,
        rel: String,
        work: &'a Path,
    ) -> Steps<'a> {
        Steps {
            env,
            crash,
            armed: false,
            armed_running: None,
            recovering: false,
            case_dir: env.dir.join(&rel),
            rel,
            work,
            processes: Vec::new(),
            records: Vec::new(),
            reaper: process::Reaper(Vec::new()),
            started: 0,
            memo: None,
            vars: crate::engine::crash_mode::role_env(env.nemesis, &env.profile, work),
            cut_killed: Vec::new(),
            background: Vec::new(),
            fork: match env.states {
                Some(_) => fork::Fork::logging(),
                None => fork::Fork::default(),
            },
        }
    }

    /// The lab's last reading of the files, if no process has started or ended since: a
    /// case reads its files once per decision, not once per question.
    pub fn memo<T: Any + Send>(&self) -> Option<&T> {
        self.memo.as_ref().and_then(|m| m.downcast_ref())
    }

    pub fn set_memo<T: Any + Send>(&mut self, value: T) {
        self.memo = Some(Box::new(value));
    }

    /// Every process that has ended, in the order they ended.
    pub fn records(&self) -> &[StepRecord] {
        &self.records
    }

    /// The scenario is over: no step is armed from now on.
    pub(super) fn recovering(&mut self) {
        self.recovering = true;
    }

    /// The case's work directory (the lab's files).
    pub fn work(&self) -> &Path {
        self.work
    }

    /// The step timeout: a lab bounds its own client waits inside it.
    pub fn timeout(&self) -> Duration {
        self.env.timeout
    }

    /// The role whose armed step crashed, once it has (a background step still running
    /// counts from its `crash` event).
    pub fn crashed_role(&self) -> Option<&'static str> {
        let crash = self.crash?;
        let ended = self.records.iter().any(|r| r.armed && r.crashed());
        (ended || self.running_crashed()).then(|| crash.role())
    }

    /// An armed step still running in the background has reported its crash.
    fn running_crashed(&self) -> bool {
        self.armed_running
            .as_ref()
            .is_some_and(|name| self.events_now(name).iter().any(is_crash))
    }

    /// The exit the last ended step had to end with, when the lab knows better than `0` (a
    /// client whose server crashed under it).
    pub fn expect_last(&mut self, exit: i32) {
        let last = self.processes.last_mut().expect("a step ended");
        if last.crash_point.is_none() {
            last.expected_exit = exit;
        }
    }

    fn name(&mut self, role: &str, what: &str) -> String {
        // A process is about to change the files: the last reading is stale.
        self.memo = None;
        self.started += 1;
        let prefix = if self.recovering { "recover-" } else { "" };
        let what = if what.is_empty() { role } else { what };
        let name = format!("{:02}-{prefix}{what}", self.started);
        self.fork.named(&name);
        name
    }

    /// The directory of a step's files: the case's, or after an exhaustive cut the state's.
    fn dir_of(&self, name: &str) -> PathBuf {
        self.case_dir.join(self.fork.rel_of(name))
    }

    /// Start a role of this case in the background, its files named `name`, under the
    /// reaper (killed should the case end early).
    fn spawn(&mut self, name: &str, argv: &[String]) -> Result<process::Started> {
        let dir = self.dir_of(name);
        let stdout = dir.join(format!("{name}.stdout.txt"));
        let started = process::spawn_env(
            self.env.exe,
            argv,
            self.work,
            &stdout,
            &dir.join(format!("{name}.stderr.txt")),
            Some(&process::events_file(&stdout)),
            &self.vars,
        )?;
        self.reaper.0.push(started.pid);
        self.background.push((started.pid, name.to_string()));
        Ok(started)
    }

    fn events_path(&self, name: &str) -> PathBuf {
        self.dir_of(name).join(format!("{name}.events.jsonl"))
    }

    /// The argv with the crash's flags when this is the step it is armed in.
    fn arm(&mut self, mut argv: Vec<String>) -> (Vec<String>, bool) {
        let Some(crash) = self.crash else {
            return (argv, false);
        };
        if self.recovering || self.armed || argv.first().map(String::as_str) != Some(crash.role()) {
            return (argv, false);
        }
        self.armed = true;
        argv.extend(
            self.env
                .nemesis
                .arm(&format!("{}@{}", crash.point, crash.hit)),
        );
        (argv, true)
    }

    /// Run a role in the foreground, bounded by the step timeout. `what` names its files
    /// (the role's name when empty).
    pub fn run(&mut self, what: &str, argv: Vec<String>) -> Result<()> {
        let role = argv.first().cloned().unwrap_or_default();
        let name = self.name(&role, what);
        let (argv, armed) = self.arm(argv);
        if self.replayed(&name)?.is_some() {
            return self.after_crash(armed);
        }
        let before = self.records.len();
        let ended = if armed && self.env.nemesis.needs_kill() {
            self.run_until_crash(&name, &argv)?
        } else {
            let dir = self.dir_of(&name);
            process::run_env(
                self.env.exe,
                &argv,
                self.work,
                (
                    &dir.join(format!("{name}.stdout.txt")),
                    &dir.join(format!("{name}.stderr.txt")),
                ),
                &self.vars,
                self.env.timeout,
            )?
        };
        self.record(name.clone(), argv, armed, ended);
        self.fork.call(&name, None, before..self.records.len());
        self.after_crash(armed)?;
        Ok(())
    }

    /// An armed step whose nemesis leaves the killing to the engine (a hang): killed as soon
    /// as it reports its crash, instead of at the step timeout.
    fn run_until_crash(&mut self, name: &str, argv: &[String]) -> Result<Ended> {
        let started = self.spawn(name, argv)?;
        let rounds = self.env.timeout.as_millis() / READY_POLL.as_millis() + 1;
        let mut ended = None;
        for _ in 0..rounds {
            crate::interrupt::check()?;
            if let Some(e) = process::poll_exit(&started)? {
                ended = Some(e);
                break;
            }
            if self.events_now(name).iter().any(is_crash) {
                break;
            }
            std::thread::sleep(READY_POLL);
        }
        let ended = match ended {
            Some(e) => e,
            // Crashed and hanging, or past the timeout: SIGKILL, reported as timed out.
            None => process::stop(&started, false, Duration::from_millis(1))?,
        };
        self.reaper.0.retain(|p| *p != started.pid);
        Ok(ended)
    }

    /// Start a role in the background and wait (bounded by the step timeout) for its `ready`
    /// event. When it ends or times out before that, it is recorded and None comes back.
    pub fn start(&mut self, what: &str, argv: Vec<String>) -> Result<Option<Background>> {
        let role = argv.first().cloned().unwrap_or_default();
        let name = self.name(&role, what);
        let (argv, armed) = self.arm(argv);
        if let Some(ready) = self.replayed(&name)? {
            return Ok(ready.then(|| self.ready(name, argv, armed, None)));
        }
        let before = self.records.len();
        let started = self.spawn(&name, &argv)?;
        let rounds = self.env.timeout.as_millis() / READY_POLL.as_millis() + 1;
        for _ in 0..rounds {
            // Interrupted: the reaper kills the child on the way out.
            crate::interrupt::check()?;
            if self
                .events_now(&name)
                .iter()
                .any(|e| matches!(e, Event::Ready { .. }))
            {
                self.fork.call(&name, Some(true), before..before);
                return Ok(Some(self.ready(name, argv, armed, Some(started))));
            }
            if let Some(ended) = process::poll_exit(&started)? {
                self.reaper.0.retain(|p| *p != started.pid);
                self.record(name.clone(), argv, armed, ended);
                self.fork
                    .call(&name, Some(false), before..self.records.len());
                return Ok(None);
            }
            std::thread::sleep(READY_POLL);
        }
        let mut ended = process::stop(&started, false, Duration::from_millis(1))?;
        ended.timed_out = true;
        self.reaper.0.retain(|p| *p != started.pid);
        self.record(name.clone(), argv, armed, ended);
        self.fork
            .call(&name, Some(false), before..self.records.len());
        Ok(None)
    }

    /// A background step that got ready: the armed one is watched for its crash.
    fn ready(
        &mut self,
        name: String,
        argv: Vec<String>,
        armed: bool,
        started: Option<Started>,
    ) -> Background {
        if armed {
            self.armed_running = Some(name.clone());
        }
        Background {
            name,
            argv,
            armed,
            started,
        }
    }

    /// Stop a background step: one that reported its crash is ending by itself (or hangs)
    /// and is only waited for; any other gets SIGTERM. Both bounded by the step timeout,
    /// then SIGKILL.
    pub fn stop(&mut self, background: Option<Background>) -> Result<()> {
        let Some(bg) = background else {
            return Ok(());
        };
        let Some(started) = &bg.started else {
            // A step the case ran before its cut: its record, as the case made it.
            self.stop_replayed(&bg.name, bg.armed)?;
            return self.after_crash(bg.armed);
        };
        let crashing = self.events_now(&bg.name).iter().any(is_crash);
        // A crashed step the nemesis leaves hanging is killed at once.
        let bound = match crashing && self.env.nemesis.needs_kill() {
            true => Duration::from_millis(1),
            false => self.env.timeout,
        };
        let ended = process::stop(started, !crashing, bound)?;
        self.reaper.0.retain(|p| *p != started.pid);
        let armed = bg.armed;
        let before = self.records.len();
        self.record(bg.name.clone(), bg.argv, bg.armed, ended);
        self.fork.call(&bg.name, None, before..self.records.len());
        self.after_crash(armed)?;
        Ok(())
    }

    /// The events a running process has written so far: complete lines only (one being
    /// written is read on the next poll).
    fn events_now(&self, name: &str) -> Vec<Event> {
        let text = std::fs::read_to_string(self.events_path(name)).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
        complete
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Record an ended process: its `processes.json` entry and its record.
    fn record(&mut self, name: String, argv: Vec<String>, armed: bool, ended: Ended) {
        self.memo = None;
        let (events, events_error) = match events::read(&self.events_path(&name)) {
            Ok(events) => (events, None),
            Err(e) => (Vec::new(), Some(format!("{e:#}"))),
        };
        let crash = self.crash.filter(|_| armed);
        if armed {
            self.armed_running = None;
        }
        let expected_exit = match crash {
            _ if self.cut_killed.contains(&name) => 128 + libc::SIGKILL,
            Some(c) if c.expect_reached => self.env.nemesis.expected_exit(),
            // Armed where the probe never saw the point: the phase says it was not reached.
            Some(_) => fail::EXIT_NOT_REACHED,
            None => fail::EXIT_OK,
        };
        let mut full = vec!["crashlab".to_string()];
        full.extend(argv.iter().cloned());
        self.processes.push(Process {
            scenario: self.rel.clone(),
            step: name.clone(),
            argv: full,
            expected_exit,
            exit: ended.exit,
            signal: ended.signal,
            crash_point: crash.map(|c| format!("{}@{}", c.point, c.hit)),
            crash_mode: crash.map(|_| self.env.nemesis.name().to_string()),
            stdout: format!("{}{name}.stdout.txt", self.fork.rel_of(&name)),
            stderr: format!("{}{name}.stderr.txt", self.fork.rel_of(&name)),
            wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
            max_rss_kb: ended.max_rss_kb,
            timed_out: ended.timed_out,
        });
        self.records.push(StepRecord {
            name,
            role: argv.first().cloned().unwrap_or_default(),
            armed,
            in_scenario: !self.recovering,
            ended,
            events,
            events_error,
        });
    }

    /// What an ended process wrote on stderr (empty when unreadable).
    pub(in crate::engine::explore) fn stderr_of(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir_of(name).join(format!("{name}.stderr.txt")))
            .unwrap_or_default()
    }

    /// Every background step was stopped.
    pub(super) fn all_stopped(&self) -> bool {
        self.reaper.0.is_empty()
    }
}

fn is_crash(e: &Event) -> bool {
    matches!(e, Event::Crash { .. })
}
