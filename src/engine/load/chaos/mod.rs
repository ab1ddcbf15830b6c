//! `crashlab chaos LAB`: the lab's load profile under seeded random SIGKILLs, then the
//! end-to-end check in Jepsen's words. Which roles run and what "nothing lost, nothing
//! doubled" means are the lab's; the loop, the kill schedule, the progress and the report
//! are the same for every lab.

mod report;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::engine::crash_mode::{self, CrashMode, PowerArgs};
use crate::engine::driver::claim_out;
use crate::engine::load::pipeline::{self, Outcome, Schedule, LOGS};
use crate::engine::load::profile::{LoadProfile, Shape, Verdict};
use crate::engine::load::progress::Progress;
use crate::engine::load::{kills, lifecycle, roles};
use crate::engine::nemesis::{power_loss, Nemesis, POWER_CUTS_NAME};
use crate::engine::Lab;
use crate::fail;
use crate::power::cut::Style;
pub use report::{run_problems, Report};

/// A chaos run's options, as `crashlab chaos` parses them and its audit reads them back.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Business items to carry end to end (lab 14: contracts, one message each)
    #[arg(long, default_value_t = 1_000)]
    pub messages: usize,
    /// Parallel workers of the last stage (lab 14: consumers)
    #[arg(long, default_value_t = 2)]
    pub consumers: usize,
    /// SIGKILLs to send, at moments and to processes drawn from the seed
    #[arg(long, default_value_t = 20)]
    pub kills: usize,
    /// Seed of the items' values, the kill moments and the victims: the same seed replays the run
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rows per transaction for the sender, the publisher and the consumers
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// Consumer lease: a claim whose holder is gone is taken over after this
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(i64).range(1..=86_400_000))]
    pub lease_ms: i64,
    /// A process running longer than this is killed and fails the run
    #[arg(long, default_value_t = 60_000)]
    pub process_timeout_ms: u64,
    /// The whole run, recovery included
    #[arg(long, default_value_t = 600_000)]
    pub timeout_ms: u64,
    /// Print the report as one JSON document on stdout (progress stays on stderr)
    #[arg(long)]
    pub json: bool,
    /// Evidence directory (must not exist): processes.json, chaos.json, logs/, db/
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// power-loss: each kill moment kills every role and cuts the files (what was never
    /// synced is lost, --cut, seeded by --seed); default: one role SIGKILLed, files kept
    #[arg(long, value_enum, value_name = "power-loss")]
    pub crash_mode: Option<CrashMode>,
    #[command(flatten)]
    pub power: PowerArgs,
    #[command(flatten)]
    pub stack: Box<crate::engine::stack::StackArgs>,
}

impl Options {
    /// The cut every kill moment makes, under power loss.
    pub fn cut(&self) -> Option<(Style, u64)> {
        (self.crash_mode == Some(CrashMode::PowerLoss))
            .then(|| (self.power.cut.unwrap_or(Style::Drop), self.seed))
    }

    /// What `processes.json` records as the run's crash mode.
    pub fn crash_mode_name(&self) -> &'static str {
        match self.crash_mode {
            Some(mode) => mode.name(),
            None => kills::NEMESIS.name(),
        }
    }

    pub fn shape(&self) -> Shape {
        Shape {
            messages: self.messages,
            consumers: self.consumers,
            batch: self.batch,
            seed: self.seed,
            lease_ms: self.lease_ms,
        }
    }
}

pub const CONSUMERS_MAX: usize = 16;
pub const KILLS_MAX: usize = 100_000;
pub const TIMEOUT_MS_MAX: u64 = 3_600_000;

/// The command that replays this run: same seed, same schedule, same values.
pub fn replay_command(lab: &Lab, o: &Options) -> String {
    let mut command = format!(
        "crashlab chaos {} --messages {} --consumers {} --kills {} --seed {} --batch {} --lease-ms {}",
        lab.id, o.messages, o.consumers, o.kills, o.seed, o.batch, o.lease_ms
    );
    if let Some((style, _)) = o.cut() {
        command.push_str(&format!(" --crash-mode power-loss --cut {}", style.name()));
    }
    if let Some(name) = &o.power.store_profile {
        command.push_str(&format!(" --store-profile {name}"));
    }
    command
}

/// Out of range: one line, exit 2.
pub fn range(what: &str, v: u64, low: u64, high: u64) -> Result<()> {
    if v < low || v > high {
        return Err(fail::usage(format!(
            "{what} {v} is out of range ({low} to {high})"
        )));
    }
    Ok(())
}

pub fn validate(profile: &dyn LoadProfile, o: &Options) -> Result<()> {
    super::validate_shape(profile, o.messages, o.consumers)?;
    range("--kills", o.kills as u64, 0, KILLS_MAX as u64)?;
    range("--timeout-ms", o.timeout_ms, 1, TIMEOUT_MS_MAX)?;
    range(
        "--process-timeout-ms",
        o.process_timeout_ms,
        1,
        TIMEOUT_MS_MAX,
    )?;
    match o.crash_mode {
        None | Some(CrashMode::PowerLoss) => {}
        Some(other) => {
            return Err(fail::usage(format!(
                "chaos --crash-mode {}: chaos kills from outside with SIGKILL, or cuts the power (power-loss); the process crashes are the driver's and explore's",
                other.name()
            )))
        }
    }
    if o.stack.server.is_some() {
        return Err(fail::usage(
            "chaos --server: chaos kills roles from outside; server kills are the driver's and explore's (--crash-mode server-kill)",
        ));
    }
    if o.power.cut.is_some() && o.crash_mode.is_none() {
        return Err(fail::usage(
            "--cut is for --crash-mode power-loss only (chaos's default is a SIGKILL)",
        ));
    }
    let store = o.power.profile()?;
    // Chaos watches the files while the roles run, holding them open in WAL mode: a role
    // cannot leave WAL then (it needs the file alone), and would wait on its lock forever.
    if store.journal_mode != "wal" {
        return Err(fail::usage(format!(
            "--store-profile {}: chaos keeps the databases open in WAL mode while its roles run, so a rollback journal cannot be pinned; run it under driver or explore",
            store.name
        )));
    }
    Ok(())
}

/// Every process's events, judged one by one: all the events (for the lab's check) and its
/// problems as (step, line). `text` reads a file of the run by its relative path.
pub fn gather(
    processes: &[crate::engine::evidence::Process],
    text: &mut dyn FnMut(&str) -> Option<String>,
) -> (Vec<crate::events::Event>, Vec<(String, String)>) {
    let mut all = Vec::new();
    let mut problems = Vec::new();
    for record in processes {
        let file = text(&roles::events_rel(&record.step));
        let (events, said) = lifecycle::read(record, file.as_deref());
        all.extend(events);
        problems.extend(said.into_iter().map(|p| (record.step.clone(), p)));
    }
    (all, problems)
}

/// The verdict of a finished run: the lab's check on its files and events, and the problems
/// of the run itself (unexpected exits, hung processes, events that tell another story).
pub fn verdict(
    profile: &dyn LoadProfile,
    work: &Path,
    o: &Options,
    processes: &[crate::engine::evidence::Process],
    text: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<(Verdict, Vec<String>)> {
    let (events, event_problems) = gather(processes, text);
    let verdict = profile.check(work, &o.shape(), &events)?;
    let mut problems = verdict.problems.clone();
    problems.extend(
        event_problems
            .iter()
            .map(|(step, p)| format!("{step}: {p}")),
    );
    Ok((verdict, problems))
}

pub fn run(
    lab: &'static Lab,
    profile: &dyn LoadProfile,
    o: &Options,
    command: Vec<String>,
) -> Result<i32> {
    validate(profile, o)?;
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let partial = match &o.out {
        Some(out) => Some(claim_out(out)?),
        None => None,
    };
    let temp = tempfile::Builder::new()
        .prefix("crashlab-chaos-")
        .tempdir()
        .context("creating the work directory")?;
    let root = partial.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let work = root.join("db");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    fs::create_dir_all(root.join(LOGS)).context("creating the logs directory")?;
    // A lab on servers: the run's servers, its databases and queues, `stack.json` in the
    // work directory, before the profile creates its stores.
    crate::engine::fleet::check(lab, &o.stack)?;
    let session = crate::engine::fleet::Session::start(lab, &o.stack)?;
    let stackfile = match &session {
        Some(session) => Some(session.prepare(&crate::engine::fleet::tag("l", 0), &work)?),
        None => None,
    };
    profile.create(&work)?;
    let (kill_at, _) = kills::schedule(o.seed, profile.units(o.messages), o.kills);
    let schedule = Schedule {
        shape: o.shape(),
        kill_at,
        process_timeout: Duration::from_millis(o.process_timeout_ms),
        deadline: Duration::from_millis(o.timeout_ms),
        trace: true,
        events: true,
        cut: o.cut(),
        env: crash_mode::role_env(
            match o.cut() {
                Some((style, seed)) => power_loss(style, seed),
                None => &kills::NEMESIS,
            },
            &o.power.profile()?,
            &work,
        ),
    };
    let started = Instant::now();
    let mut bar = Progress::new("chaos", profile.units(o.messages));
    let kills = o.kills;
    let outcome = pipeline::run(
        &exe,
        profile,
        &work,
        &root,
        &schedule,
        &mut |done, total, k| bar.update(done, total, &format!("kills {k}/{kills}")),
    );
    bar.finish();
    // SIGINT or SIGTERM: the pipeline killed and reaped its children; the work directory
    // goes with `temp`, what the run wrote goes here (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        drop(temp);
        return Err(crate::interrupt::finish(signal, partial.as_deref()));
    }
    let outcome: Outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            let at = partial.as_ref().map_or(String::new(), |p| {
                format!("; what it wrote is in {}", p.display())
            });
            return Err(e.context(format!("chaos run (seed {}){at}", o.seed)));
        }
    };
    // The undo log and its stash are no evidence (they hold the old bytes of every write,
    // and the cut's summaries say what it did); every process has ended.
    remove_power_files(&work)?;
    let mut read = |rel: &str| fs::read_to_string(root.join(rel)).ok();
    let (verdict, problems) = verdict(profile, &work, o, &outcome.processes, &mut read)?;
    let report = Report::new(lab, o, &outcome, &verdict, problems);
    if let (Some(session), Some(file)) = (&session, &stackfile) {
        session.release(file)?;
        if let Some(partial) = &partial {
            session.write(partial)?;
        }
    }
    if let Some(session) = session {
        session.finish()?;
    }
    if let Some(partial) = &partial {
        report::write_evidence(
            partial, lab, profile, o, &command, &outcome, &report, started,
        )?;
        let out = o.out.as_ref().expect("partial implies out");
        crate::engine::evidence::publish(partial, out)?;
    }
    if o.json {
        crate::say!("{}", serde_json::to_string(&report)?);
    } else {
        report::print(lab, &report, &profile.summary(&report.check, &o.shape()));
    }
    Ok(if report.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

/// Remove what the shim VFS and the cut leave in the work directory: the undo log, its
/// stash of unlinked files, and the cut's own record (the run keeps the summaries itself).
fn remove_power_files(work: &Path) -> Result<()> {
    for name in [crate::power::LOG_NAME, POWER_CUTS_NAME] {
        match fs::remove_file(work.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {name}")),
        }
    }
    match fs::remove_dir_all(work.join(crate::power::undo::STASH_DIR)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).context("removing the undo log's stash"),
    }
}
