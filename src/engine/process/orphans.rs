//! What a user's role leaves behind. Its process group is killed when it ends, but a process
//! may leave the group (`setsid`, a shell with job control) and a killed process takes a
//! moment to die. This process becomes the reaper of its orphans, so whatever a role started
//! comes back here when its parent dies; `sweep` kills and reaps it (but what still belongs
//! to another run's role, under explore --jobs), and returns only once nothing of the group
//! is left, so the next step never meets a dying one's lock.

use std::time::{Duration, Instant};

use rustix::process::{
    getpid, kill_process, kill_process_group, test_kill_process_group, waitpid, Pid, Signal,
    WaitOptions,
};

/// How long a sweep sleeps between its first two looks, and at most.
const SLICE: Duration = Duration::from_millis(2);
const SLICE_MAX: Duration = Duration::from_millis(100);

/// From now on, a process this one started, directly or not, whose parent dies becomes this
/// process's child (PR_SET_CHILD_SUBREAPER), where `sweep` finds it.
pub fn adopt_orphans() -> std::io::Result<()> {
    // What was already a child before any role ran (a process started by whoever `exec`ed
    // this one) is not a role's: never swept.
    let mut passed = spared();
    if !passed.contains(&0) {
        passed.extend(
            children_of(getpid())
                .iter()
                .map(|p| p.as_raw_nonzero().get()),
        );
        // Not a pid: marks the list as taken, so a second call adds nothing.
        passed.push(0);
    }
    drop(passed);
    rustix::process::set_child_subreaper(Some(getpid()))?;
    Ok(())
}

/// Never sweep `pid`: a child this process started for itself (a server the roles use).
pub fn spare(pid: libc::pid_t) {
    assert!(pid > 0, "a pid");
    spared().push(pid);
}

/// The children no sweep kills: those from before the first role (`adopt_orphans`), and the
/// servers this process started for its roles (`spare`).
static SPARED: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn spared() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    SPARED.lock().unwrap_or_else(|p| p.into_inner())
}

/// The orphans a sweep could not end within its bound: later sweeps pass them by, blamed
/// once; an interrupted run's last sweep (`sweep_orphans`) still kills them.
static ABANDONED: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn abandoned() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    ABANDONED.lock().unwrap_or_else(|p| p.into_inner())
}

/// SIGKILL the process group `group` and every child of this process but those in `keep`
/// (a role still running in the background), reaping each, until none is left or `bound`
/// passes. True when none is left. Only for a caller whose other children are all roles'.
///
/// Roles of other scenario runs may run meanwhile, on other threads (explore --jobs): their
/// leaders, not reaped yet, are listed (`children`), and so is every process still in one of
/// their groups; neither is swept. The list is read once no spawn is under way (`sweeping`),
/// so a role being started is never taken for an orphan. An orphan that left its
/// group (`setsid`) cannot be told apart, and whichever sweep comes first kills it.
pub fn sweep(group: libc::pid_t, bound: Duration, keep: &[libc::pid_t]) -> bool {
    let Some(group) = Pid::from_raw(group) else {
        return true;
    };
    let deadline = Instant::now() + bound;
    let mut slice = SLICE;
    loop {
        let _ = kill_process_group(group, Signal::KILL);
        let mut passed = spared().clone();
        passed.extend(abandoned().iter());
        let children = {
            let _sweeping = super::sweeping();
            let live = super::children().clone();
            let others =
                |pid: libc::pid_t| pid != group.as_raw_nonzero().get() && live.contains(&pid);
            let children: Vec<Pid> = children_of(getpid())
                .into_iter()
                .filter(|c| {
                    let pid = c.as_raw_nonzero().get();
                    let in_other_group = rustix::process::getpgid(Some(*c))
                        .is_ok_and(|g| others(g.as_raw_nonzero().get()));
                    !keep.contains(&pid)
                        && !passed.contains(&pid)
                        && !others(pid)
                        && !in_other_group
                })
                .collect();
            kill_reap(&children);
            children
        };
        let group_gone = test_kill_process_group(group).is_err();
        if group_gone && children.is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            // Blamed on this step; a later step's sweep passes them by.
            abandoned().extend(children.iter().map(|c| c.as_raw_nonzero().get()));
            return false;
        }
        // Quick for the common case (a killed process dies within milliseconds), and no busy
        // loop for one that does not.
        std::thread::sleep(slice);
        slice = (slice * 2).min(SLICE_MAX);
    }
}

/// How long an interrupted run waits for its roles' orphans to die.
pub const INTERRUPTED_BOUND: Duration = Duration::from_secs(2);

/// After every role was killed (an interrupt): SIGKILL and reap each child this process
/// adopted, until none is left or `bound` passes. Only where `adopt_orphans` made this
/// process their reaper: elsewhere a child that is not a role's is a server's own, which its
/// owner stops.
pub fn sweep_orphans(bound: Duration) {
    if !spared().contains(&0) {
        return;
    }
    let deadline = Instant::now() + bound;
    let mut slice = SLICE;
    loop {
        let passed = spared().clone();
        let children: Vec<Pid> = children_of(getpid())
            .into_iter()
            .filter(|c| !passed.contains(&c.as_raw_nonzero().get()))
            .collect();
        if children.is_empty() || Instant::now() >= deadline {
            return;
        }
        kill_reap(&children);
        std::thread::sleep(slice);
        slice = (slice * 2).min(SLICE_MAX);
    }
}

/// SIGKILL each of `children`, and reap those already dead (a zombie still holds its
/// group's id; one still dying is reaped at a later look).
fn kill_reap(children: &[Pid]) {
    for child in children {
        let _ = kill_process(*child, Signal::KILL);
        let _ = waitpid(Some(*child), WaitOptions::NOHANG);
    }
}

/// The pids whose parent is `parent`, zombies included (`servers::process` reads /proc).
fn children_of(parent: Pid) -> Vec<Pid> {
    use crate::servers::process as procfs;
    let parent = parent.as_raw_nonzero().get();
    procfs::pids()
        .into_iter()
        .filter(|&pid| procfs::parent(pid) == Some(parent))
        .filter_map(Pid::from_raw)
        .collect()
}
