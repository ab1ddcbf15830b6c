//! A case under power loss: after the armed step ended crashed, every other process is
//! killed and the nemesis cuts the work directory before any other step runs (under
//! `--cut exhaustive`, the case forks there: `fork`).

use anyhow::Result;

use super::Steps;
use crate::engine::process;

impl Steps<'_> {
    /// After the armed step ended crashed, the nemesis acts on the files (a power cut takes
    /// back what was never synced) before any other step runs. A cut acts on files nobody
    /// holds open, as after a reboot: every other process of the case is killed first (and
    /// recorded as ended by the cut when the lab stops it).
    pub(super) fn after_crash(&mut self, armed: bool) -> Result<()> {
        let Some(record) = self.records.last() else {
            return Ok(());
        };
        let crashed = armed && record.crashed();
        if crashed && crate::engine::fleet::kill::kills_servers(self.env.nemesis) {
            // The server goes, and comes back, before any other step: a background step
            // of the case sees its connection fail, as it would.
            self.memo = None;
            let point = self.crash.map(|c| c.point).unwrap_or_default();
            return self
                .env
                .nemesis
                .after_crash(&crate::engine::nemesis::Aftermath {
                    work_dir: self.work,
                    point,
                });
        }
        if !crashed || self.env.nemesis.name() != "power-loss" {
            return Ok(());
        }
        let point = self.crash.map(|c| c.point).unwrap_or_default();
        for pid in &self.reaper.0 {
            // SAFETY: kill has no memory effects; a reaper's pid is an unreaped child.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
            // Dead before the cut, left unreaped for the lab's `stop` to record.
            process::waitid_nowait(*pid, libc::WEXITED)?;
        }
        let killed: Vec<String> = self
            .background
            .iter()
            .filter(|(pid, _)| self.reaper.0.contains(pid))
            .map(|(_, name)| name.clone())
            .collect();
        self.cut_killed.extend(killed);
        self.memo = None;
        // `--cut exhaustive`: a state's replay writes its images; the case itself forks.
        if self.install_state()? {
            return Ok(());
        }
        if let Some(bounds) = self.env.states {
            return self.fork_at_cut(bounds);
        }
        self.env
            .nemesis
            .after_crash(&crate::engine::nemesis::Aftermath {
                work_dir: self.work,
                point,
            })
    }
}
