//! A chaos study of several seeds (`seeds.json`): every seed's directory audits as the
//! chaos run it is, its `chaos.json` says what `seeds.json` says of it, and the sums are
//! the seeds'.

use std::path::Path;

use super::tree::Tree;
use super::{Report, CHAOS};
use crate::engine::load::chaos::seeds::{dir_of, Chaos, Study, SEEDS};

/// The most seeds a study holds (`--runs` allows no more).
const SEEDS_MAX: usize = 1_000;

pub(super) fn check(report: &mut Report, tree: &Tree, dir: &Path) {
    report.kind = "chaos".to_string();
    report.attested = vec![format!(
        "{SEEDS}, and every seed's directory as a chaos run's"
    )];
    let Some(study) = tree.json::<Study>(report, SEEDS) else {
        return;
    };
    report.lab = Some(study.lab.clone());
    if study.seeds.len() > SEEDS_MAX {
        report.problem(
            SEEDS,
            format!("{} seeds; at most {SEEDS_MAX}", study.seeds.len()),
        );
        return;
    }
    for s in &study.seeds {
        if s.dir != dir_of(s.seed) {
            report.problem(
                SEEDS,
                format!(
                    "seed {}: directory '{}', not {}",
                    s.seed,
                    s.dir,
                    dir_of(s.seed)
                ),
            );
            continue;
        }
        // From the study's one snapshot: no file of the seed is read a second time.
        let sub = super::audit_part(&tree.under(&s.dir), &dir.join(&s.dir));
        for p in sub.problems {
            report.problem(&format!("{}/{}", s.dir, p.file), p.problem);
        }
        report.processes += sub.processes;
        let rel = format!("{}/{CHAOS}", s.dir);
        if let Some(chaos) = tree.json::<Chaos>(report, &rel) {
            if (chaos.ok, chaos.lost, chaos.duplicated) != (s.ok, s.lost, s.duplicated) {
                report.problem(
                    SEEDS,
                    format!(
                        "seed {}: ok {} lost {} duplicated {}; its {CHAOS} says ok {} lost {} duplicated {}",
                        s.seed, s.ok, s.lost, s.duplicated, chaos.ok, chaos.lost, chaos.duplicated
                    ),
                );
            }
        }
    }
    let again = Study::new(
        study.lab.clone(),
        study.command.clone(),
        study.seeds.clone(),
    );
    if (again.ok, again.lost, again.duplicated) != (study.ok, study.lost, study.duplicated)
        || again.seeds != study.seeds
    {
        report.problem(
            SEEDS,
            format!(
                "ok {} lost {} duplicated {}; its seeds (in order) give ok {} lost {} duplicated {}",
                study.ok, study.lost, study.duplicated, again.ok, again.lost, again.duplicated
            ),
        );
    }
    report.summary = format!(
        "chaos {} over {} seeds, lost {}, duplicated {}, every seed's run audited",
        study.lab.split('-').next().unwrap_or("?"),
        study.seeds.len(),
        study.lost,
        study.duplicated
    );
}
