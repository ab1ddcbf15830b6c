//! results.json re-derived: every step's `expected`, `observed`, `problems` and `ok` must be
//! what the driver's checker gives on the raw output (run.rs computes it), in the lab's step
//! order, and the top-level `lab` and `ok` must follow (with the scenarios' findings).

use serde_json::Value;

use super::{sequence, Report};
use crate::engine::check::Verdict;
use crate::engine::evidence::{self, Results};
use crate::engine::scenario::{Scenario, Step};
use crate::engine::LabStack;

const R: &str = evidence::RESULTS;

/// Differences reported per field: enough to say what changed.
const DIFFS_MAX: usize = 4;

pub(super) fn compare(
    report: &mut Report,
    lab: &LabStack,
    steps: &[(&Scenario, &Step)],
    results: &Results,
    verdicts: &[Option<Verdict>],
    many: bool,
    findings_ok: bool,
) {
    assert_eq!(steps.len(), verdicts.len(), "one verdict slot per step");
    if results.lab != lab.full_name() {
        report.problem(
            R,
            format!("lab '{}', the run is lab {}", results.lab, lab.full_name()),
        );
    }
    let names: Vec<String> = steps
        .iter()
        .map(|(s, step)| format!("{}/{}", s.name, step.name))
        .collect();
    let found: Vec<String> = results
        .steps
        .iter()
        .map(|r| format!("{}/{}", r.scenario, r.step))
        .collect();
    for d in sequence::differences(&names, &found, 10) {
        report.problem(R, format!("steps: {d}"));
    }
    let mut all_ok = true;
    let mut all_known = true;
    for (index, ((scenario, step), verdict)) in steps.iter().zip(verdicts).enumerate() {
        let Some(verdict) = verdict else {
            all_known = false;
            continue;
        };
        let ok = verdict.problems.is_empty();
        all_ok &= ok;
        let label = if many {
            format!("{}/{}", scenario.name, step.name)
        } else {
            step.name.clone()
        };
        let Some(recorded) = results
            .steps
            .get(index)
            .filter(|r| r.scenario == scenario.name && r.step == step.name)
        else {
            continue;
        };
        if recorded.ok != ok {
            report.problem(
                R,
                format!("{label}: ok is {}, the raw output says {ok}", recorded.ok),
            );
        }
        if recorded.problems != verdict.problems {
            report.problem(
                R,
                format!(
                    "{label}: problems recorded {:?}, the raw output shows {:?}",
                    recorded.problems, verdict.problems
                ),
            );
        }
        for (field, recorded, derived) in [
            ("expected", &recorded.expected, &verdict.expected),
            ("observed", &recorded.observed, &verdict.observed),
        ] {
            let mut diffs = Vec::new();
            json_diff(field, recorded, derived, &mut diffs);
            for d in diffs.iter().take(DIFFS_MAX) {
                report.problem(R, format!("{label}: {d}"));
            }
        }
    }
    // The run holds when every step held and every scenario shows exactly the anomalies it
    // expects (findings.rs derives those).
    let all_ok = all_ok && findings_ok;
    if all_known && results.ok != all_ok {
        report.problem(
            R,
            format!("ok is {}, the raw output says {all_ok}", results.ok),
        );
    }
}

/// Every path where `recorded` differs from `derived`, as `path is X, the raw output gives Y`.
fn json_diff(path: &str, recorded: &Value, derived: &Value, out: &mut Vec<String>) {
    if recorded == derived || out.len() > DIFFS_MAX {
        return;
    }
    match (recorded, derived) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let null = Value::Null;
                let inner = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => json_diff(&inner, x, y, out),
                    (Some(_), None) => out.push(format!(
                        "{inner} is recorded, the raw output has no such field"
                    )),
                    (None, Some(y)) => out.push(format!(
                        "{inner} is missing, the raw output gives {}",
                        short(y)
                    )),
                    (None, None) => json_diff(&inner, &null, &null, out),
                }
            }
        }
        _ => out.push(format!(
            "{path} is {}, the raw output gives {}",
            short(recorded),
            short(derived)
        )),
    }
}

/// A value for a one-line message.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() <= 120 {
        return text;
    }
    let mut cut = 117;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::json_diff;
    use serde_json::json;

    #[test]
    fn json_diff_names_each_changed_path() {
        let mut out = Vec::new();
        json_diff(
            "observed",
            &json!({"exit": 0, "readback": {"a": 1, "b": 2}}),
            &json!({"exit": 65, "readback": {"a": 1, "c": 2}}),
            &mut out,
        );
        assert_eq!(
            out,
            [
                "observed.exit is 0, the raw output gives 65",
                "observed.readback.b is recorded, the raw output has no such field",
                "observed.readback.c is missing, the raw output gives 2",
            ]
        );
    }
}
