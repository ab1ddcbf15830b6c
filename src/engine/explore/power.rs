//! Explore under power loss: `--variants` names store profiles (`all`: every one), and each
//! profile runs under every cut style (or the one `--cut` names). A design is then
//! `<profile>/<cut>`: the lab's own design (its first, the correct one), every role pinning
//! the profile, every crash that cut, seeded.

use std::path::Path;

use anyhow::Result;

use crate::engine::crash_mode::CUT_SEED_DEFAULT;
use crate::engine::explore::plan::{ExplorePlan, Judgement, Words};
use crate::engine::explore::steps::PowerDesign;
use crate::engine::nemesis::power_loss;
use crate::fail;
use crate::power::cut::{Style, STYLES};
use crate::power::profile::{Profile, PROFILES};
use crate::power::states::{Bounds, MAX_STATES_DEFAULT};

/// The profiles `spec` names (`all` or `NAME,NAME`), in their order, each once.
pub fn profiles(spec: &str) -> Result<Vec<Profile>> {
    if spec == "all" {
        return Ok(PROFILES.to_vec());
    }
    let mut chosen = Vec::new();
    for name in spec.split(',').map(str::trim) {
        if !PROFILES.iter().any(|p| p.name == name) {
            let known: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            return Err(fail::usage(format!(
                "--crash-mode power-loss: unknown store profile '{name}'; known: all, {}",
                known.join(", ")
            )));
        }
        chosen.push(name);
    }
    Ok(PROFILES
        .iter()
        .filter(|p| chosen.contains(&p.name))
        .copied()
        .collect())
}

/// The designs of a power-loss run: every profile named, under every cut style (or `cut`;
/// `exhaustive` runs every state of each cut, at most `max_states` per crash point).
pub fn designs(
    plan: &dyn ExplorePlan,
    spec: &str,
    cut: Option<Style>,
    seed: Option<u64>,
    max_states: Option<usize>,
) -> Result<Vec<PowerDesign>> {
    let lab_design = plan.designs()[0];
    let styles: Vec<Style> = match cut {
        Some(style) => vec![style],
        None => STYLES.to_vec(),
    };
    let seed = seed.unwrap_or(CUT_SEED_DEFAULT);
    let chosen = profiles(spec)?;
    if cut == Some(Style::Exhaustive) {
        unpredicted_exhaustive(plan, &chosen)?;
    }
    let mut designs = Vec::new();
    for profile in chosen {
        for &style in &styles {
            // One name per design per run: leaking it gives the engine its `&'static str`.
            let name: &'static str =
                Box::leak(format!("{}/{}", profile.name, style.name()).into_boxed_str());
            let states = (style == Style::Exhaustive).then(|| Bounds {
                max_states: max_states.unwrap_or(MAX_STATES_DEFAULT),
                seed,
                tear: !profile.atomic_writes,
            });
            designs.push(PowerDesign {
                name,
                lab_design,
                profile,
                nemesis: power_loss(style, seed),
                states,
            });
        }
    }
    Ok(designs)
}

/// A profile whose seeded cuts break (it has predictions) but which has none for every state
/// (`<profile>/exhaustive`) would be judged against "holds everywhere": refused up front,
/// naming the profiles that can run. Profiles with no prediction at all hold everywhere.
fn unpredicted_exhaustive(plan: &dyn ExplorePlan, chosen: &[Profile]) -> Result<()> {
    let predicted = |profile: &str, style: &str| {
        plan.power_predictions()
            .iter()
            .any(|p| p.variant.split_once('/') == Some((profile, style)))
    };
    let breaks = |p: &Profile| STYLES.iter().any(|s| predicted(p.name, s.name()));
    let (unknown, known): (Vec<&Profile>, Vec<&Profile>) = chosen
        .iter()
        .partition(|p| breaks(p) && !predicted(p.name, Style::Exhaustive.name()));
    if unknown.is_empty() {
        return Ok(());
    }
    let names = |ps: &[&Profile]| ps.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
    Err(fail::usage(format!(
        "--cut exhaustive: store profiles {} of this lab have no predictions for every state \
         (their seeded cuts drop, torn and prefix do); {}",
        names(&unknown),
        match known.is_empty() {
            true => "run those cuts instead".to_string(),
            false => format!("--variants {} can run", names(&known)),
        }
    )))
}

/// What a role or the lab's reading says of a file a cut left unusable: SQLite's own words
/// for a broken file, or the store's for one holding what no role wrote.
const BROKEN: &[&str] = &["is corrupt", "foreign schema", "is not a database"];

/// The error is bad input (exit 2) about a file a cut may have broken.
pub fn unreadable(e: &anyhow::Error) -> bool {
    let line = fail::one_line(e);
    fail::exit_code(e) == fail::EXIT_USAGE && BROKEN.iter().any(|w| line.contains(w))
}

/// A role's stderr says it refused such a file (its one line, exit 2).
pub fn refused_broken_file(stderr: &str) -> bool {
    let first = stderr.lines().next().unwrap_or_default();
    first.starts_with("crashlab: ") && BROKEN.iter().any(|w| first.contains(w))
}

/// The error's line with the case's work directory taken out: the evidence names files as
/// the roles do, relative to it, and no path of the machine that ran it.
pub fn relative(e: &anyhow::Error, work: &Path) -> String {
    let prefix = format!("{}/", work.display());
    fail::one_line(e).replace(&prefix, "")
}

/// The judgement of a case whose files the cut left unreadable: every effect and every
/// acknowledged commit they held counts as lost (no reader can get them back), nothing can
/// be shown duplicated or pending, and the history holds no operation to check.
pub fn unreadable_judgement(why: String) -> Judgement {
    Judgement {
        no_lost_effect: false,
        no_duplicate_effect: true,
        nothing_stuck: true,
        acknowledged_durable: false,
        counts: Default::default(),
        history: Vec::new(),
        allowed: &[],
        problems: vec![format!("the files cannot be read after the cut: {why}")],
    }
}

/// The lab's words with the verdict lines of a power-loss run: its designs are store
/// profiles, not the lab's variants.
pub fn words(lab: &'static Words) -> &'static Words {
    // One per run: leaking it gives the exporters their `&'static`.
    Box::leak(Box::new(Words {
        columns: lab.columns,
        legend: lab.legend,
        pass: "PASS: the correct design (default: WAL, FULL) holds at every point under every cut; every other store profile breaks exactly where it predicts",
        svg_pass: "PASS: default (WAL, FULL) holds under every cut; every store profile breaks exactly where predicted",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_by_name_in_their_order_and_unknown_ones_refused() {
        let all: Vec<&str> = profiles("all").unwrap().iter().map(|p| p.name).collect();
        assert_eq!(all[0], "default");
        assert_eq!(all.len(), PROFILES.len());
        let two: Vec<&str> = profiles("sync-off,default")
            .unwrap()
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(two, ["default", "sync-off"]);
        let e = profiles("correct").unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
    }
}
