//! The state a readback must show, by name: a lab's data, read by the readback role that
//! checks `--expect STAGE` and by the engine that expects it of a step.

use serde_json::Value;

/// The state a readback must show: dotted paths into the readback JSON and their values.
#[derive(Debug, Clone, Copy)]
pub struct Stage {
    pub name: &'static str,
    pub fields: &'static [(&'static str, i64)],
}

impl Stage {
    /// Stage `name` among a lab's `stages` (every readback step of a scenario names one).
    pub fn named(stages: &[Stage], name: &str) -> Stage {
        *stages
            .iter()
            .find(|s| s.name == name)
            .expect("every readback step has a stage")
    }

    /// Field-by-field differences between this stage and a readback; empty when it holds.
    pub fn diff(&self, readback: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        for (path, expected) in self.fields {
            let observed = lookup(readback, path).and_then(Value::as_i64);
            match observed {
                Some(v) if v == *expected => {}
                Some(v) => problems.push(format!("{path}: expected {expected}, observed {v}")),
                None => problems.push(format!(
                    "{path}: expected {expected}, missing in the readback"
                )),
            }
        }
        problems
    }

    /// `contracts 1, outbox_pending 1, deliveries 0`: the state that matters, for tables.
    pub fn describe(&self, readback: Option<&Value>) -> String {
        self.fields
            .iter()
            .map(|(path, expected)| {
                let short = path.rsplit('.').next().unwrap_or(path);
                match readback
                    .and_then(|r| lookup(r, path))
                    .and_then(Value::as_i64)
                {
                    Some(v) if v == *expected => format!("{short} {v}"),
                    Some(v) => format!("{short} {v} (expected {expected})"),
                    None => format!("{short} ? (expected {expected})"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}
