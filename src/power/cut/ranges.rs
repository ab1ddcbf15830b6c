//! A set of byte ranges `[start, end)`, kept sorted and merged.

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    /// Add `[a, b)`, merging with what it touches.
    pub fn add(&mut self, a: u64, b: u64) {
        assert!(a <= b);
        if a == b {
            return;
        }
        let (mut a, mut b) = (a, b);
        // The ranges that overlap or touch [a, b) are a contiguous run.
        let first = self.0.partition_point(|&(_, e)| e < a);
        let mut last = first;
        while last < self.0.len() && self.0[last].0 <= b {
            a = a.min(self.0[last].0);
            b = b.max(self.0[last].1);
            last += 1;
        }
        self.0.splice(first..last, [(a, b)]);
        debug_assert!(self.0.windows(2).all(|w| w[0].1 < w[1].0));
    }

    /// The parts of `[a, b)` not in the set, in order.
    pub fn missing(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        assert!(a <= b);
        let mut out = Vec::new();
        let mut at = a;
        let first = self.0.partition_point(|&(_, e)| e <= a);
        for &(s, e) in &self.0[first..] {
            if s >= b {
                break;
            }
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < b {
            out.push((at, b));
        }
        out
    }

    pub fn spans(&self) -> &[(u64, u64)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_answer_what_is_missing() {
        let mut r = Ranges::default();
        r.add(10, 20);
        r.add(30, 40);
        assert_eq!(r.missing(0, 50), [(0, 10), (20, 30), (40, 50)]);
        assert_eq!(r.missing(12, 18), []);
        assert_eq!(r.missing(15, 35), [(20, 30)]);
        r.add(20, 30);
        assert_eq!(r.spans(), [(10, 40)]);
        r.add(5, 10);
        r.add(41, 42);
        assert_eq!(r.spans(), [(5, 40), (41, 42)]);
        r.add(0, 100);
        assert_eq!(r.spans(), [(0, 100)]);
        assert_eq!(r.missing(100, 101), [(100, 101)]);
    }
}
