//! The processes of a server: spawned so that none outlives crashlab, killed as a whole tree,
//! and waited for until every one of them is gone.
//!
//! A server is more than the process crashlab starts: the postmaster forks a backend per
//! connection and its helpers, an Erlang node forks `erl_child_setup`, which forks
//! `inet_gethost` and a disk monitor shell. Only the first is our child; the rest are found
//! through `/proc` (parent pids) while the first is alive, and waited for by pid and start
//! time (so a reused pid is never mistaken for one of them).

use std::collections::BTreeSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// How long a killed tree may take to disappear. SIGKILL cannot be caught; what remains is
/// the kernel tearing down address spaces (a postmaster's shared memory) and the reaping.
pub const GONE_WAIT_MS: u64 = 10_000;

/// One process of a server tree: pid and its start time in clock ticks since boot
/// (`/proc/PID/stat` field 22), which together name it even after the pid is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proc {
    pub pid: i32,
    pub start_ticks: u64,
}

/// The most /proc entries one look at the process table reads.
const PROC_ENTRIES_MAX: usize = 100_000;

/// Every pid in /proc now (bounded).
pub fn pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .take(PROC_ENTRIES_MAX)
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// State, parent pid and start time of a process, zombies included; None when it is gone.
fn stat_of(pid: i32) -> Option<(String, i32, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A /proc/PID/stat line's state, parent pid and start time.
fn parse_stat(text: &str) -> Option<(String, i32, u64)> {
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state), so field N is rest[N - 3].
    let state = fields.first()?.to_string();
    let ppid = fields.get(1)?.parse().ok()?;
    let start_ticks = fields.get(19)?.parse().ok()?;
    Some((state, ppid, start_ticks))
}

/// The parent pid of a process, a zombie's too (a zombie is still to be reaped).
pub fn parent(pid: i32) -> Option<i32> {
    stat_of(pid).map(|(_, ppid, _)| ppid)
}

/// Parent pid and start time of a live (not zombie) process; None when it is gone or a zombie.
fn stat(pid: i32) -> Option<(i32, u64)> {
    let (state, ppid, start_ticks) = stat_of(pid)?;
    if state == "Z" || state == "X" {
        return None;
    }
    Some((ppid, start_ticks))
}

/// The start time of a live process (`/proc/PID/stat` field 22).
pub fn start_ticks(pid: i32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// Is `proc` still running (the same process, not a zombie)?
pub fn alive(proc: Proc) -> bool {
    stat(proc.pid).is_some_and(|(_, start)| start == proc.start_ticks)
}

/// `root` and every live descendant of it, found through the parent pids in `/proc`.
pub fn tree(root: i32) -> BTreeSet<Proc> {
    let table: Vec<(i32, i32, u64)> = pids()
        .into_iter()
        .filter_map(|pid| stat(pid).map(|(ppid, start)| (pid, ppid, start)))
        .collect();
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    if let Some((_, start)) = stat(root) {
        found.insert(Proc {
            pid: root,
            start_ticks: start,
        });
    }
    // A tree deeper than the process table is impossible: the bound is the table's size.
    let mut steps = 0;
    while let Some(parent) = frontier.pop() {
        steps += 1;
        assert!(steps <= table.len() + 1, "a process tree is finite");
        for &(pid, ppid, start) in &table {
            if ppid == parent
                && found.insert(Proc {
                    pid,
                    start_ticks: start,
                })
            {
                frontier.push(pid);
            }
        }
    }
    found
}

/// SIGKILL our child `child` and every descendant, reap the child, and wait (bounded) until
/// every process of the tree is gone. The descendants are listed before the first signal:
/// once the root is dead they belong to init and no longer look like ours.
pub fn kill_tree(child: &mut Child) -> Result<()> {
    let root = child.id() as i32;
    let mut procs = tree(root);
    // Two passes: a process forked between the listing and the kill is caught by the second.
    for _ in 0..2 {
        for proc in &procs {
            if alive(*proc) {
                // SAFETY: kill has no memory effects; start time checked just above.
                unsafe { libc::kill(proc.pid, libc::SIGKILL) };
            }
        }
        procs.extend(tree(root));
    }
    // Reaping our own child: SIGKILL arrives, so wait returns promptly.
    child.wait().context("reaping a killed server process")?;
    wait_gone(&procs, GONE_WAIT_MS)
}

/// Wait until none of `procs` runs, polling `/proc`; an error naming them after `wait_ms`.
pub fn wait_gone(procs: &BTreeSet<Proc>, wait_ms: u64) -> Result<()> {
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        let left: Vec<i32> = procs.iter().filter(|p| alive(**p)).map(|p| p.pid).collect();
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(crate::fail::failed(format!(
                "server processes {left:?} still run {wait_ms} ms after SIGKILL"
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Arm `signal`-on-parent-death in the child, after std changed its user (a change of user
/// clears the setting) and right before exec, which keeps it. The child's own children
/// (backends, `erl_child_setup`) do not inherit it: PostgreSQL arms its own for them, and
/// Erlang's helpers exit when the node's pipe closes.
pub fn die_with_parent(command: &mut Command, signal: rustix::process::Signal) {
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal)).map_err(io::Error::from)
        });
    }
    // Its own process group: a Ctrl-C on the terminal reaches crashlab, which stops the
    // servers in order, instead of reaching the servers half-way through a step.
    command.process_group(0);
}

/// `sh`'s part of `group_dies_with_parent`: on SIGTERM, SIGKILL the whole process group (the
/// shell too); else run the program and exit with its status.
const GROUP_GUARD: &str = "trap 'kill -KILL 0' TERM; \"$@\" & wait $!";

/// A command for `program` whose whole process group dies with crashlab. PR_SET_PDEATHSIG
/// reaches only the process it is set on, never the children that one forks (initdb's
/// `postgres --boot` and `--single`), so `program` runs under `sh`, the leader of a group of
/// its own, which gets SIGTERM when crashlab ends, however it ends, and then SIGKILLs the
/// group. Arguments added to the command are `program`'s.
pub fn group_dies_with_parent(program: &std::path::Path) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", GROUP_GUARD, "sh"]).arg(program);
    die_with_parent(&mut command, rustix::process::Signal::TERM);
    command
}

/// The thread every server process is spawned from. PR_SET_PDEATHSIG fires when the *thread*
/// that forked the child ends, not the process: a server restarted from a short-lived worker
/// thread would die with it. One thread that lives as long as the `Servers` spawns them all.
pub struct Launcher {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Request = (Command, mpsc::Sender<io::Result<Child>>);

impl Launcher {
    pub fn new() -> Result<Launcher> {
        let (requests, receive) = mpsc::channel::<Request>();
        let thread = std::thread::Builder::new()
            .name("crashlab-servers".into())
            .spawn(move || {
                for (mut command, answer) in receive {
                    let _ = answer.send(command.spawn());
                }
            })
            .context("starting the thread that spawns servers")?;
        Ok(Launcher {
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// Spawn `command` from the launcher's thread.
    pub fn spawn(&self, command: Command) -> io::Result<Child> {
        let (answer, result) = mpsc::channel();
        let requests = self.requests.as_ref().expect("the launcher runs");
        requests
            .send((command, answer))
            .map_err(|_| io::Error::other("the server launcher thread ended"))?;
        result
            .recv()
            .map_err(|_| io::Error::other("the server launcher thread ended"))?
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop; the servers are killed before this.
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_killed_whole_and_waited_for() {
        let launcher = Launcher::new().unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & sleep 30 & wait"]);
        die_with_parent(&mut command, rustix::process::Signal::KILL);
        let mut child = launcher.spawn(command).unwrap();
        // The shell forks its two sleeps soon after it starts: wait (bounded) to see them.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut procs = tree(child.id() as i32);
        while procs.len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            procs = tree(child.id() as i32);
        }
        assert_eq!(procs.len(), 3, "the shell and its two sleeps: {procs:?}");
        kill_tree(&mut child).unwrap();
        assert!(procs.iter().all(|p| !alive(*p)), "every process is gone");
    }

    #[test]
    fn a_pid_with_another_start_time_is_not_alive() {
        let me = std::process::id() as i32;
        let (_, start) = stat(me).unwrap();
        assert!(alive(Proc {
            pid: me,
            start_ticks: start
        }));
        assert!(!alive(Proc {
            pid: me,
            start_ticks: start + 1
        }));
    }

    #[test]
    fn the_parent_is_read_after_a_command_with_spaces_and_parentheses() {
        let stat = "4242 (a b) (c)) Z 17 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 99";
        assert_eq!(parse_stat(stat), Some(("Z".to_string(), 17, 99)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
