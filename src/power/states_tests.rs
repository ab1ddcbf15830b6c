//! The state set of small hand-made write logs, checked against lists written out by hand.

use super::*;
use Fate::{Dropped as D, Kept as K, Torn as T};

const BOUNDS: Bounds = Bounds {
    max_states: MAX_STATES_DEFAULT,
    seed: 1,
    tear: true,
};

/// a0 (file a, 2 sectors), b0 (file b, 1 sector), a1 (file a, 1 sector): in issue order.
fn three() -> Vec<Act> {
    vec![
        Act {
            file: 0,
            sectors: 2,
        },
        Act {
            file: 1,
            sectors: 1,
        },
        Act {
            file: 0,
            sectors: 1,
        },
    ]
}

#[test]
fn a_small_log_gives_exactly_the_states_written_out_by_hand() {
    let space = enumerate(&three(), BOUNDS);
    // Fates of [a0, b0, a1].
    let want: Vec<Vec<Fate>> = vec![
        // Every prefix in issue order, "every act lost" first.
        vec![D, D, D],
        vec![K, D, D],
        vec![K, K, D],
        vec![K, K, K],
        // Single omissions: up to a prefix, one earlier act lost, the later ones kept.
        vec![D, K, D],
        vec![D, K, K],
        vec![K, D, K],
        // The torn last act of a prefix: a0's first sector reached the disk, its second not.
        vec![T(1), D, D],
        // Per file, independently: a's omission (a1 without a0) with b0 lost, and a's torn
        // a0 with b0 kept, which no global prefix gives.
        vec![D, D, K],
        vec![T(1), K, D],
    ];
    assert_eq!(space.states, want);
    assert!(!space.bounded && space.exact);
    assert_eq!(space.total, 10.0);
    assert_eq!(space.describe(), "10");
    // Every subset of the three acts is among them.
    for mask in 0..8u32 {
        let s: Vec<Fate> = (0..3)
            .map(|j| if mask >> j & 1 == 1 { K } else { D })
            .collect();
        assert!(space.states.contains(&s), "subset {mask:03b}");
    }
}

#[test]
fn atomic_writes_never_tear() {
    let space = enumerate(
        &three(),
        Bounds {
            tear: false,
            ..BOUNDS
        },
    );
    assert_eq!(space.states.len(), 8, "the eight subsets, nothing torn");
    assert!(space.states.iter().flatten().all(|f| !matches!(f, T(_))));
}

#[test]
fn a_write_tears_at_every_sector_boundary() {
    let space = enumerate(
        &[Act {
            file: 0,
            sectors: 4,
        }],
        BOUNDS,
    );
    assert_eq!(
        space.states,
        vec![vec![D], vec![K], vec![T(1)], vec![T(2)], vec![T(3)]]
    );
}

#[test]
fn subsets_only_up_to_twelve_acts() {
    let one_file = |n: usize| {
        vec![
            Act {
                file: 0,
                sectors: 1
            };
            n
        ]
    };
    // Acts 0 and 3 kept, 1 and 2 lost: neither a prefix nor a single omission.
    let gap = |n: usize| -> Vec<Fate> {
        (0..n)
            .map(|j| if j == 0 || j == 3 { K } else { D })
            .collect()
    };
    let twelve = enumerate(&one_file(12), BOUNDS);
    assert_eq!(twelve.states.len(), 4096);
    assert!(twelve.states.contains(&gap(12)));
    let thirteen = enumerate(&one_file(13), BOUNDS);
    // 14 prefixes and 13 × 12 / 2 omissions.
    assert_eq!(thirteen.states.len(), 14 + 78);
    assert!(!thirteen.states.contains(&gap(13)));
    assert!(!thirteen.bounded);
}

#[test]
fn no_acts_is_one_state() {
    let space = enumerate(&[], BOUNDS);
    assert_eq!(space.states, vec![Vec::<Fate>::new()]);
    assert_eq!(space.describe(), "1");
}

#[test]
fn past_the_bound_the_prefixes_come_first_then_a_seeded_order_and_it_says_bounded() {
    let bounds = Bounds {
        max_states: 5,
        ..BOUNDS
    };
    let space = enumerate(&three(), bounds);
    assert!(space.bounded && space.exact);
    assert_eq!(space.states.len(), 5);
    assert_eq!(space.states[..4], enumerate(&three(), BOUNDS).states[..4]);
    assert_eq!(space.describe(), "5 of 10 (bounded)");
    assert_eq!(
        enumerate(&three(), bounds),
        space,
        "the same seed, the same states"
    );
    // Many acts in several files: far more states than could be listed.
    let many: Vec<Act> = (0..60)
        .map(|j| Act {
            file: j % 4,
            sectors: 9,
        })
        .collect();
    let bounded = |seed| {
        enumerate(
            &many,
            Bounds {
                max_states: 300,
                seed,
                tear: true,
            },
        )
    };
    let a = bounded(1);
    assert!(a.bounded && !a.exact);
    assert_eq!(a.states.len(), 300);
    assert_eq!(a.states[0], vec![D; 60], "every act lost stays first");
    assert!(a.describe().starts_with("300 of ~2^"), "{}", a.describe());
    assert!(a.describe().ends_with("(bounded)"));
    let unique: HashSet<&Vec<Fate>> = a.states.iter().collect();
    assert_eq!(unique.len(), 300, "no state twice");
    assert_eq!(bounded(1), a);
    assert_ne!(bounded(2).states, a.states, "another seed, another order");
    // Fewer than the prefixes: "every act lost" first, then a seeded choice of prefixes.
    let tiny = enumerate(
        &many,
        Bounds {
            max_states: 3,
            seed: 1,
            tear: true,
        },
    );
    assert_eq!(tiny.states.len(), 3);
    assert_eq!(tiny.states[0], vec![D; 60]);
}

#[test]
fn a_space_too_large_to_list_is_bounded_even_under_a_larger_max_states() {
    // 46 one-sector writes in two files: 277 states per file, 76,729 in their product, more
    // than `LISTED_MAX`, so the states are drawn; a `--max-states` above that count must
    // still say bounded, since draws that repeat leave some states out.
    let acts: Vec<Act> = (0..46)
        .map(|j| Act {
            file: j % 2,
            sectors: 1,
        })
        .collect();
    let space = enumerate(
        &acts,
        Bounds {
            max_states: 100_000,
            ..BOUNDS
        },
    );
    assert!(space.total > LISTED_MAX && space.total < 100_000.0);
    assert!(!space.exact);
    assert!(space.bounded, "a drawn sample reported complete");
    assert!(
        space.describe().ends_with("(bounded)"),
        "{}",
        space.describe()
    );
}
