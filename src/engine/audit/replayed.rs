//! The replay of a driver run's SQL history (src/lab/replay) in the audit: one call, and
//! where the replay finds a recorded state its history does not give, the trace of the step
//! where that first shows is named beside the row.

use super::record::output_files;
use super::tree::Tree;
use super::Report;
use crate::engine::evidence::{self, Processes};
use crate::engine::replay::Cut;
use crate::engine::scenario::{Scenario, Step};
use crate::engine::LabStack;

/// A run's steps in order, each with its scenario.
type RunSteps<'a> = &'a [(&'a Scenario, &'a Step)];

/// `cuts`: a power-loss run's cuts, each with the database files it changed.
pub(super) fn check(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    (steps, scenarios, cuts): (RunSteps<'_>, &[Scenario], Option<&[Cut]>),
    processes: &Processes,
    many: bool,
) {
    let replayed = crate::engine::replay::check(
        tree,
        lab,
        scenarios,
        &processes.processes,
        &processes.pragmas,
        cuts,
    );
    name_traces(report, steps, &replayed, many);
    for (file, problem) in replayed {
        report.problem(&file, problem);
    }
}

/// A recorded state the replayed history does not give is a disagreement between two files:
/// the row, and the trace of the step after which it first shows (the replay names the row).
/// Name that trace too, once per scenario and database, so a changed trace is named where it
/// was changed. The replay says `<scenario> after <step>, <file>: recorded logical_sha256 …`.
fn name_traces(
    report: &mut Report,
    steps: &[(&Scenario, &Step)],
    replayed: &[(String, String)],
    many: bool,
) {
    let mut named = std::collections::BTreeSet::new();
    for (file, problem) in replayed {
        if file != evidence::DATABASE_FILES || !problem.contains(": recorded logical_sha256 ") {
            continue;
        }
        for (scenario, step) in steps {
            let Some(rest) =
                problem.strip_prefix(&format!("{} after {}, ", scenario.name, step.name))
            else {
                continue;
            };
            let db = rest.split(':').next().unwrap_or("");
            if named.insert((scenario.name.clone(), db.to_string())) {
                let (stdout, _) = output_files(scenario, step);
                let label = if many {
                    format!("{}/{}", scenario.name, step.name)
                } else {
                    step.name.clone()
                };
                report.problem(
                    &stdout,
                    format!(
                        "{label}: the history traced up to this step does not give {db} as {} records it",
                        evidence::DATABASE_FILES
                    ),
                );
            }
            break;
        }
    }
}
