//! Where a background step's commits go. The evidence records each database's state after
//! each step, not when each commit happened; a background step runs beside several steps, so
//! its commits are put in the columns where the database it names changed while it ran.

/// A database after a step: whether it exists, and its logical digest.
pub type State = (bool, Option<String>);

/// Per column: the database changed during that step, from the column before in the same
/// scenario (nothing before a scenario's first column). A change after a scenario's last
/// step (`<end>`: a server stopping) counts for that last column. Pure.
pub fn changed(states: &[State], ends: &[State], scenario_of: &[&str]) -> Vec<bool> {
    let n = states.len();
    assert_eq!(ends.len(), n);
    assert_eq!(scenario_of.len(), n);
    let absent: State = (false, None);
    (0..n)
        .map(|c| {
            let first = c == 0 || scenario_of[c - 1] != scenario_of[c];
            let before = if first { &absent } else { &states[c - 1] };
            let last = c + 1 == n || scenario_of[c + 1] != scenario_of[c];
            let after_end = last && ends[c].0 && ends[c] != states[c];
            &states[c] != before || after_end
        })
        .collect()
}

/// The columns of `commits` commits of one background step on one database, given the
/// columns where that database changed while the step ran (ascending). The commits are
/// aligned from the end: the last commit in the last change, the one before in the change
/// before. A step's early changes are most often its schema being made at its start, which
/// reports no commit; extra commits share the first change. No change at all: `fallback`.
pub fn background_columns(commits: usize, windows: &[usize], fallback: usize) -> Vec<usize> {
    debug_assert!(windows.windows(2).all(|w| w[0] < w[1]));
    if windows.is_empty() {
        return vec![fallback; commits];
    }
    let m = windows.len();
    let placed: Vec<usize> = (0..commits)
        .map(|j| {
            // Index of commit j when the last commit meets the last window.
            let from_end = commits - 1 - j;
            windows[m.saturating_sub(1 + from_end)]
        })
        .collect();
    debug_assert!(placed.windows(2).all(|w| w[0] <= w[1]), "in order");
    placed
}

/// The changes a background step may have made: those in columns whose own process reported
/// no commit on the database (the step's own column always counts); all of them when that
/// leaves none.
pub fn unexplained(span: &[usize], start: usize, own: &[bool]) -> Vec<usize> {
    let left: Vec<usize> = span
        .iter()
        .copied()
        .filter(|&d| d == start || !own[d])
        .collect();
    if left.is_empty() {
        span.to_vec()
    } else {
        left
    }
}
