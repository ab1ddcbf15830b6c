//! Chaos on a lab on servers: besides the roles it kills, it SIGKILLs a whole server (the
//! PostgreSQL cluster or the RabbitMQ node the run started) at moments drawn from the seed,
//! and starts it again on the same data before the run goes on (`fleet::kill_and_restart`).
//!
//! A role whose connection dies with the server exits 69 (`fail::EXIT_UNAVAILABLE`: the
//! roles say so for a server that went away); such an exit of a process that was running
//! when the server was killed is the kill's doing, not the role's, so chaos records it as
//! expected and starts the role again at once, as after its own kill. A role started after
//! the server is back has no such excuse: its 69 is an unexpected exit that fails the run.

use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::engine::load::roles::Role;

use crate::engine::stack::Server;
use crate::rng::SplitMix64;

/// Bound on `--server-kills`: each one costs a server restart (RabbitMQ: about 5 s).
pub const SERVER_KILLS_MAX: usize = 20;

/// What `processes.json` records as the crash mode of a process ended by a server's loss.
pub const CRASH_MODE: &str = crate::engine::fleet::kill::NAME;

/// The exit of a role whose server went away.
pub const EXIT: i32 = crate::fail::EXIT_UNAVAILABLE;

/// The moments of `kills` server kills over `units` units of work, from the seed alone, in
/// a stream of their own: the role kills' moments and victims (`kills::schedule`) are the
/// same with or without server kills. They lie between 10% and 80% of the work, so the run
/// is under way when the server goes and has work left for the roles that come back.
pub fn schedule(seed: u64, units: u64, kills: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ 0x7365_7276_6572_6b6c);
    let low = units / 10;
    let high = (units * 8 / 10).max(low + 1) - 1;
    let mut at: Vec<u64> = (0..kills).map(|_| rng.range(low, high)).collect();
    at.sort_unstable();
    at
}

/// One server kill chaos made (chaos.json `server_kills`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerKill {
    pub kill: usize,
    pub server: Server,
    /// The scheduled moment, in progress units.
    pub at_units: u64,
    /// Progress when the server was killed.
    pub progress_units: u64,
    pub since_start_ms: f64,
    /// From the SIGKILL to the server accepting connections again.
    pub restart_wall_ms: f64,
    /// The processes running when it was killed (a 69 of theirs is the kill's doing).
    pub running: Vec<String>,
}

/// The point name `servers.json` records for a chaos server kill.
pub fn point(at_units: u64) -> String {
    format!("chaos@{at_units}")
}

/// Whether a process's end was the server's loss: it was running when a server was killed,
/// the engine did not kill it, and it exited with the roles' code for a server gone.
pub fn ended_by_server(lost: bool, killed_by_engine: bool, timed_out: bool, exit: i32) -> bool {
    lost && !killed_by_engine && !timed_out && exit == EXIT
}

/// Kill `server` now and start it again (it is ready when this returns): every running
/// role is marked as having lost it, and the kill is recorded in `kills`. `moment`: the
/// scheduled moment and the progress now, in units.
pub fn kill_now(
    server: Server,
    moment: (u64, u64),
    roles: &mut [Role],
    started: Instant,
    kills: &mut Vec<ServerKill>,
) -> Result<()> {
    let (at_units, progress_units) = moment;
    let mut running = Vec::new();
    for role in roles.iter_mut() {
        if let Some(r) = role.running.as_mut() {
            r.server_lost = true;
            running.push(r.step.clone());
        }
    }
    let since_start_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
    let restart = Instant::now();
    crate::engine::fleet::kill_and_restart(server, &point(at_units))?;
    kills.push(ServerKill {
        kill: kills.len() + 1,
        server,
        at_units,
        progress_units,
        since_start_ms,
        restart_wall_ms: (restart.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
        running,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_the_seeds_own_and_inside_10_to_80_percent() {
        let a = schedule(3, 600, 4);
        assert_eq!(
            a,
            schedule(3, 600, 4),
            "the same seed gives the same moments"
        );
        assert_eq!(a.len(), 4);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(a.iter().all(|&u| (60..480).contains(&u)), "{a:?}");
        assert_ne!(schedule(4, 600, 4), a);
        // Another stream than the role kills': the same seed does not give their moments.
        let (roles, _) = crate::engine::load::kills::schedule(3, 600, 4);
        assert_ne!(roles, a);
        // A tiny run still has a valid range.
        assert!(schedule(1, 1, 2).iter().all(|&u| u == 0));
        assert!(schedule(1, 0, 1).iter().all(|&u| u == 0));
    }

    #[test]
    fn only_a_69_of_a_process_alive_at_the_kill_is_the_servers_doing() {
        assert!(ended_by_server(true, false, false, 69));
        assert!(!ended_by_server(false, false, false, 69), "started after");
        assert!(
            !ended_by_server(true, true, false, 137),
            "the engine's kill"
        );
        assert!(!ended_by_server(true, false, true, 69), "hung");
        assert!(!ended_by_server(true, false, false, 1), "another failure");
        assert_eq!(point(42), "chaos@42");
    }
}
