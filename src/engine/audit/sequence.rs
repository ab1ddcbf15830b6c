//! Comparing a recorded sequence (processes, results, rows) with the one the run must have
//! written, naming what is missing, added, duplicated or out of order.

use std::collections::BTreeMap;

/// The differences between `found` and `expected`, at most `limit` of them (one edit can
/// shift everything after it; the first few say what happened).
pub fn differences(expected: &[String], found: &[String], limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    if expected == found {
        return out;
    }
    let count = |items: &[String]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for i in items {
            *m.entry(i.clone()).or_insert(0) += 1;
        }
        m
    };
    let want = count(expected);
    let have = count(found);
    // Walk `expected` in order so the messages follow the run.
    let mut said = std::collections::BTreeSet::new();
    for item in expected.iter().chain(found) {
        if !said.insert(item.clone()) {
            continue;
        }
        let (w, h) = (
            want.get(item).copied().unwrap_or(0),
            have.get(item).copied().unwrap_or(0),
        );
        match (w, h) {
            (w, 0) if w > 0 => out.push(format!("{item} is missing")),
            (0, h) if h > 0 => out.push(format!("{item} is not one the run has")),
            (w, h) if h > w => out.push(format!("{item} is recorded {}", times(h))),
            (w, h) if h < w => out.push(format!("{item} is recorded {h} of {}", times(w))),
            _ => {}
        }
    }
    if out.is_empty() {
        // The same items, another order: name the first one out of place.
        if let Some(i) = expected.iter().zip(found).position(|(e, f)| e != f) {
            out.push(format!(
                "out of order: entry {} is {}, the run's order has {}",
                i + 1,
                found[i],
                expected[i]
            ));
        }
    }
    if out.len() > limit {
        let more = out.len() - limit;
        out.truncate(limit);
        out.push(format!(
            "and {}",
            crate::out::plural(more, "more difference", "more differences")
        ));
    }
    out
}

/// `1 time`, `3 times`.
fn times(n: usize) -> String {
    crate::out::plural(n, "time", "times")
}

#[cfg(test)]
mod tests {
    use super::differences;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_missing_added_duplicated_and_reordered() {
        let run = v(&["a", "b", "c"]);
        assert!(differences(&run, &run, 10).is_empty());
        assert_eq!(differences(&run, &v(&["a", "c"]), 10), ["b is missing"]);
        assert_eq!(
            differences(&run, &v(&["a", "b", "c", "d"]), 10),
            ["d is not one the run has"]
        );
        assert_eq!(
            differences(&run, &v(&["a", "b", "b", "c"]), 10),
            ["b is recorded 2 times"]
        );
        assert_eq!(
            differences(&run, &v(&["a", "c", "b"]), 10),
            ["out of order: entry 2 is c, the run's order has b"]
        );
        let many: Vec<String> = (0..30).map(|i| i.to_string()).collect();
        let out = differences(&many, &[], 3);
        assert_eq!(out.len(), 4);
        assert_eq!(out[3], "and 27 more differences");
    }
}
