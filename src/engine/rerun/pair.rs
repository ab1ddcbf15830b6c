//! Pair the items of two runs' sequences (the lines of a file, the elements of an array) so
//! that a difference is named once, where it is, and an inserted item does not shift every
//! later one.

use std::collections::BTreeMap;

/// The pairs that differ, the recorded-only and the rerun-only items, as indices.
pub type Pairing = (Vec<(usize, usize)>, Vec<usize>, Vec<usize>);

/// Pair the items of two sequences of (normalised key, identity label): equal keys match
/// first (they are not differences), then equal labels, then unlabelled items in order.
pub fn pair(rec: &[(String, String)], rer: &[(String, String)]) -> Pairing {
    // (normalised key, label) per item; equal keys match one to one, first come first.
    let mut by_key: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (j, (key, _)) in rer.iter().enumerate().rev() {
        by_key.entry(key).or_default().push(j);
    }
    let mut rec_left = Vec::new();
    let mut rer_used = vec![false; rer.len()];
    for (i, (key, _)) in rec.iter().enumerate() {
        match by_key.get_mut(key.as_str()).and_then(Vec::pop) {
            Some(j) => rer_used[j] = true,
            None => rec_left.push(i),
        }
    }
    let mut rer_left: Vec<usize> = (0..rer.len()).filter(|j| !rer_used[*j]).collect();
    let mut pairs = Vec::new();
    let mut rec_only = Vec::new();
    for i in rec_left {
        let label = &rec[i].1;
        let found = (!label.is_empty())
            .then(|| rer_left.iter().position(|j| &rer[*j].1 == label))
            .flatten();
        match found {
            Some(at) => pairs.push((i, rer_left.remove(at))),
            None => rec_only.push(i),
        }
    }
    // What is left unlabelled pairs up in order: a changed line against its replacement. A
    // labelled element without its namesake is in one run only.
    let unlabelled = |side: &[(String, String)], left: &mut Vec<usize>| {
        let (plain, named): (Vec<usize>, Vec<usize>) =
            left.iter().partition(|i| side[**i].1.is_empty());
        *left = named;
        plain
    };
    let mut rec_plain = unlabelled(rec, &mut rec_only);
    let mut rer_plain = unlabelled(rer, &mut rer_left);
    let n = rec_plain.len().min(rer_plain.len());
    pairs.extend(rec_plain.drain(..n).zip(rer_plain.drain(..n)));
    rec_only.extend(rec_plain);
    rer_left.extend(rer_plain);
    rec_only.sort();
    rer_left.sort();
    pairs.sort();
    (pairs, rec_only, rer_left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, l)| (k.to_string(), l.to_string()))
            .collect()
    }

    #[test]
    fn equal_keys_match_then_labels_then_unlabelled_in_order() {
        // Equal keys match wherever they are; a changed unlabelled item pairs in order.
        let rec = items(&[("a", ""), ("b", ""), ("c", "")]);
        let rer = items(&[("c", ""), ("a", ""), ("B", "")]);
        assert_eq!(pair(&rec, &rer), (vec![(1, 2)], vec![], vec![]));
        // Labelled items pair by label; one without its namesake is on one side only.
        let rec = items(&[("x1", "s/a"), ("y1", "s/b")]);
        let rer = items(&[("y2", "s/b"), ("z", "s/c"), ("x2", "s/a")]);
        assert_eq!(pair(&rec, &rer), (vec![(0, 2), (1, 0)], vec![], vec![1]));
        // Repeated keys match one to one.
        let rec = items(&[("a", ""), ("a", "")]);
        let rer = items(&[("a", "")]);
        assert_eq!(pair(&rec, &rer), (vec![], vec![1], vec![]));
    }
}
