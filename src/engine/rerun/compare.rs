//! Compare two runs' outputs by normalised value, line by line and JSON field by JSON field,
//! and name each difference: the file, the line or JSON path, the recorded value, the rerun's.
//!
//! Nothing here knows a field of the evidence: lines and fields are compared as they come,
//! so a new field or a new line kind is compared without a change here. Order: the lines of
//! a file are compared in order; when only their order differs (the lab 13 receiver's worker
//! threads interleave their lines as they are scheduled), the file is noted as reordered, not
//! counted as a difference. Array elements are paired by position when their identity
//! strings agree, else by identity, so one inserted row does not shift every later one.

use serde::Serialize;
use serde_json::Value;

use super::normalise;
use super::pair::pair;

/// The most differences kept; the rest are counted.
pub const DIFFERENCES_MAX: usize = 10_000;
/// A value shown in a difference is cut to this many characters.
const SHOWN_CHARS_MAX: usize = 240;
/// String fields that name an array element in a path (`[3 outbox-inbox/business-crash]`).
const LABEL_KEYS: &[&str] = &["scenario", "after_step", "step", "file", "variant", "point"];

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Difference {
    pub file: String,
    /// `line 12`, `rerun line 13`, a JSON path, or `file` for the file itself.
    pub at: String,
    pub recorded: String,
    pub rerun: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Comparison {
    pub files: usize,
    pub lines: usize,
    pub fields: usize,
    pub differences: Vec<Difference>,
    /// Differences beyond DIFFERENCES_MAX, counted only.
    pub differences_more: usize,
    /// Files whose lines are the same, in another order.
    pub reordered: Vec<String>,
    /// Rows taken while a writer ran that one run has and the other has not.
    pub unsettled_only: Vec<String>,
}

impl Comparison {
    pub fn differ(&mut self, file: &str, at: &str, recorded: &str, rerun: &str) {
        if self.differences.len() >= DIFFERENCES_MAX {
            self.differences_more += 1;
            return;
        }
        self.differences.push(Difference {
            file: file.to_string(),
            at: at.to_string(),
            recorded: shown(recorded),
            rerun: shown(rerun),
        });
    }

    pub fn different(&self) -> usize {
        self.differences.len() + self.differences_more
    }
}

fn shown(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS_MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(SHOWN_CHARS_MAX).collect();
    format!("{cut}…")
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Whether a JSON object is a snapshot taken while a process that may write it ran: only its
/// identity (its string fields) is deterministic. Given per file by the caller.
pub type Unsettled<'a> = &'a dyn Fn(&Value) -> bool;

pub fn never(_: &Value) -> bool {
    false
}

/// Compare two texts line by line.
pub fn text(cmp: &mut Comparison, file: &str, recorded: &str, rerun: &str) {
    let rec: Vec<&str> = recorded.lines().collect();
    let rer: Vec<&str> = rerun.lines().collect();
    cmp.lines += rec.len().max(rer.len());
    let rec_n: Vec<(String, String)> = rec
        .iter()
        .map(|l| (normalise::line(l), String::new()))
        .collect();
    let rer_n: Vec<(String, String)> = rer
        .iter()
        .map(|l| (normalise::line(l), String::new()))
        .collect();
    if rec_n == rer_n {
        return;
    }
    let (pairs, rec_only, rer_only) = pair(&rec_n, &rer_n);
    if pairs.is_empty() && rec_only.is_empty() && rer_only.is_empty() {
        cmp.reordered.push(file.to_string());
        return;
    }
    for (i, j) in pairs {
        let at = if i == j {
            format!("line {}", i + 1)
        } else {
            format!("line {} (rerun line {})", i + 1, j + 1)
        };
        // A JSON line (a readback) is compared field by field, to name the field.
        let parsed = (
            serde_json::from_str::<Value>(rec[i]),
            serde_json::from_str::<Value>(rer[j]),
        );
        match parsed {
            (Ok(a), Ok(b)) if a.is_object() || a.is_array() => {
                let before = cmp.different();
                let kept = cmp.differences.len();
                json(cmp, file, "", &a, &b, &never);
                for d in &mut cmp.differences[kept..] {
                    d.at = format!("{at} {}", d.at);
                }
                if cmp.different() == before {
                    // Equal once parsed: the text differs in layout only, which still counts.
                    cmp.differ(file, &at, rec[i], rer[j]);
                }
            }
            _ => cmp.differ(file, &at, rec[i], rer[j]),
        }
    }
    for i in rec_only {
        cmp.differ(file, &format!("line {}", i + 1), rec[i], "(no such line)");
    }
    for j in rer_only {
        cmp.differ(
            file,
            &format!("rerun line {}", j + 1),
            "(no such line)",
            rer[j],
        );
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The identity of an array element: its label strings, `scenario/after_step/file`.
fn label(value: &Value) -> String {
    let Value::Object(map) = value else {
        return String::new();
    };
    LABEL_KEYS
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("/")
}

fn element(path: &str, index: usize, value: &Value) -> String {
    let label = label(value);
    if label.is_empty() {
        format!("{path}[{index}]")
    } else {
        format!("{path}[{index} {label}]")
    }
}

/// The leaf values of a JSON value: the fields a comparison of it covers.
pub fn leaves(value: &Value) -> usize {
    match value {
        Value::Object(map) => map.values().map(leaves).sum(),
        Value::Array(items) => items.iter().map(leaves).sum(),
        _ => 1,
    }
}

/// Compare two JSON values field by field, by normalised value.
pub fn json(
    cmp: &mut Comparison,
    file: &str,
    path: &str,
    recorded: &Value,
    rerun: &Value,
    unsettled: Unsettled<'_>,
) {
    match (recorded, rerun) {
        (Value::Object(a), Value::Object(b)) => {
            let settled = !unsettled(recorded) && !unsettled(rerun);
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let at = join(path, key);
                if normalise::key_placeholder(key).is_some() {
                    // A measurement or a fact of the machine or build: not compared.
                    continue;
                }
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        // Of a snapshot taken while a writer ran, only the identity counts.
                        if settled || LABEL_KEYS.contains(&key.as_str()) {
                            json(cmp, file, &at, x, y, unsettled);
                        }
                    }
                    (Some(x), None) => cmp.differ(file, &at, &compact(x), "(absent)"),
                    (None, Some(y)) => cmp.differ(file, &at, "(absent)", &compact(y)),
                    (None, None) => unreachable!("a key of the union is in one of them"),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => array(cmp, file, path, a, b, unsettled),
        _ => {
            if normalise::json(recorded) != normalise::json(rerun) {
                cmp.differ(file, path, &compact(recorded), &compact(rerun));
            }
        }
    }
}

fn array(
    cmp: &mut Comparison,
    file: &str,
    path: &str,
    a: &[Value],
    b: &[Value],
    unsettled: Unsettled<'_>,
) {
    let by_position = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| label(x) == label(y));
    if by_position {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            json(cmp, file, &element(path, i, x), x, y, unsettled);
        }
        return;
    }
    let keyed = |items: &[Value]| -> Vec<(String, String)> {
        items
            .iter()
            .map(|v| (compact(&normalise::json(v)), label(v)))
            .collect()
    };
    let (rec, rer) = (keyed(a), keyed(b));
    let (pairs, rec_only, rer_only) = pair(&rec, &rer);
    for (i, j) in pairs {
        json(cmp, file, &element(path, i, &a[i]), &a[i], &b[j], unsettled);
    }
    for (only, items, recorded_side) in [(rec_only, a, true), (rer_only, b, false)] {
        for i in only {
            let at = element(path, i, &items[i]);
            if unsettled(&items[i]) {
                let side = if recorded_side { "recorded" } else { "rerun" };
                cmp.unsettled_only
                    .push(format!("{file} {at} ({side} only)"));
            } else if recorded_side {
                cmp.differ(file, &at, &compact(&items[i]), "(no such element)");
            } else {
                cmp.differ(
                    file,
                    &format!("rerun {at}"),
                    "(no such element)",
                    &compact(&items[i]),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as j;

    #[test]
    fn equal_after_normalising_is_no_difference() {
        let mut cmp = Comparison::default();
        text(
            &mut cmp,
            "a.txt",
            "READY 1234\nSQL x = 1796244792039\n",
            "READY 4321\nSQL x = 1796244799999\n",
        );
        assert_eq!(cmp.different(), 0);
        assert_eq!(cmp.lines, 2);
    }

    #[test]
    fn a_changed_readback_field_is_named_by_line_and_path() {
        let mut cmp = Comparison::default();
        let rec = "SQL a\n{\"receiver\":{\"inbox\":1,\"ledger\":26}}\n";
        let rer = "SQL a\n{\"receiver\":{\"inbox\":1,\"ledger\":25}}\n";
        text(&mut cmp, "after.stdout.txt", rec, rer);
        assert_eq!(
            cmp.differences,
            vec![Difference {
                file: "after.stdout.txt".into(),
                at: "line 2 receiver.ledger".into(),
                recorded: "26".into(),
                rerun: "25".into(),
            }]
        );
    }

    #[test]
    fn reordered_lines_are_a_note_and_missing_lines_a_difference() {
        let mut cmp = Comparison::default();
        text(&mut cmp, "r.txt", "a\nb\nc\n", "a\nc\nb\n");
        assert_eq!(cmp.different(), 0);
        assert_eq!(cmp.reordered, vec!["r.txt".to_string()]);
        let mut cmp = Comparison::default();
        text(&mut cmp, "r.txt", "a\nb\nc\n", "a\nc\n");
        assert_eq!(cmp.differences.len(), 1);
        assert_eq!(cmp.differences[0].at, "line 2");
        assert_eq!(cmp.differences[0].rerun, "(no such line)");
        let mut cmp = Comparison::default();
        text(&mut cmp, "r.txt", "a\nc\n", "a\nx\nc\n");
        assert_eq!(cmp.differences[0].at, "rerun line 2");
    }

    #[test]
    fn json_fields_by_path_with_measurements_ignored() {
        let rec = j!({"wall_ms": 1.0, "processes": [{"step": "s1", "exit": 73, "max_rss_kb": 1}]});
        let rer = j!({"wall_ms": 9.0, "processes": [{"step": "s1", "exit": 0, "max_rss_kb": 7}], "new": 1});
        let mut cmp = Comparison::default();
        json(&mut cmp, "p.json", "", &rec, &rer, &never);
        let at: Vec<&str> = cmp.differences.iter().map(|d| d.at.as_str()).collect();
        assert_eq!(at, vec!["new", "processes[0 s1].exit"]);
        assert_eq!(cmp.differences[1].recorded, "73");
        assert_eq!(cmp.differences[1].rerun, "0");
    }

    #[test]
    fn an_inserted_row_does_not_shift_the_others() {
        let row = |file: &str, bytes: u64| j!({"after_step": "s", "file": file, "bytes": bytes});
        let rec = j!([row("a.db", 1), row("b.db", 2), row("c.db", 3)]);
        let rer = j!([
            row("a.db", 1),
            row("a.db-journal", 9),
            row("b.db", 2),
            row("c.db", 4)
        ]);
        let mut cmp = Comparison::default();
        json(&mut cmp, "d.json", "", &rec, &rer, &never);
        let at: Vec<&str> = cmp.differences.iter().map(|d| d.at.as_str()).collect();
        assert_eq!(at, vec!["[2 s/c.db].bytes", "rerun [1 s/a.db-journal]"]);
    }

    #[test]
    fn unsettled_rows_compare_their_identity_only() {
        let row = |file: &str, exists: bool, frozen: bool| j!({"after_step": "s", "file": file, "exists": exists, "frozen": frozen});
        let unsettled = |v: &Value| v["frozen"] == j!(false);
        let rec = j!([row("a.db", false, false), row("b.db", true, true)]);
        let rer = j!([
            row("a.db", true, false),
            row("a.db-journal", true, false),
            row("b.db", false, true)
        ]);
        let mut cmp = Comparison::default();
        json(&mut cmp, "d.json", "", &rec, &rer, &unsettled);
        let at: Vec<&str> = cmp.differences.iter().map(|d| d.at.as_str()).collect();
        assert_eq!(at, vec!["[1 s/b.db].exists"]);
        assert_eq!(
            cmp.unsettled_only,
            vec!["d.json [1 s/a.db-journal] (rerun only)".to_string()]
        );
    }
}
