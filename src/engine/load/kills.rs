//! Chaos' nemesis: a SIGKILL from outside, at moments drawn from the seed, of a process
//! drawn from those running then. Unlike the driver's crashes it is armed at no point (the
//! role does not know it is coming), so it is a kill the engine makes, not a crash the role
//! makes; it still speaks through `engine::nemesis::Nemesis`, so the evidence records its
//! name and expected exit the way it does for every fault.

use serde::{Deserialize, Serialize};

use crate::engine::nemesis::Nemesis;
use crate::rng::SplitMix64;

/// A SIGKILL sent by the engine to a running role at a moment of its choosing.
pub struct OutsideKill;

impl Nemesis for OutsideKill {
    fn name(&self) -> &'static str {
        "sigkill"
    }

    /// Armed at no point: the process is not told.
    fn arm(&self, _point: &str) -> Vec<String> {
        Vec::new()
    }

    fn expected_exit(&self) -> i32 {
        128 + libc::SIGKILL
    }

    /// A killed process prints nothing more: it has no last line of its own.
    fn crash_line(&self, _point: &str) -> String {
        String::new()
    }

    fn needs_kill(&self) -> bool {
        true
    }
}

/// The one nemesis chaos uses.
pub static NEMESIS: OutsideKill = OutsideKill;

/// The kill moments for `kills` kills over `units` units of work, from the seed alone, and the
/// stream that picks the victims. They lie in the first 95% of the work, so each one finds a
/// role still at work.
pub fn schedule(seed: u64, units: u64, kills: usize) -> (Vec<u64>, SplitMix64) {
    // A stream of its own, so the items' values (rng::amounts(seed, ..)) and the kills
    // never overlap.
    let mut rng = SplitMix64::new(seed ^ 0x6b69_6c6c_7363_6864);
    let high = (units * 95 / 100).max(1) - 1;
    let mut at: Vec<u64> = (0..kills).map(|_| rng.range(0, high)).collect();
    at.sort_unstable();
    (at, rng)
}

/// One kill the engine made (a row of kills.json); read strictly, so a field chaos does not
/// write makes a malformed row (the audit relies on it).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    pub kill: usize,
    /// The scheduled moment, in progress units.
    pub at_units: u64,
    /// Progress when the signal was sent.
    pub progress_units: u64,
    pub role: String,
    pub step: String,
    pub since_start_ms: f64,
    /// False when the process had already ended by itself: the kill is made again.
    pub landed: bool,
    /// Under power loss: a role killed with the victim of the row before it, for the cut
    /// (never made again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_the_seeds_sorted_and_inside_the_first_95_percent() {
        let (a, _) = schedule(7, 900, 30);
        let (b, _) = schedule(7, 900, 30);
        assert_eq!(a, b, "the same seed gives the same moments");
        assert_eq!(a.len(), 30);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(a.iter().all(|&u| u < 855), "{a:?}");
        assert_ne!(schedule(8, 900, 30).0, a);
        assert!(schedule(1, 0, 3).0.iter().all(|&u| u == 0));
    }

    #[test]
    fn the_outside_kill_is_armed_nowhere_and_ends_with_sigkill() {
        assert!(NEMESIS.arm("any.point").is_empty());
        assert_eq!(NEMESIS.expected_exit(), 137);
        assert!(NEMESIS.needs_kill());
        assert_eq!(NEMESIS.name(), "sigkill");
    }
}
