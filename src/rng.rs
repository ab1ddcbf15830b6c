//! A seeded generator (splitmix64): amounts and kill schedules replay from the seed alone.

pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (the bias of a modulo over 2^64 is far below what matters here).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high);
        low + self.next_u64() % (high - low + 1)
    }
}

/// `count` amounts from 1 to 1000, the same for the same seed.
pub fn amounts(seed: u64, count: usize) -> Vec<i64> {
    let mut rng = SplitMix64::new(seed);
    (0..count).map(|_| rng.range(1, 1000) as i64).collect()
}
