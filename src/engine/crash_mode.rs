//! `--crash-mode` of the engine's commands and the power-loss options that go with it: which
//! nemesis a run injects, the store profile its roles pin, and the environment every role
//! process of the run gets.

use std::path::Path;

use anyhow::Result;

use crate::crash::Mode;
use crate::engine::nemesis::{of_mode, power_loss, Nemesis, POWER_CUTS_NAME};
use crate::engine::stack::Server;
use crate::fail;
use crate::power;

/// `--crash-mode` of the engine's commands (driver, explore, chaos): one of the four process
/// crashes, or a power cut. Roles take only the process crashes (`crash::Mode`): a power cut
/// is the engine's to make, not the role's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CrashMode {
    Exit,
    Abort,
    Kill,
    Hang,
    /// SIGKILL at the point, every other process of the run killed, then what was never
    /// synced is lost (`--cut`, `--seed`)
    PowerLoss,
    /// SIGKILL at the point, then the whole server `--server` names is SIGKILLed and
    /// restarted before the next step (a lab on private servers; docs/stack.md)
    ServerKill,
}

/// The seed of a cut when `--seed` is not given.
pub const CUT_SEED_DEFAULT: u64 = 1;

impl CrashMode {
    pub fn name(self) -> &'static str {
        match (self, self.process()) {
            (_, Some(mode)) => mode.name(),
            (CrashMode::ServerKill, None) => crate::engine::fleet::kill::NAME,
            (_, None) => "power-loss",
        }
    }

    /// The process crash it is, or None for a power cut.
    pub fn process(self) -> Option<Mode> {
        match self {
            CrashMode::Exit => Some(Mode::Exit),
            CrashMode::Abort => Some(Mode::Abort),
            CrashMode::Kill => Some(Mode::Kill),
            CrashMode::Hang => Some(Mode::Hang),
            CrashMode::PowerLoss | CrashMode::ServerKill => None,
        }
    }

    /// The mode of a recorded name (`processes.json` `crash_mode`).
    pub fn named(name: &str) -> Option<CrashMode> {
        [
            CrashMode::Exit,
            CrashMode::Abort,
            CrashMode::Kill,
            CrashMode::Hang,
            CrashMode::PowerLoss,
            CrashMode::ServerKill,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// A lab on SQLite files with power-loss predictions: the process crashes and a power cut.
pub const ON_FILES: &[CrashMode] = &[
    CrashMode::Exit,
    CrashMode::Abort,
    CrashMode::Kill,
    CrashMode::Hang,
    CrashMode::PowerLoss,
];
/// A lab on SQLite files without power-loss predictions: the process crashes only.
pub const ON_FILES_NO_CUT: &[CrashMode] = &[
    CrashMode::Exit,
    CrashMode::Abort,
    CrashMode::Kill,
    CrashMode::Hang,
];
/// A lab on servers: the process crashes and a server kill (a power cut of crashlab's reaches
/// SQLite files only, never a server's own).
pub const ON_SERVERS: &[CrashMode] = &[
    CrashMode::Exit,
    CrashMode::Abort,
    CrashMode::Kill,
    CrashMode::Hang,
    CrashMode::ServerKill,
];

/// Whether `lab` takes `mode` (`Lab::crash_modes`). Driver, explore and chaos ask this before
/// anything starts: a mode the lab refuses is one line, exit 2, nothing written, no server
/// started; the line names the modes it takes, every one a command that runs.
pub fn supported(lab: &crate::engine::LabStack, mode: CrashMode) -> Result<()> {
    if lab.crash_modes.contains(&mode) {
        return Ok(());
    }
    let stack = crate::engine::stack::name_of(lab.stack);
    let why = match (mode, lab.stack) {
        (CrashMode::PowerLoss, Some(_)) => {
            "its state is in servers, whose files a power cut of crashlab's does not reach"
        }
        (CrashMode::PowerLoss, None) => {
            "it has no power-loss predictions, so no run of it under a cut could be judged"
        }
        (CrashMode::ServerKill, None) => "it runs on SQLite files, with no server to kill",
        _ => "it does not take this crash mode",
    };
    let takes: Vec<&str> = lab.crash_modes.iter().map(|m| m.name()).collect();
    Err(fail::usage(format!(
        "--crash-mode {}: lab {} on stack {stack} refuses it ({why}); its crash modes: {}",
        mode.name(),
        lab.id(),
        takes.join(", ")
    )))
}

/// `--cut` and `--seed` belong to a power cut: given with a process crash they would be
/// silently ignored, so they are refused (one line, exit 2).
pub fn check_cut_flags(
    mode: CrashMode,
    cut: Option<power::cut::Style>,
    seed: Option<u64>,
) -> Result<()> {
    if mode == CrashMode::PowerLoss {
        return Ok(());
    }
    let given = match (cut, seed) {
        (Some(_), _) => "--cut",
        (None, Some(_)) => "--seed",
        (None, None) => return Ok(()),
    };
    Err(fail::usage(format!(
        "{given} is for --crash-mode power-loss only (this run's crash mode is {})",
        mode.name()
    )))
}

/// The nemesis of a run: the process crash named, or a power cut in `cut` style (default
/// `drop`) seeded by `seed`.
pub fn choose(
    mode: CrashMode,
    cut: Option<power::cut::Style>,
    seed: Option<u64>,
) -> Result<&'static dyn Nemesis> {
    choose_on(mode, cut, seed, None)
}

/// As `choose`, with the server a server kill kills (`--server`): needed by server-kill,
/// refused with any other mode (one line, exit 2).
pub fn choose_on(
    mode: CrashMode,
    cut: Option<power::cut::Style>,
    seed: Option<u64>,
    server: Option<Server>,
) -> Result<&'static dyn Nemesis> {
    check_cut_flags(mode, cut, seed)?;
    if let Some(style) = cut {
        // One cut per crash, seeded; exhaustive is no single cut (explore forks instead).
        power::cut::seeded(style, 0, &[], 0)?;
    }
    match (mode, server) {
        (CrashMode::ServerKill, Some(server)) => return Ok(crate::engine::fleet::kill::of(server)),
        (CrashMode::ServerKill, None) => {
            return Err(fail::usage(
                "--crash-mode server-kill needs --server postgres or --server rabbitmq",
            ))
        }
        (_, Some(_)) => {
            return Err(fail::usage(format!(
                "--server is for --crash-mode server-kill only (this run's crash mode is {})",
                mode.name()
            )))
        }
        (_, None) => {}
    }
    Ok(match mode.process() {
        Some(m) => of_mode(m),
        None => power_loss(
            cut.unwrap_or(power::cut::Style::Drop),
            seed.unwrap_or(CUT_SEED_DEFAULT),
        ),
    })
}

/// The environment every role process of a run gets: the nemesis's (the undo log under a
/// power cut) and the store profile's (none for the default).
pub fn role_env(
    nemesis: &dyn Nemesis,
    profile: &power::profile::Profile,
    work_dir: &Path,
) -> Vec<(String, String)> {
    // The role runs inside the work directory: it gets the log's path whole.
    let work_dir = std::path::absolute(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
    let mut env = nemesis.env(&work_dir);
    env.extend(profile.env());
    env
}

/// After a power cut in `work_dir`: its summary (the last line `after_crash` appended to
/// `power-cuts.jsonl`), with where it happened, for the run's evidence.
pub fn last_cut(
    work_dir: &Path,
    scenario: &str,
    step: &str,
    point: &str,
) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(work_dir.join(POWER_CUTS_NAME))
        .map_err(|e| fail::io(format!("reading {POWER_CUTS_NAME} after a cut: {e}")))?;
    let line = text.lines().last().unwrap_or_default();
    let summary: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| fail::io(format!("{POWER_CUTS_NAME}: its last line is not JSON: {e}")))?;
    let mut record = serde_json::json!({"scenario": scenario, "step": step, "point": point});
    if let (Some(into), Some(from)) = (record.as_object_mut(), summary.as_object()) {
        into.extend(from.clone());
    }
    Ok(record)
}

/// The power-loss options driver and chaos share (explore takes its profiles as variants).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PowerArgs {
    /// With --crash-mode power-loss: how unsynced writes fare in the cut (default drop)
    #[arg(long, value_enum)]
    pub cut: Option<power::cut::Style>,
    /// The journal mode and synchronous setting every role pins: default (WAL, FULL),
    /// sync-normal, journal-delete, journal-delete-extra, sync-off
    #[arg(long, value_name = "NAME")]
    pub store_profile: Option<String>,
}

impl PowerArgs {
    /// The profile named (the default when none is); an unknown name is one line, exit 2.
    pub fn profile(&self) -> Result<power::profile::Profile> {
        match &self.store_profile {
            None => Ok(power::profile::DEFAULT),
            Some(name) => power::profile::find(name).map_err(|e| e.context("--store-profile")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data says what runs: a lab takes a power cut exactly when it is on files and its
    /// explore plan predicts where each store profile breaks, a server kill exactly when it
    /// is on servers and predicts where each design breaks under one, every process crash
    /// always.
    #[test]
    fn every_lab_takes_exactly_the_modes_it_can_be_judged_under() {
        for lab in crate::engine::registry::stacks() {
            let plan = lab.explore.expect("every lab has an explore plan");
            let power = lab.stack.is_none() && !plan.power_predictions().is_empty();
            let server = lab.stack.is_some() && !plan.server_predictions().is_empty();
            let name = format!("{} on {}", lab.id(), lab.stack_name());
            assert_eq!(
                lab.crash_modes.contains(&CrashMode::PowerLoss),
                power,
                "{name}"
            );
            assert_eq!(
                lab.crash_modes.contains(&CrashMode::ServerKill),
                server,
                "{name}"
            );
            for mode in [
                CrashMode::Exit,
                CrashMode::Abort,
                CrashMode::Kill,
                CrashMode::Hang,
            ] {
                assert!(supported(lab, mode).is_ok(), "{name} takes {}", mode.name());
            }
        }
    }

    #[test]
    fn a_refused_mode_is_one_usage_line_naming_the_modes_taken() {
        let f1 = crate::engine::registry::find_on("f1", None).unwrap();
        let e = supported(f1, CrashMode::PowerLoss).unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "--crash-mode power-loss: lab f1 on stack postgres refuses it (its state is in servers, whose files a power cut of crashlab's does not reach); its crash modes: exit, abort, kill, hang, server-kill"
        );
        let f2 = crate::engine::registry::find_on("f2", None).unwrap();
        let e = supported(f2, CrashMode::ServerKill).unwrap_err();
        assert!(e.to_string().contains("no server to kill"), "{e}");
    }

    #[test]
    fn cut_flags_belong_to_a_power_cut() {
        assert_eq!(CrashMode::PowerLoss.name(), "power-loss");
        assert_eq!(CrashMode::named("hang"), Some(CrashMode::Hang));
        assert_eq!(CrashMode::named("power-loss"), Some(CrashMode::PowerLoss));
        let n = choose(CrashMode::PowerLoss, None, None).unwrap();
        assert_eq!(n.name(), "power-loss");
        assert_eq!(
            choose(CrashMode::Abort, None, None).unwrap().name(),
            "abort"
        );
        for (cut, seed) in [(Some(power::cut::Style::Torn), None), (None, Some(3))] {
            let Err(e) = choose(CrashMode::Exit, cut, seed) else {
                panic!("--cut or --seed with a process crash is refused")
            };
            assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
            assert!(e.to_string().contains("power-loss only"), "{e}");
        }
        let profile = power::profile::find("sync-off").unwrap();
        let env = role_env(n, &profile, Path::new("w"));
        assert_eq!(env.len(), 2);
        assert!(role_env(
            of_mode(Mode::Exit),
            &power::profile::DEFAULT,
            Path::new("w")
        )
        .is_empty());
    }
}
