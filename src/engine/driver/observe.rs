//! What the driver reads back of a finished scenario: each step's events (strictly) and its
//! readback, handed to the lab's history for Jepsen's findings.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::{Ctx, Run};
use crate::engine::check::parse_events;
use crate::engine::observed::{self, ScenarioFindings, Seen};
use crate::engine::process;
use crate::engine::LabStack;
use crate::events::Event;

/// A step's events, or why they cannot be read, in words that name no path of this machine
/// (the reason goes into results.json).
pub(super) fn read_events(path: &Path) -> Result<Vec<Event>, String> {
    let size = fs::metadata(path).map_err(|e| format!("{e}"))?.len();
    if size > crate::events::EVENTS_BYTES_MAX {
        return Err(format!("{size} bytes, more than an events file may hold"));
    }
    let text = fs::read_to_string(path).map_err(|e| format!("{e}"))?;
    parse_events(&text)
}

impl Ctx<'_> {
    /// The scenario's findings, from the events and readbacks its steps left (events that
    /// cannot be read count as none: the step's own result says why).
    pub(super) fn findings(
        &self,
        lab: &LabStack,
        readbacks: &BTreeMap<String, String>,
    ) -> Option<ScenarioFindings> {
        let steps = &self.scenario.steps;
        let events: Vec<Vec<Event>> = steps
            .iter()
            .map(|step| {
                let (stdout_rel, _) = self.rel(step);
                read_events(&process::events_file(&self.dir.join(stdout_rel))).unwrap_or_default()
            })
            .collect();
        let values: Vec<Option<serde_json::Value>> = steps
            .iter()
            .map(|step| {
                readbacks
                    .get(&super::readback_key(&self.scenario.name, &step.name))
                    .and_then(|line| serde_json::from_str(line).ok())
            })
            .collect();
        let seen: Vec<Seen<'_>> = steps
            .iter()
            .zip(&events)
            .zip(&values)
            .map(|((step, events), readback)| Seen {
                step: &step.name,
                phase: step.phase,
                events,
                readback: readback.as_ref(),
            })
            .collect();
        observed::judge(lab, &self.scenario.name, &seen)
    }
}

/// One line per scenario in Jepsen's words; returns how many scenarios show other bad
/// anomalies than they expect.
pub(super) fn print_findings(run: &Run) -> usize {
    let scenarios = &run.results.scenarios;
    if scenarios.is_empty() {
        return 0;
    }
    crate::say!("anomalies (a scenario holds when its bad ones are exactly those it expects):");
    let width = scenarios
        .iter()
        .map(|f| f.scenario.len())
        .max()
        .unwrap_or(0);
    for f in scenarios {
        let expected: Vec<&str> = f.expected_anomalies.iter().map(|a| a.name()).collect();
        let expects = match expected.as_slice() {
            [] => String::new(),
            names => format!("; expected: {}", names.join(", ")),
        };
        let mark = if f.ok { "" } else { "  <-- FAILED" };
        crate::say!("  {:<width$}  {}{expects}{mark}", f.scenario, f.summary);
    }
    crate::say!();
    scenarios.iter().filter(|f| !f.ok).count()
}
