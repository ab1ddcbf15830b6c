//! results.json's `scenarios` re-derived: each scenario's history is made again by the lab
//! from the raw events and readbacks, checked in Jepsen's words, and the recorded findings
//! (operations, anomalies, bad anomalies, expected anomalies, summary, ok) must be those,
//! scenario by scenario, in the lab's order.

use serde_json::Value;

use super::Report;
use crate::engine::evidence::{self, Results};
use crate::engine::observed::{self, ScenarioFindings, Seen};
use crate::engine::scenario::{Scenario, Step};
use crate::engine::LabStack;
use crate::events::Event;

const R: &str = evidence::RESULTS;

/// One step's events and readback, as the audit read them (empty when unreadable).
pub(super) type StepSeen = (Vec<Event>, Option<Value>);

/// Derive every scenario's findings and hold results.json to them; returns whether every
/// derived scenario holds.
pub(super) fn check(
    report: &mut Report,
    lab: &LabStack,
    steps: &[(&Scenario, &Step)],
    seen: &[StepSeen],
    results: Option<&Results>,
) -> bool {
    assert_eq!(steps.len(), seen.len(), "one seen slot per step");
    let mut derived: Vec<ScenarioFindings> = Vec::new();
    let mut at = 0;
    while at < steps.len() {
        let scenario = steps[at].0;
        let n = scenario.steps.len();
        let views: Vec<Seen<'_>> = steps[at..at + n]
            .iter()
            .zip(&seen[at..at + n])
            .map(|((_, step), (events, readback))| Seen {
                step: &step.name,
                phase: step.phase,
                events,
                readback: readback.as_ref(),
            })
            .collect();
        derived.extend(observed::judge(lab, &scenario.name, &views));
        at += n;
    }
    let ok = derived.iter().all(|f| f.ok);
    let Some(results) = results else {
        return ok;
    };
    let names = |list: &[ScenarioFindings]| -> Vec<String> {
        list.iter().map(|f| f.scenario.clone()).collect()
    };
    if names(&results.scenarios) != names(&derived) {
        report.problem(
            R,
            format!(
                "scenarios {:?}, the raw files give findings for {:?}",
                names(&results.scenarios),
                names(&derived)
            ),
        );
        return ok;
    }
    for (recorded, derived) in results.scenarios.iter().zip(&derived) {
        if recorded == derived {
            continue;
        }
        let (a, b) = (
            serde_json::to_value(recorded).unwrap_or_default(),
            serde_json::to_value(derived).unwrap_or_default(),
        );
        let fields = a
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| b.get(k.as_str()) != Some(v));
        for (field, value) in fields {
            report.problem(
                R,
                format!(
                    "{}: {field} is {value}, the raw events give {}",
                    recorded.scenario,
                    b[field.as_str()]
                ),
            );
        }
    }
    ok
}
