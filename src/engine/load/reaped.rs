//! A role process of a load run has ended: how it ended (by itself, by the engine's kill, by
//! its server's loss, hung), what `processes.json` records of it, and when to start it again.

use std::path::Path;
use std::time::Instant;

use crate::engine::evidence::Process;
use crate::engine::load::kills::NEMESIS;
use crate::engine::load::pipeline::{Outcome, Schedule, IDLE_RESTART};
use crate::engine::load::roles::{first_line, Role, Running};
use crate::engine::load::server_kills;
use crate::engine::nemesis::Nemesis;
use crate::engine::process::Ended;
use crate::fail;

/// A process of `role` ended: record it, count how it ended, and say when to start again.
pub fn reaped(
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
    let by_server =
        server_kills::ended_by_server(running.server_lost, killed_by_engine, timed_out, exit);
    let expected_exit = if killed_by_engine {
        NEMESIS.expected_exit()
    } else if by_server {
        server_kills::EXIT
    } else {
        fail::EXIT_OK
    };
    if by_server {
        outcome.server_exits += 1;
    }
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
        crash_mode: if killed_by_engine {
            Some(NEMESIS.name().to_string())
        } else {
            by_server.then(|| server_kills::CRASH_MODE.to_string())
        },
        stdout: running.stdout,
        stderr: running.stderr,
        wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
        max_rss_kb: ended.max_rss_kb,
        timed_out,
    });
    // Killed, or its server went away: start again at once. Ended by itself: after a pause.
    let again = killed_by_engine || by_server;
    role.restart = again;
    role.not_before = (!again).then(|| Instant::now() + IDLE_RESTART);
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
