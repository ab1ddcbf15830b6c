//! Every state a power cut may leave, enumerated instead of sampled (`--cut exhaustive`).
//!
//! Input: the unsynced acts at a crash point, in issue order (writes and truncates since
//! their file's last sync, creates and unlinks since their directory's last sync), each
//! with the file it belongs to and the 512-byte sectors it spans. Output: the states, each
//! one fate per act (kept, dropped, or torn: its first sectors reached the disk, the rest
//! did not). Pure logic: what the states do to the files is `cut::image`'s.
//!
//! The states, as ALICE and CrashMonkey build them, within bounds:
//! - every prefix of the acts in issue order (the crash after each act);
//! - every single omission: up to a prefix, one earlier act lost while the later ones
//!   survived (ALICE's reordering, about N²/2 states);
//! - every torn last act of a prefix, at sector granularity, unless the store declares
//!   atomic writes;
//! - per file, independently: one file's acts are not ordered against another's, so the
//!   states are the product of each file's prefixes, omissions and torn last acts;
//! - every subset of the acts when there are at most `SUBSETS_ACTS_MAX` of them.
//!
//! No state is listed twice. When there are more than `Bounds::max_states`, the prefixes
//! come first (in issue order), then the omissions and torn acts, then the rest of the
//! product and the subsets, each past the bound taken in an order the seed decides; the
//! space is then `bounded`, never complete.

use std::collections::HashSet;

use crate::rng::SplitMix64;

/// The states run per crash point unless `--max-states` says otherwise.
pub const MAX_STATES_DEFAULT: usize = 4096;
/// The largest `--max-states`: each state is processes run; a million is days of work.
pub const MAX_STATES_MAX: usize = 1 << 20;
/// Up to this many unsynced acts, every subset is a state (2^12 = 4,096 of them).
pub const SUBSETS_ACTS_MAX: usize = 12;

/// One unsynced act as the enumeration sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Act {
    /// The file it belongs to (any number that tells files apart).
    pub file: u32,
    /// The sectors a write spans; a write of one sector, a truncate, a create or an unlink
    /// (0) cannot tear.
    pub sectors: u64,
}

/// What becomes of one act in a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fate {
    Kept,
    Dropped,
    /// Its first N sectors reached the disk, the rest did not (1 ≤ N < its sectors).
    Torn(u32),
}

/// The bounds of one enumeration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_states: usize,
    /// Decides the order of what is taken past the bound.
    pub seed: u64,
    /// Whether a write may tear (false: the store declares atomic writes).
    pub tear: bool,
}

/// The states of one crash point.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// One fate per act, per state; the first is "every act lost" (what `drop` leaves).
    pub states: Vec<Vec<Fate>>,
    /// How many states there are: exact when `exact`, else an upper bound.
    pub total: f64,
    pub exact: bool,
    /// More states than the bound: `states` is a seeded selection of them.
    pub bounded: bool,
}

impl Space {
    /// `523`, `4096 of 9120 (bounded)` or `4096 of ~2^20 (bounded)`: how the table and the
    /// report say it.
    pub fn describe(&self) -> String {
        describe(self.states.len(), self.total, self.exact, self.bounded)
    }
}

/// `523`, `4096 of 9120 (bounded)` or `4096 of ~2^20 (bounded)`.
pub fn describe(states: usize, total: f64, exact: bool, bounded: bool) -> String {
    match (bounded, exact) {
        (false, _) => states.to_string(),
        (true, true) => format!("{states} of {total:.0} (bounded)"),
        (true, false) => format!("{states} of ~2^{:.0} (bounded)", total.log2().max(0.0)),
    }
}

/// One file's states over its own acts (in their order): prefixes, omissions, torn last acts.
fn file_states(sectors: &[u64], tear: bool) -> Vec<Vec<Fate>> {
    let k = sectors.len();
    let prefix = |p: usize| -> Vec<Fate> {
        (0..k)
            .map(|j| if j < p { Fate::Kept } else { Fate::Dropped })
            .collect()
    };
    let mut out: Vec<Vec<Fate>> = (0..=k).map(prefix).collect();
    for p in 2..=k {
        for i in 0..p - 1 {
            let mut s = prefix(p);
            s[i] = Fate::Dropped;
            out.push(s);
        }
    }
    if tear {
        for p in 1..=k {
            for kept in 1..sectors[p - 1].min(u64::from(u32::MAX)) as u32 {
                let mut s = prefix(p);
                s[p - 1] = Fate::Torn(kept);
                out.push(s);
            }
        }
    }
    out
}

/// The prefixes of all acts in issue order: "every act lost" first.
fn prefixes(n: usize) -> impl Iterator<Item = Vec<Fate>> {
    (0..=n).map(move |p| {
        (0..n)
            .map(|j| if j < p { Fate::Kept } else { Fate::Dropped })
            .collect()
    })
}

/// ALICE's omissions (one earlier act lost, up to a prefix), then torn last acts.
fn omissions_and_tears(acts: &[Act], tear: bool) -> Vec<Vec<Fate>> {
    let n = acts.len();
    let mut out = Vec::new();
    for p in 2..=n {
        for i in 0..p - 1 {
            let mut s: Vec<Fate> = (0..n)
                .map(|j| if j < p { Fate::Kept } else { Fate::Dropped })
                .collect();
            s[i] = Fate::Dropped;
            out.push(s);
        }
    }
    if tear {
        for p in 1..=n {
            for kept in 1..acts[p - 1].sectors.min(u64::from(u32::MAX)) as u32 {
                let mut s: Vec<Fate> = (0..n)
                    .map(|j| if j < p { Fate::Kept } else { Fate::Dropped })
                    .collect();
                s[p - 1] = Fate::Torn(kept);
                out.push(s);
            }
        }
    }
    out
}

/// The acts of each file (their indices, in issue order), files in order of first act.
fn by_file(acts: &[Act]) -> Vec<Vec<usize>> {
    let mut files: Vec<(u32, Vec<usize>)> = Vec::new();
    for (j, a) in acts.iter().enumerate() {
        match files.iter_mut().find(|(f, _)| *f == a.file) {
            Some((_, v)) => v.push(j),
            None => files.push((a.file, vec![j])),
        }
    }
    files.into_iter().map(|(_, v)| v).collect()
}

/// The state of the whole that takes, for each file, its `choice[f]`-th state.
fn combine(
    n: usize,
    files: &[Vec<usize>],
    per_file: &[Vec<Vec<Fate>>],
    choice: &[usize],
) -> Vec<Fate> {
    let mut s = vec![Fate::Dropped; n];
    for ((acts, states), &c) in files.iter().zip(per_file).zip(choice) {
        for (&j, &fate) in acts.iter().zip(&states[c]) {
            s[j] = fate;
        }
    }
    s
}

/// Above this many states (an upper bound of the product and the subsets), the rest of the
/// product is drawn at random instead of listed: listing is memory, 16 bytes per act and state.
pub const LISTED_MAX: f64 = 65_536.0;

/// Every state of `acts` within `bounds`, each once.
pub fn enumerate(acts: &[Act], bounds: Bounds) -> Space {
    assert!(
        bounds.max_states >= 1,
        "at least the state with every act lost"
    );
    let n = acts.len();
    let files = by_file(acts);
    let per_file: Vec<Vec<Vec<Fate>>> = files
        .iter()
        .map(|f| {
            let sectors: Vec<u64> = f.iter().map(|&j| acts[j].sectors).collect();
            file_states(&sectors, bounds.tear)
        })
        .collect();
    let product: f64 = per_file.iter().map(|s| s.len() as f64).product();
    let subsets = n <= SUBSETS_ACTS_MAX;
    let upper = product + if subsets { (1u64 << n) as f64 } else { 0.0 };
    let mut rng = SplitMix64::new(bounds.seed);
    let mut seen: HashSet<Vec<Fate>> = HashSet::new();
    // Three tiers, each without what an earlier one holds: the prefixes; the omissions and
    // torn acts; the rest of the product and the subsets (listed when small enough).
    let mut tiers: [Vec<Vec<Fate>>; 3] = Default::default();
    for s in prefixes(n) {
        seen.insert(s.clone());
        tiers[0].push(s);
    }
    for s in omissions_and_tears(acts, bounds.tear) {
        if seen.insert(s.clone()) {
            tiers[1].push(s);
        }
    }
    let listed = upper <= LISTED_MAX;
    if listed {
        let mut choice = vec![0usize; files.len()];
        loop {
            let s = combine(n, &files, &per_file, &choice);
            if seen.insert(s.clone()) {
                tiers[2].push(s);
            }
            // The next choice in mixed radix, the last file fastest.
            let Some(f) = (0..files.len())
                .rev()
                .find(|&f| choice[f] + 1 < per_file[f].len())
            else {
                break;
            };
            choice[f] += 1;
            for c in &mut choice[f + 1..] {
                *c = 0;
            }
        }
        if subsets {
            for mask in 0u64..1 << n {
                let s: Vec<Fate> = (0..n).map(|j| kept_if(mask >> j & 1 == 1)).collect();
                if seen.insert(s.clone()) {
                    tiers[2].push(s);
                }
            }
        }
    }
    let known: usize = tiers.iter().map(Vec::len).sum();
    let total = if listed { known as f64 } else { upper };
    // Past `LISTED_MAX` the states are drawn, not listed: the set is a sample of a space
    // known only by an upper bound, so it is bounded even when the bound exceeds that upper
    // bound (a `--max-states` above `LISTED_MAX`): never reported complete.
    let bounded = !listed || total > bounds.max_states as f64;
    let mut states: Vec<Vec<Fate>> = Vec::with_capacity(bounds.max_states.min(known));
    for (t, mut tier) in tiers.into_iter().enumerate() {
        let room = bounds.max_states - states.len();
        if tier.len() > room {
            // "Every act lost" stays first; past the bound, a seeded order.
            let from = usize::from(t == 0);
            shuffle(&mut tier[from..], &mut rng);
            tier.truncate(room);
        }
        states.extend(tier);
    }
    if !listed {
        // The rest of the product (and the subsets) drawn at random: a bounded number of
        // draws, since a draw may repeat a state already taken.
        for _ in 0..8 * bounds.max_states {
            if states.len() >= bounds.max_states {
                break;
            }
            let s: Vec<Fate> = if subsets && rng.range(0, 1) == 1 {
                (0..n).map(|_| kept_if(rng.range(0, 1) == 1)).collect()
            } else {
                let choice: Vec<usize> = per_file
                    .iter()
                    .map(|s| rng.range(0, s.len() as u64 - 1) as usize)
                    .collect();
                combine(n, &files, &per_file, &choice)
            };
            if seen.insert(s.clone()) {
                states.push(s);
            }
        }
    }
    Space {
        states,
        total,
        exact: listed,
        bounded,
    }
}

fn kept_if(kept: bool) -> Fate {
    if kept {
        Fate::Kept
    } else {
        Fate::Dropped
    }
}

/// Fisher–Yates with the seeded generator.
fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        let j = rng.range(0, i as u64) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
#[path = "states_tests.rs"]
mod tests;
