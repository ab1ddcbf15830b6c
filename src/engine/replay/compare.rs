//! The recorded states against the replayed ones: logical digests of the files, and every
//! field of every readback.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use rusqlite::Connection;
use serde_json::Value;

use super::engine::Store;
use super::load::Row;
use super::walk::Proc;
use super::Problems;
use crate::engine::files::logical_sha256_conn;
use crate::engine::{Databases, LabStack};

/// The logical digest of a database with nothing in it (a file just created).
pub fn empty_digest() -> &'static str {
    static EMPTY: OnceLock<String> = OnceLock::new();
    EMPTY.get_or_init(|| {
        Connection::open_in_memory()
            .map_err(anyhow::Error::from)
            .and_then(|c| logical_sha256_conn(&c))
            .unwrap_or_default()
    })
}

/// Does the replayed file match the row? Err((recorded, replayed)), each as the audit says it.
pub fn digest(store: &Store, row: &Row) -> Result<(), (String, String)> {
    let replayed = store.digest(&row.file);
    let recorded = if row.exists {
        Some(
            row.logical_sha256
                .clone()
                .unwrap_or_else(|| "(none)".to_string()),
        )
    } else {
        None
    };
    if recorded == replayed {
        return Ok(());
    }
    let say = |v: Option<String>, absent: &str| v.unwrap_or_else(|| absent.to_string());
    Err((
        say(recorded, "(file does not exist)"),
        say(replayed, "(no statement ran on it: no file)"),
    ))
}

/// The readback a readback step would print on the replayed files; `None` for a step whose
/// phase prints none. The lab on the stack being replayed answers: one role may read back
/// on several stacks, each its own way.
pub fn readback(
    lab: &LabStack,
    phase: &str,
    files: &BTreeMap<String, String>,
    store: &Store,
) -> Result<Option<Value>, String> {
    // A reader reads a file holding nothing (a cut can leave it so) as an empty database of
    // its kind; a cut never reaches a server's store.
    let empties: Vec<(&str, Connection)> = files
        .iter()
        .filter(|_| lab.stack.is_none())
        .filter(|(_, file)| store.conn(file).is_some() && store.holds_nothing(file))
        .filter_map(|(flag, file)| {
            let mut empty = Store::default();
            let schema = lab.schemas.iter().find(|s| s.db == flag.as_str())?;
            empty.create(file, schema);
            Some((flag.as_str(), empty.take(file)?))
        })
        .collect();
    let dbs: Databases<'_> = files
        .iter()
        .filter_map(|(flag, file)| {
            let empty = empties.iter().find(|(f, _)| *f == flag.as_str());
            empty
                .map(|(_, c)| c)
                .or_else(|| store.conn(file))
                .map(|c| (flag.as_str(), c))
        })
        .collect();
    (lab.readback)(phase, &dbs).transpose()
}

/// The part of a readback one file decides: its object, and whether it is named absent.
pub fn readback_part(recorded: &Value, replayed: &Value, flag: &str) -> bool {
    let absent = |v: &Value| {
        v["absent"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(flag)))
    };
    recorded.get(flag) == replayed.get(flag) && absent(recorded) == absent(replayed)
}

/// Leaves of a JSON object by dotted path (arrays are leaves).
fn flatten(value: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &path, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// Every field of a readback against the replayed files.
pub fn readback_all(
    lab: &LabStack,
    scenario: &str,
    reader: &Proc<'_>,
    recorded: &Value,
    store: &Store,
    held: &str,
    problems: &mut Problems,
) {
    let file = reader.record.stdout.clone();
    let step = &reader.step.name;
    let replayed = match readback(lab, reader.step.phase, &reader.files, store) {
        Ok(Some(v)) => v,
        Ok(None) => return,
        Err(e) => {
            problems.push((
                file,
                format!("{scenario}/{step}: readback not replayable: {e}"),
            ));
            return;
        }
    };
    let (mut want, mut got) = (BTreeMap::new(), BTreeMap::new());
    flatten(recorded, "", &mut want);
    flatten(&replayed, "", &mut got);
    let paths: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    for path in paths {
        let (w, g) = (want.get(path), got.get(path));
        if w != g {
            let show = |v: Option<&Value>| v.map_or("(missing)".to_string(), Value::to_string);
            problems.push((
                file.clone(),
                format!(
                    "{scenario}/{step}: readback field {path}: recorded {}, the replayed history gives {}{held}",
                    show(w),
                    show(g)
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_part_compares_the_object_and_its_absence() {
        let a = json!({"absent": ["queue"], "queue": {"n": 0}, "sender": {"n": 1}});
        let b = json!({"absent": [], "queue": {"n": 0}, "sender": {"n": 1}});
        assert!(readback_part(&a, &b, "sender"));
        assert!(!readback_part(&a, &b, "queue"));
        let mut out = BTreeMap::new();
        flatten(&a, "", &mut out);
        assert_eq!(out["sender.n"], json!(1));
        assert_eq!(out["absent"], json!(["queue"]));
    }

    #[test]
    fn the_empty_digest_is_a_digest() {
        assert_eq!(empty_digest().len(), 64);
    }
}
