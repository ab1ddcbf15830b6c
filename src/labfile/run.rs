//! One scenario of a lab file run as processes: its stores made from their schemas, each
//! role step spawned (in its own process group) with its events file and, when armed, where
//! and how to crash; each check step and, at the end, every invariant read on the stores.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::lab::{DesignDef, InvariantDef, ScenarioDef, StepDef, StoreDef, UserLab};
use super::servers;
use super::stores::{attach, keep_stores, recover};
use crate::crash::Mode;
use crate::engine::jepsen::Anomaly;
use crate::engine::process;
use crate::events::Event;

/// A step's stdout or stderr larger than this is recorded as a flood.
pub const OUTPUT_BYTES_MAX: u64 = 64 * 1024 * 1024;
/// The rows of an invariant's query kept as examples.
const ROWS_KEPT: usize = 20;

/// Make the stores in `dir` ready to read: each PostgreSQL store read back into its file, and
/// each SQLite store's hot journal rolled back (`recover`). `quiet`: no role runs.
fn read_back(
    dir: &Path,
    stores: &[StoreDef],
    made: Option<&servers::Made>,
    quiet: bool,
) -> Result<()> {
    recover(dir, stores);
    match made {
        Some(made) => made.read_back(dir, stores, quiet),
        None => Ok(()),
    }
}

/// How one role step ended, from its exit and its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    pub name: String,
    pub role: String,
    /// The command line it ran (empty for a check step).
    #[serde(default)]
    pub argv: Vec<String>,
    pub exit: i32,
    pub timed_out: bool,
    pub wall_ms: f64,
    /// Every point announced, in order, with its hit.
    pub points: Vec<(String, u32)>,
    /// The crash it announced: (point, hit).
    pub crashed: Option<(String, u32)>,
    /// What it did that the protocol does not allow: a torn or unknown events line, a flood.
    pub faults: Vec<String>,
    /// For a check step: the value read and the one expected.
    pub check: Option<(String, String)>,
    /// Under chaos: SIGKILLed, with its process group, this long after it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_after_ms: Option<u64>,
    /// A background step its stop step ended while it still ran (its exit is the stop's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

impl StepRun {
    /// A step's record before anything is known of it (a background step's until its stop
    /// step ends it): the others start from it.
    fn new(name: &str, role: &str) -> StepRun {
        StepRun {
            name: name.to_string(),
            role: role.to_string(),
            argv: Vec::new(),
            exit: 0,
            timed_out: false,
            wall_ms: 0.0,
            points: Vec::new(),
            crashed: None,
            faults: Vec::new(),
            check: None,
            killed_after_ms: None,
            stopped: false,
        }
    }
}

/// What an invariant's query found after the scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Found {
    pub invariant: String,
    pub anomaly: Anomaly,
    /// Its query, as run.
    #[serde(default)]
    pub sql: String,
    pub rows: usize,
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRun {
    pub steps: Vec<StepRun>,
    pub found: Vec<Found>,
    /// A store could not be read back (named, with why).
    pub unreadable: Option<String>,
}

impl ScenarioRun {
    /// The anomaly kinds found, once each, in order.
    pub fn anomalies(&self) -> Vec<Anomaly> {
        let mut kinds: Vec<Anomaly> = Vec::new();
        for f in &self.found {
            if f.rows > 0 && !kinds.contains(&f.anomaly) {
                kinds.push(f.anomaly);
            }
        }
        kinds.sort_by_key(|a| a.name());
        kinds
    }
}

/// A step to crash: its index in the scenario, the point and hit.
pub type Arm = (usize, String, u32);

/// A step chaos SIGKILLs: its index in the scenario, and when after its start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kill {
    pub step: usize,
    pub after_ms: u64,
}

/// How a scenario runs: in which design, crashing how, each step bounded.
pub struct Setup<'a> {
    pub lab: &'a UserLab,
    pub design: &'a DesignDef,
    pub mode: Mode,
    pub timeout: Duration,
    /// The servers of the lab's stores, when any lives on one.
    pub servers: Option<&'a servers::Server>,
}

/// Run `scenario` in the new directory `dir`, crashing the steps `arms` names.
pub fn scenario(
    setup: &Setup<'_>,
    scenario: &ScenarioDef,
    dir: &Path,
    arms: &[Arm],
) -> Result<ScenarioRun> {
    scenario_killed(setup, scenario, dir, arms, &[])
}

/// `scenario`, SIGKILLing the steps `kills` names at their moments (chaos): a step that ends
/// first is not killed.
pub fn scenario_killed(
    setup: &Setup<'_>,
    scenario: &ScenarioDef,
    dir: &Path,
    arms: &[Arm],
    kills: &[Kill],
) -> Result<ScenarioRun> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::path::absolute(dir)?;
    let made = setup
        .servers
        .map(|s| s.make(&setup.lab.stores))
        .transpose()?;
    drop(attach(&dir, &setup.lab.stores, true)?);
    let places = Places::real(setup.lab, &dir, made.as_ref());
    let mut steps: Vec<StepRun> = Vec::new();
    // The background steps still running; an error on the way out kills them (Reaper).
    let mut running: Vec<Background> = Vec::new();
    let mut reaper = process::Reaper(Vec::new());
    for (i, step) in scenario.steps.iter().enumerate() {
        let arm = arms.iter().find(|a| a.0 == i).map(|a| (&a.1, a.2));
        let kill = kills.iter().find(|k| k.step == i).map(|k| k.after_ms);
        kill_due(&running);
        let record = match step {
            StepDef::Run {
                name,
                role,
                ready: Some(ready),
                ..
            } => {
                let bg = start_background(setup, &places, i, (name, role, ready), arm, kill)?;
                reaper.0.push(bg.launched.started.pid);
                running.push(bg);
                // Its record comes when its stop step ends it.
                StepRun::new(name, role)
            }
            StepDef::Run { name, role, .. } => {
                run_role(setup, &places, (i, name, role), arm, kill, &running)?
            }
            StepDef::Stop { name, step } => {
                let at = running.iter().position(|b| b.index == *step);
                let bg = running.remove(at.expect("lab check: a stop names a running step"));
                // Reaped by its stop from here on: its pid may soon be another run's child.
                reaper.0.retain(|p| *p != bg.launched.started.pid);
                let (record, own) = stop_background(setup, bg, name, &pids(&running))?;
                steps[*step] = record;
                own
            }
            StepDef::Check { name, check } => {
                // A store that cannot be read back fails this check, naming why; the run goes
                // on (the next read may succeed, and the invariants say what they find).
                let back = read_back(&dir, &setup.lab.stores, made.as_ref(), running.is_empty());
                keep_stores(&dir, &setup.lab.stores, &dir.join(stores_dir(i, name)))?;
                read_check(setup.lab, &dir, name, check, back)
            }
        };
        steps.push(record);
    }
    // lab check: every background step has its stop.
    assert!(
        running.is_empty(),
        "a background step outlived its scenario"
    );
    reaper.0.clear();
    let found = read_back(&dir, &setup.lab.stores, made.as_ref(), true)
        .and_then(|()| invariants(&dir, &setup.lab.stores, &setup.lab.invariants));
    let (found, unreadable) = match found {
        Ok(found) => (found, None),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    };
    Ok(ScenarioRun {
        steps,
        found,
        unreadable,
    })
}

/// What a command line's placeholders `{lab}`, `{run}`, `{crashlab}`, `{store.NAME}` and
/// `{store.NAME.queue}` stand for.
pub struct Places {
    pub lab: String,
    pub run: String,
    pub crashlab: String,
    /// What each `{store.KEY}` stands for: a SQLite store's path, a database's URL, a
    /// queue's broker URL (`NAME`) and name (`NAME.queue`).
    pub stores: Vec<(String, String)>,
}

impl Places {
    /// The paths of this machine: the lab file's directory, the scenario's directory, this
    /// program, and the run's stores.
    pub fn real(lab: &UserLab, dir: &Path, made: Option<&servers::Made>) -> Places {
        let run = dir.display().to_string();
        let mut stores = files(lab, &run);
        stores.extend(made.map(servers::Made::placeholders).unwrap_or_default());
        Places {
            lab: lab.dir.display().to_string(),
            run,
            crashlab: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "crashlab".into()),
            stores,
        }
    }

    /// The placeholders themselves: what evidence and `lab show` record, so that no path of
    /// the machine is written and the audit derives the same line from the lab file's copy.
    /// A SQLite store is `{run}/FILE`; a store on a server stays `{store.NAME}` (and
    /// `{store.NAME.queue}`).
    pub fn recorded(lab: &UserLab) -> Places {
        // Each `{store.KEY}` of a store on a server stands for itself.
        let stores = files(lab, "{run}");
        Places {
            lab: "{lab}".into(),
            run: "{run}".into(),
            crashlab: "{crashlab}".into(),
            stores,
        }
    }
}

/// Each SQLite store's path in the run's directory `run`, by name.
fn files(lab: &UserLab, run: &str) -> Vec<(String, String)> {
    lab.stores
        .iter()
        .filter(|s| !s.kind.on_server())
        .map(|s| (s.name.clone(), format!("{run}/{}", s.file)))
        .collect()
}

/// A role's command line with its placeholders filled in.
pub fn argv(lab: &UserLab, design: &DesignDef, role: &str, places: &Places) -> Vec<String> {
    let Some(role) = lab.role(role) else {
        return Vec::new();
    };
    let mut argv = Vec::new();
    for item in &role.command {
        if item == "{design.args}" {
            argv.extend(design.args_for(&role.name).iter().cloned());
            continue;
        }
        let mut text = item
            .replace("{lab}", &places.lab)
            .replace("{run}", &places.run)
            .replace("{design}", &design.name)
            .replace("{crashlab}", &places.crashlab);
        for (store, place) in &places.stores {
            text = text.replace(&format!("{{store.{store}}}"), place);
        }
        argv.push(text);
    }
    argv
}

/// A role step's process, started: its pid and clock, and its files.
struct Launched {
    started: process::Started,
    out: PathBuf,
    err: PathBuf,
}

/// Start a role step's command in its own process group, armed at `arm` when given.
fn launch(
    setup: &Setup<'_>,
    places: &Places,
    index: usize,
    name: &str,
    role: &str,
    arm: Option<(&String, u32)>,
) -> Result<Launched> {
    let dir = Path::new(&places.run);
    let argv = argv(setup.lab, setup.design, role, places);
    // Checked for every design chosen before the run starts (explore::designs).
    assert!(
        argv.first().is_some_and(|p| !p.is_empty()),
        "role {role} has a program"
    );
    let stem = stem(index, name);
    let (out, err) = (
        dir.join(format!("{stem}.stdout.txt")),
        dir.join(format!("{stem}.stderr.txt")),
    );
    let mut env = setup.design.env.clone();
    if let Some((point, hit)) = arm {
        env.extend(crate::point::arm_env(&format!("{point}@{hit}"), setup.mode));
    }
    let started = process::spawn_env(
        Path::new(&argv[0]),
        &argv[1..],
        dir,
        &out,
        &err,
        Some(&process::events_file(&out)),
        &env,
    )?;
    Ok(Launched { started, out, err })
}

fn run_role(
    setup: &Setup<'_>,
    places: &Places,
    (index, name, role): (usize, &str, &str),
    arm: Option<(&String, u32)>,
    kill_after_ms: Option<u64>,
    running: &[Background],
) -> Result<StepRun> {
    let launched = launch(setup, places, index, name, role, arm)?;
    let started = &launched.started;
    // The role's output is bounded while it runs, not only once it ends: a role that floods
    // is killed, with its group, a watch slice past the bound at most.
    let flooded = || flooded(&launched);
    // Which of the two stopped it: a flood is the role's fault, a due kill is chaos's.
    let (flood, killed) = (std::cell::Cell::new(false), std::cell::Cell::new(false));
    let watch = || {
        // A background step's kill lands while this step runs, within a watch slice of its
        // moment.
        kill_due(running);
        if flooded() {
            flood.set(true);
        } else if kill_after_ms
            .is_some_and(|ms| started.started.elapsed().as_millis() >= u128::from(ms))
        {
            killed.set(true);
        }
        flood.get() || killed.get()
    };
    let (ended, stopped) =
        process::wait_watched(started.pid, started.started, setup.timeout, &watch)?;
    let mut run = ended_role(
        setup,
        &launched,
        name,
        role,
        &ended,
        stopped && flood.get(),
        &pids(running),
    );
    // The kill came due, and the child died of it: one that exited just before the kill's
    // moment, and was only reaped after, ended first.
    let died_of_it = ended.signal == Some(libc::SIGKILL) && !ended.timed_out;
    run.killed_after_ms = kill_after_ms.filter(|_| killed.get() && !flood.get() && died_of_it);
    if run.killed_after_ms.is_some() {
        // A role killed from outside may be cut in the middle of an events line.
        run.faults.retain(|f| f != TORN);
    }
    Ok(run)
}

fn flooded(launched: &Launched) -> bool {
    [&launched.out, &launched.err]
        .iter()
        .any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > OUTPUT_BYTES_MAX))
}

/// A role step's record once its process ended (and was reaped): what it announced, its
/// faults; nothing it started is left (`keep`: the background steps still running).
fn ended_role(
    setup: &Setup<'_>,
    launched: &Launched,
    name: &str,
    role: &str,
    ended: &process::Ended,
    flood_killed: bool,
    keep: &[libc::pid_t],
) -> StepRun {
    // Nothing the role started outlives its step, in its group or out of it, and nothing of it
    // is still dying when the next step starts (a killed writer's lock, say).
    let swept = process::sweep(launched.started.pid, SWEEP_BOUND, keep);
    let mut run = StepRun {
        argv: self::argv(setup.lab, setup.design, role, &Places::recorded(setup.lab)),
        exit: ended.exit,
        timed_out: ended.timed_out,
        wall_ms: ended.wall_ms,
        ..StepRun::new(name, role)
    };
    read_events(&process::events_file(&launched.out), &mut run);
    if !swept {
        run.faults.push(format!(
            "processes it started were still alive {} ms after it ended",
            SWEEP_BOUND.as_millis()
        ));
    }
    for (what, file) in [("stdout", &launched.out), ("stderr", &launched.err)] {
        let size = std::fs::metadata(file).map_or(0, |m| m.len());
        if size > OUTPUT_BYTES_MAX {
            let killed = if flood_killed { "; killed there" } else { "" };
            run.faults.push(format!(
                "its {what} ran past {OUTPUT_BYTES_MAX} bytes ({size}){killed}"
            ));
        }
    }
    run
}

/// A role step started in the background: the scenario goes on once it announced `ready`
/// (bounded by the step timeout); a later stop step ends it.
struct Background {
    index: usize,
    name: String,
    role: String,
    launched: Launched,
    /// It ended before its stop (it crashed, failed, or never got ready): how.
    ended: Option<process::Ended>,
    /// What went wrong while it started.
    faults: Vec<String>,
    /// Under chaos: SIGKILL its group this long after it started, unless its stop comes
    /// first.
    kill_after_ms: Option<u64>,
    /// The kill was sent.
    killed: std::cell::Cell<bool>,
}

/// SIGKILL the group of each background step whose chaos kill is due. Its pid is unreaped
/// (only its stop step reaps it), so the group is still its own. Called between steps and
/// while a foreground step runs: a kill lands within a watch slice of its moment, or at the
/// first look after that (once its step got ready, or once another step's stop has waited
/// out its grace); the record keeps the planned moment, which the audit redraws.
fn kill_due(running: &[Background]) {
    for bg in running {
        let due = bg
            .kill_after_ms
            .is_some_and(|ms| bg.launched.started.started.elapsed().as_millis() >= u128::from(ms));
        if !due || bg.ended.is_some() || bg.killed.get() {
            continue;
        }
        // One that already ended (of its own SIGKILL, say) was not chaos's to kill: it stays
        // unkilled, and its stop judges its exit as any step's.
        let pid = bg.launched.started.pid;
        let ended = process::waitid_nowait(pid, libc::WEXITED | libc::WNOHANG).unwrap_or(true);
        if !ended {
            process::kill(&bg.launched.started);
            bg.killed.set(true);
        }
    }
}

/// The pids of the background steps still running: no sweep kills them.
fn pids(running: &[Background]) -> Vec<libc::pid_t> {
    running.iter().map(|b| b.launched.started.pid).collect()
}

fn start_background(
    setup: &Setup<'_>,
    places: &Places,
    index: usize,
    (name, role, ready): (&str, &str, &str),
    arm: Option<(&String, u32)>,
    kill_after_ms: Option<u64>,
) -> Result<Background> {
    let launched = launch(setup, places, index, name, role, arm)?;
    let events = process::events_file(&launched.out);
    let is_ready = |e: &crate::events::Event| matches!(e, crate::events::Event::Point { point, .. } if point == ready);
    let waited = process::await_event(&launched.started, &events, is_ready, setup.timeout)?;
    let (ended, faults) = match waited {
        Ok(()) => (None, Vec::new()),
        // It ended first: a crash armed before its ready point, or a failure; the stop says.
        Err(Some(ended)) => (Some(ended), Vec::new()),
        Err(None) => {
            let ended = process::stop(&launched.started, false, Duration::ZERO)?;
            let fault = format!(
                "never announced its ready point {ready} within {} ms; killed",
                setup.timeout.as_millis()
            );
            (Some(ended), vec![fault])
        }
    };
    Ok(Background {
        index,
        name: name.to_string(),
        role: role.to_string(),
        launched,
        ended,
        faults,
        kill_after_ms,
        killed: std::cell::Cell::new(false),
    })
}

/// How long a stopped background step may take to end on SIGTERM before its SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// End a background step: SIGTERM, then SIGKILL past STOP_GRACE; its record, `stopped` when
/// it was still running, and the stop step's own.
fn stop_background(
    setup: &Setup<'_>,
    bg: Background,
    name: &str,
    keep: &[libc::pid_t],
) -> Result<(StepRun, StepRun)> {
    let began = std::time::Instant::now();
    // A kill due before the stop came lands first: the stop finds it dying.
    kill_due(std::slice::from_ref(&bg));
    let pid = bg.launched.started.pid;
    // Still running when its stop came, or ended before (a crash, a failure): only the first
    // is `stopped`, its exit the stop's doing.
    let running = bg.ended.is_none()
        && !bg.killed.get()
        && !process::waitid_nowait(pid, libc::WEXITED | libc::WNOHANG).unwrap_or(true);
    let (ended, stopped) = match bg.ended {
        Some(ended) => (ended, false),
        None => (
            process::stop(&bg.launched.started, running, STOP_GRACE)?,
            running,
        ),
    };
    let mut run = ended_role(setup, &bg.launched, &bg.name, &bg.role, &ended, false, keep);
    run.stopped = stopped;
    // A SIGKILL past the grace is how a stop ends what ignores SIGTERM, not a timeout.
    run.timed_out &= !stopped;
    // Killed by chaos, and died of it (not ended first, then reaped after the kill).
    let died_of_it = !stopped && ended.signal == Some(libc::SIGKILL);
    run.killed_after_ms = bg.kill_after_ms.filter(|_| bg.killed.get() && died_of_it);
    if run.killed_after_ms.is_some() {
        run.faults.retain(|f| f != TORN);
    }
    run.faults.extend(bg.faults);
    let own = StepRun {
        wall_ms: began.elapsed().as_secs_f64() * 1000.0,
        ..StepRun::new(name, &bg.role)
    };
    Ok((run, own))
}

/// The points and crash a step announced; a line that is not an event of the protocol is a
/// fault of the role, recorded, never a panic.
fn read_events(path: &Path, run: &mut StepRun) {
    match crate::common::read_plain(path, crate::events::EVENTS_BYTES_MAX) {
        Ok(bytes) => parse_events(&String::from_utf8_lossy(&bytes), run),
        Err(e) => run.faults.push(format!("its events file: {e:#}")),
    }
}

/// How long what a role started may take to die once the step ended.
const SWEEP_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// The fault of an events file whose last line has no newline.
pub const TORN: &str = "its last events line is torn (no newline)";

/// The points, crash and faults of an events file's text, added to `run`.
pub fn parse_events(text: &str, run: &mut StepRun) {
    if !text.is_empty() && !text.ends_with('\n') {
        run.faults.push(TORN.into());
    }
    for (n, line) in text.split_terminator('\n').enumerate() {
        match serde_json::from_str::<Event>(line) {
            Ok(Event::Point { point, hit }) => run.points.push((point, hit)),
            Ok(Event::Crash { point, hit, .. }) => run.crashed = Some((point, hit)),
            Ok(_) => {}
            Err(_) if n + 1 == text.lines().count() && !text.ends_with('\n') => {}
            Err(e) => run.faults.push(format!("events line {}: {e}", n + 1)),
        }
    }
}

/// The files of step `index` in a scenario's directory: `NN-name`.
pub fn stem(index: usize, name: &str) -> String {
    format!("{:02}-{name}", index + 1)
}

/// Where a check step keeps the stores it read: `NN-name.stores`.
pub fn stores_dir(index: usize, name: &str) -> String {
    format!("{}.stores", stem(index, name))
}

/// A check step's record: its query's value on the stores in `dir`, or, where they could not
/// be read back (`back`), why (a value no check expects).
fn read_check(lab: &UserLab, dir: &Path, name: &str, check: &str, back: Result<()>) -> StepRun {
    let def = lab.check(check).expect("a validated step names a check");
    let got = match back {
        Ok(()) => check_value(dir, &lab.stores, &def.sql),
        Err(why) => clip(format!("error: {why:#}")),
    };
    StepRun {
        exit: i32::from(got != def.expect),
        check: Some((got, def.expect.clone())),
        ..StepRun::new(name, &format!("check {check}"))
    }
}

/// The most characters of one value a record keeps (a check's value, an example row): the
/// evidence of a run stays within what the audit reads, whatever a store holds.
const VALUE_CHARS_MAX: usize = 1000;

/// `text` cut to VALUE_CHARS_MAX characters, saying how long it was.
fn clip(text: String) -> String {
    match text.char_indices().nth(VALUE_CHARS_MAX) {
        None => text,
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
    }
}

/// A check's query on the stores in `dir`: the first column of its first row, as text.
pub fn check_value(dir: &Path, stores: &[StoreDef], sql: &str) -> String {
    let got = attach(dir, stores, false).and_then(|conn| {
        conn.query_row(sql, [], |row| row.get::<_, rusqlite::types::Value>(0))
            .map_err(anyhow::Error::from)
    });
    clip(match got {
        Ok(rusqlite::types::Value::Integer(i)) => i.to_string(),
        Ok(rusqlite::types::Value::Text(t)) => t,
        Ok(rusqlite::types::Value::Real(r)) => r.to_string(),
        Ok(rusqlite::types::Value::Null) => "NULL".into(),
        Ok(rusqlite::types::Value::Blob(_)) => "a blob".into(),
        Err(e) => format!("error: {e:#}"),
    })
}

/// Every invariant's query on the stores: its rows are its anomalies.
pub fn invariants(dir: &Path, stores: &[StoreDef], all: &[InvariantDef]) -> Result<Vec<Found>> {
    let conn = attach(dir, stores, false)?;
    let mut found = Vec::new();
    for inv in all {
        let mut stmt = conn
            .prepare(&inv.sql)
            .with_context(|| format!("invariant '{}'", inv.name))?;
        let columns = stmt.column_count();
        let mut rows = stmt.query([])?;
        let (mut count, mut examples) = (0, Vec::new());
        while let Some(row) = rows.next()? {
            count += 1;
            if examples.len() < ROWS_KEPT {
                let cells: Vec<String> = (0..columns)
                    .map(|c| match row.get::<_, rusqlite::types::Value>(c) {
                        Ok(rusqlite::types::Value::Integer(i)) => i.to_string(),
                        Ok(rusqlite::types::Value::Text(t)) => t,
                        Ok(other) => format!("{other:?}"),
                        Err(e) => e.to_string(),
                    })
                    .collect();
                examples.push(clip(cells.join("|")));
            }
        }
        found.push(Found {
            invariant: inv.name.clone(),
            anomaly: inv.anomaly,
            sql: inv.sql.clone(),
            rows: count,
            examples,
        });
    }
    Ok(found)
}
