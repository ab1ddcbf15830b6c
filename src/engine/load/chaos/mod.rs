//! `crashlab chaos LAB`: the lab's load profile under seeded random SIGKILLs, then the
//! end-to-end check in Jepsen's words. Which roles run and what "nothing lost, nothing
//! doubled" means are the lab's; the loop, the kill schedule, the progress and the report
//! are the same for every lab.

mod report;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::engine::crash_mode;
use crate::engine::driver::claim_out;
use crate::engine::load::pipeline::{self, Outcome, Schedule, ServerPlan, LOGS};
use crate::engine::load::profile::{LoadProfile, Verdict};
use crate::engine::load::progress::Progress;
use crate::engine::load::{kills, lifecycle, roles, server_kills};
use crate::engine::nemesis::{power_loss, POWER_CUTS_NAME};
use crate::engine::stack::Server;
use crate::engine::LabStack;
use crate::fail;
pub use report::{run_problems, Report};

pub mod audit;
pub mod merge;
mod options;
pub mod seeds;
mod validate;

pub use options::{replay_command, Options, CONSUMERS_MAX, KILLS_MAX, TIMEOUT_MS_MAX};
pub use validate::{bounds, range, validate};

/// How long a run with broker kills lets the queue's declaration reach the broker's disk.
const QUEUE_SETTLE: Duration = Duration::from_millis(2_000);

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
    lab: &'static LabStack,
    profile: &dyn LoadProfile,
    o: &Options,
    command: Vec<String>,
) -> Result<i32> {
    if o.runs > 1 || o.shard.is_some() {
        return seeds::run(lab, profile, o, command);
    }
    validate(lab, profile, o)?;
    if let Some(junit) = &o.junit {
        crate::junit::check_path(junit)?;
    }
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let exe = std::env::current_exe().context("locating the crashlab binary")?;
    let partial = match &o.out {
        Some(out) => Some(claim_out(out)?),
        None => None,
    };
    let temp = crate::owner::tempdir("chaos").context("creating the work directory")?;
    let root = partial.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let work = root.join("db");
    let setup = || -> Result<_> {
        fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
        fs::create_dir_all(root.join(LOGS)).context("creating the logs directory")?;
        // A lab on servers: the run's servers, its databases and queues, `stack.json` in
        // the work directory, before the profile creates its stores.
        crate::engine::fleet::check(lab, &o.stack)?;
        let session = crate::engine::fleet::Session::start(lab, &o.stack)?;
        let stackfile = match &session {
            Some(session) => Some(session.prepare(&crate::engine::fleet::tag("l", 0), &work)?),
            None => None,
        };
        profile.create(&work)?;
        Ok((session, stackfile))
    };
    let (session, stackfile) = match setup() {
        Ok(set) => set,
        Err(e) => {
            // No process ran: the output holds empty directories at most (a server that
            // could not be reached or started, a store not made). It goes, as a driver
            // run's does, so the same command can run again once the servers are up.
            if let Some(partial) = &partial {
                let _ = fs::remove_dir_all(partial);
            }
            return Err(e);
        }
    };
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
    let servers = ServerPlan {
        server: o.stack.server.filter(|_| o.server_kills > 0),
        at: server_kills::schedule(o.seed, profile.units(o.messages), o.server_kills),
    };
    if servers.server == Some(Server::Rabbitmq) {
        // A queue the profile just declared reaches the broker's disk a moment after the
        // declare-ok (RabbitMQ's Mnesia log): killed at once, the node would come back
        // without it, and lose messages it had confirmed. Not the design's doing.
        std::thread::sleep(QUEUE_SETTLE);
    }
    let started = Instant::now();
    let mut bar = Progress::new("chaos", profile.units(o.messages));
    let kills = o.kills;
    let outcome = pipeline::run_with(
        &exe,
        profile,
        &work,
        &root,
        &schedule,
        &servers,
        &mut |done, total, k| bar.update(done, total, &format!("kills {k}/{kills}")),
    );
    bar.finish();
    // SIGINT or SIGTERM: the pipeline killed and reaped its children; the work directory
    // goes with `temp`, what the run wrote goes here (exit 130).
    if let Some(signal) = crate::interrupt::caught() {
        drop(temp);
        return Err(crate::engine::process::interrupted(
            signal,
            partial.as_deref(),
        ));
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
    // A lab on servers: its final rows (and queue) into SQLite files beside, for the check
    // and the evidence, while the servers still run.
    profile.settle(&work)?;
    let mut read = |rel: &str| fs::read_to_string(root.join(rel)).ok();
    let (verdict, problems) = verdict(profile, &work, o, &outcome.processes, &mut read)?;
    let report = Report::new(lab, o, &outcome, &verdict, problems);
    if let (Some(session), Some(file)) = (&session, &stackfile) {
        session.release(file)?;
        // Where the servers were is no evidence (ports of this run, gone with it).
        fs::remove_file(work.join(crate::stackfile::NAME))
            .with_context(|| format!("removing {}", crate::stackfile::NAME))?;
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
    // The work directory goes before the report is printed: a closed stdout ends the
    // process at the print (`out::write_failed`), past every destructor.
    drop(temp);
    if let Some(junit) = &o.junit {
        report::junit(&report).write(junit)?;
    }
    if o.json {
        crate::say!("{}", serde_json::to_string(&report)?);
    } else if !o.quiet {
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
