//! The shared memory of a PostgreSQL cluster that a SIGKILL leaves behind: its SysV segment
//! (id in `postmaster.pid`) and its dynamic segments (`/dev/shm/PostgreSQL.<handle>`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::process::Proc;

/// The `/dev/shm/PostgreSQL.*` files mapped by any of `procs`.
pub fn dynamic_segments(procs: &BTreeSet<Proc>) -> BTreeSet<PathBuf> {
    let mut files = BTreeSet::new();
    for proc in procs {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{}/maps", proc.pid)) else {
            continue;
        };
        for line in maps.lines() {
            if let Some(at) = line.find("/dev/shm/PostgreSQL.") {
                let path = line[at..].trim_end_matches(" (deleted)");
                files.insert(PathBuf::from(path));
            }
        }
    }
    files
}

/// The SysV segment id a postmaster wrote into line 7 of its `postmaster.pid`
/// (`<key> <shmid>`).
pub fn sysv_segment(pid_file: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(pid_file).ok()?;
    let line = text.lines().nth(6)?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Remove the files and the segment; each only once no process maps it any more (the caller
/// waited for that). A file already gone is fine.
pub fn remove(files: &BTreeSet<PathBuf>, segment: Option<i32>) {
    for file in files {
        assert!(
            file.starts_with("/dev/shm"),
            "only PostgreSQL's own segments"
        );
        let _ = std::fs::remove_file(file);
    }
    if let Some(shmid) = segment {
        // SAFETY: IPC_STAT fills the struct we own; IPC_RMID takes no buffer.
        unsafe {
            let mut stat: libc::shmid_ds = std::mem::zeroed();
            if libc::shmctl(shmid, libc::IPC_STAT, &mut stat) == 0 && stat.shm_nattch == 0 {
                libc::shmctl(shmid, libc::IPC_RMID, std::ptr::null_mut());
            }
        }
    }
}
