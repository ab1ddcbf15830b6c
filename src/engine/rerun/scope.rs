//! What a rerun of each kind of evidence can compare. A driver or explore run compares every
//! file; a chaos run, whose kills land where the processes happen to be when the seeded
//! moment comes, compares what the seed determines.

use std::collections::BTreeSet;

use serde_json::Value;

use super::runner::Kind;

/// The fields of chaos.json that the seed and the options determine: the options, the kill
/// count asked for, the message counts and the claims (nothing lost, nothing duplicated). A
/// path is `key` or `check.key`. Not `kills_done`: a run whose work ends before a scheduled
/// moment makes fewer kills, and when it ends is timing.
pub const CHAOS_SEEDED: &[&str] = &[
    "lab",
    "ok",
    "seed",
    "messages",
    "consumers",
    "batch",
    "lease_ms",
    "kills_requested",
    "unexpected_exits",
    "timed_out",
    "replay",
    "evidence",
    "problems",
    "check.contracts",
    "check.inbox",
    "check.ledger",
    "check.ledger_expected",
    "check.outbox_pending",
    "check.queue_pending",
    "check.lost_effects",
    "check.duplicated_effects",
    "check.wrong_balances",
    "check.problems",
];

/// Why a chaos file is not compared.
pub const CHAOS_NOT_COMPARED: &str = "logs/, kills.json, database-files.json, db/, manifest.json and processes.json's processes (which process a seeded kill hits, and so every later line, row and restart, depends on timing)";

/// Why the pictures are not compared.
pub const PICTURES_NOT_COMPARED: &str = "timeline.svg and report.html (drawn from the records compared here, with their wall times; the offline audit redraws them byte for byte)";

/// A driver run's pictures, in DIR or a scenario's directory.
pub fn is_picture(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "timeline.svg" || name == "report.html"
}

/// The files SQLite keeps beside a database.
const SIDE_SUFFIXES: &[&str] = &["-wal", "-shm", "-journal"];

/// How one file of the evidence is compared.
pub enum Rule {
    /// Line by line, or field by field for JSON, or row by row for a database.
    Everything,
    /// Only these JSON paths (chaos.json).
    Only(&'static [&'static str]),
    /// Every JSON field but these top-level keys.
    AllBut(&'static [&'static str]),
    /// Not compared, and said once for the whole kind.
    Skip,
    /// A database's side file: compared through the database's rows, not by itself.
    Side,
}

pub struct Scope {
    pub kind: Kind,
    /// (scenario, step) of the driver's snapshots taken while a background process of the
    /// scenario ran (the lab's own definition says which steps run in the background).
    background: BTreeSet<(String, String)>,
    /// A lab file's run: its path as the rerun records it (it ran the lab file by its whole
    /// path, recorded by name) and as DIR records it. The same file: its SHA-256 was checked.
    lab_file: Option<(String, String)>,
}

impl Scope {
    pub fn new(kind: Kind, lab: &str) -> Scope {
        let background = match (kind, crate::engine::registry::find(lab)) {
            (Kind::Driver, Ok(lab)) => lab
                .stacks
                .iter()
                .flat_map(|on| background_steps(on))
                .collect(),
            _ => BTreeSet::new(),
        };
        Scope {
            kind,
            background,
            lab_file: None,
        }
    }

    /// A lab file's run, rerun with the lab file's whole path `whole`, recorded as `recorded`.
    pub fn lab_file(mut self, whole: &std::path::Path, recorded: &str) -> Scope {
        let rerun = crate::engine::evidence::recorded_path(whole);
        self.lab_file = Some((rerun, recorded.to_string()));
        self
    }

    /// The rerun's record of a lab file's run names the lab file as DIR does: at `lab_file`
    /// and `file`, and in `command`, where the rerun's path stands for the recorded one.
    pub fn relabel(&self, rel: &str, value: &mut Value) {
        let Some((rerun, recorded)) = &self.lab_file else {
            return;
        };
        if rel != crate::labfile::evidence::RECORD && rel != "explore.json" {
            return;
        }
        let Some(object) = value.as_object_mut() else {
            return;
        };
        for key in ["lab_file", "file"] {
            if object.get(key).and_then(Value::as_str) == Some(rerun.as_str()) {
                object.insert(key.to_string(), Value::String(recorded.clone()));
            }
        }
        if let Some(Value::Array(words)) = object.get_mut("command") {
            for word in words.iter_mut().skip(2) {
                if word.as_str() == Some(rerun.as_str()) {
                    *word = Value::String(recorded.clone());
                    break;
                }
            }
        }
    }

    pub fn rule(&self, rel: &str) -> Rule {
        // The pictures are drawn from the records (their labels carry wall times); the
        // offline audit redraws them from the records byte for byte, and the records are
        // compared here.
        if is_picture(rel) {
            return Rule::Skip;
        }
        // A kept database's side file, under the driver's or chaos's `db/` or under an
        // explore case's `…/db/`.
        let in_db = rel.starts_with("db/") || rel.contains("/db/");
        let side = in_db && SIDE_SUFFIXES.iter().any(|s| rel.ends_with(s));
        if side {
            return Rule::Side;
        }
        match self.kind {
            Kind::Driver | Kind::Explore => Rule::Everything,
            Kind::Chaos => match rel {
                "chaos.json" => Rule::Only(CHAOS_SEEDED),
                "processes.json" => Rule::AllBut(&["processes"]),
                _ => Rule::Skip,
            },
        }
    }

    /// Whether a JSON object of `rel` describes a file whose state timing decides: a
    /// SQLite side file (`-wal`, `-shm`, `-journal`: whether it is there and how big depends
    /// on when a checkpoint ran and the last connection closed, which a process's shutdown
    /// may or may not reach), or a snapshot taken while a process that may write the file
    /// ran: its own non-empty `frozen` list says so, or, for a row of the driver's
    /// database-files.json without that field, the lab's background steps do.
    pub fn unsettled(&self, rel: &str, value: &Value) -> bool {
        let side = value
            .get("file")
            .and_then(Value::as_str)
            .is_some_and(|f| SIDE_SUFFIXES.iter().any(|s| f.ends_with(s)));
        if side {
            return true;
        }
        // The driver lists the background steps it stopped for the snapshot: which of
        // their commits the files show depends on timing.
        if let Some(frozen) = value.get("frozen").and_then(Value::as_array) {
            return !frozen.is_empty();
        }
        if rel != "database-files.json" {
            return false;
        }
        let (Some(scenario), Some(step)) = (
            value.get("scenario").and_then(Value::as_str),
            value.get("after_step").and_then(Value::as_str),
        ) else {
            return false;
        };
        self.background
            .contains(&(scenario.to_string(), step.to_string()))
    }
}

/// The steps after which a background step of the same scenario was still running: it was
/// started at or before the step and stops after it (or at the scenario's end).
pub fn background_steps(lab: &crate::engine::LabStack) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for scenario in (lab.scenarios)() {
        let names: Vec<&str> = scenario.steps.iter().map(|s| s.name.as_str()).collect();
        for (i, step) in scenario.steps.iter().enumerate() {
            let running = scenario.steps[..=i].iter().any(|b| {
                b.background.is_some_and(|bg| match bg.stop_after {
                    None => true,
                    Some(after) => names
                        .iter()
                        .position(|n| *n == after)
                        .is_none_or(|at| at >= i),
                })
            });
            if running {
                out.insert((scenario.name.clone(), step.name.clone()));
            }
        }
    }
    out
}

/// Keep only the listed paths (`key` or `key.sub`) of a JSON object.
pub fn only(value: &Value, paths: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    for path in paths {
        let mut parts = path.splitn(2, '.');
        let head = parts.next().unwrap_or_default();
        let Some(v) = value.get(head) else { continue };
        match parts.next() {
            None => {
                out.insert(head.to_string(), v.clone());
            }
            Some(sub) => {
                if let Some(inner) = v.get(sub) {
                    let slot = out
                        .entry(head.to_string())
                        .or_insert_with(|| Value::Object(serde_json::Map::new()));
                    if let Value::Object(m) = slot {
                        m.insert(sub.to_string(), inner.clone());
                    }
                }
            }
        }
    }
    Value::Object(out)
}

/// The leaf paths of `value` (to depth 2) that `paths` leave out: what is not compared.
pub fn left_out(value: &Value, paths: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(map) = value {
        for (k, v) in map {
            if paths.contains(&k.as_str()) {
                continue;
            }
            match v {
                Value::Object(inner) if paths.iter().any(|p| p.starts_with(&format!("{k}."))) => {
                    for sub in inner.keys() {
                        let path = format!("{k}.{sub}");
                        if !paths.contains(&path.as_str()) {
                            out.push(path);
                        }
                    }
                }
                _ => out.push(k.clone()),
            }
        }
    }
    out
}

/// Drop these top-level keys of a JSON object.
pub fn all_but(value: &Value, keys: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The lab whose driver runs the scenario these tests name (a receiver in the
    /// background while two dispatchers run).
    fn two_dispatchers_lab() -> &'static crate::engine::LabStack {
        crate::engine::registry::first_with(|lab| {
            (lab.scenarios)()
                .iter()
                .any(|s| s.name == "two-dispatchers")
        })
        .expect("a lab has the two-dispatchers scenario")
    }

    /// The lab that is put under load (chaos, bench).
    fn load_lab() -> &'static crate::engine::LabStack {
        crate::engine::registry::stacks()
            .find(|lab| lab.load.is_some())
            .expect("a lab has a load profile")
    }

    #[test]
    fn receiver_steps_are_background_and_the_load_lab_has_none() {
        let background = background_steps(two_dispatchers_lab());
        assert!(background.contains(&("two-dispatchers".into(), "dispatch-first".into())));
        assert!(background.contains(&("two-dispatchers".into(), "final".into())));
        // Before its receiver starts, a scenario's first step runs alone.
        assert!(!background.contains(&("two-dispatchers".into(), "intent".into())));
        assert!(background_steps(load_lab()).is_empty());
    }

    #[test]
    fn frozen_says_it_first() {
        let scope = Scope::new(Kind::Driver, two_dispatchers_lab().id());
        let row = json!({"scenario": "two-dispatchers", "after_step": "dispatch-first"});
        assert!(scope.unsettled("database-files.json", &row));
        assert!(!scope.unsettled("other.json", &row));
        let mut quiet = row.clone();
        quiet["frozen"] = json!([]);
        assert!(!scope.unsettled("database-files.json", &quiet));
        assert!(scope.unsettled("x.json", &json!({"frozen": ["receiver"]})));
        // A side file is housekeeping, settled or not.
        let wal = json!({"scenario": "two-dispatchers", "after_step": "intent", "file": "intents.db-wal"});
        assert!(scope.unsettled("database-files.json", &wal));
        assert!(!scope.unsettled(
            "database-files.json",
            &json!({"scenario": "two-dispatchers", "after_step": "intent", "file": "intents.db"})
        ));
    }

    #[test]
    fn side_files_of_kept_databases_are_compared_through_their_rows() {
        let explore = Scope::new(Kind::Explore, load_lab().id());
        assert!(matches!(
            explore.rule("cases/v/p@1/db/queue.db-wal"),
            Rule::Side
        ));
        assert!(matches!(
            explore.rule("cases/v/p@1/db/queue.db"),
            Rule::Everything
        ));
        assert!(matches!(
            explore.rule("cases/v/p@1/x.db-wal"),
            Rule::Everything
        ));
        let chaos = Scope::new(Kind::Chaos, load_lab().id());
        assert!(matches!(chaos.rule("db/receiver.db-shm"), Rule::Side));
        assert!(matches!(chaos.rule("chaos.json"), Rule::Only(_)));
        assert!(matches!(chaos.rule("logs/sender.1.stdout.txt"), Rule::Skip));
    }

    #[test]
    fn chaos_paths_kept_and_left_out() {
        let v = json!({"ok": true, "wall_ms": 3, "check": {"inbox": 5, "physical_deliveries": 7}});
        let paths = &["ok", "check.inbox"];
        assert_eq!(only(&v, paths), json!({"ok": true, "check": {"inbox": 5}}));
        let mut out = left_out(&v, paths);
        out.sort();
        assert_eq!(out, vec!["check.physical_deliveries", "wall_ms"]);
        assert_eq!(all_but(&v, &["check"]), json!({"ok": true, "wall_ms": 3}));
    }
}
