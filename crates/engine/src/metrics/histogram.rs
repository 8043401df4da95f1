//! Log-linear histogram of non-negative integers (sojourn times in ns).
//!
//! Values below 2^SUB_BITS are exact; above, each power of two is split into
//! 2^SUB_BITS equal buckets, so any quantile is within 1/2^SUB_BITS (0.8 %)
//! of the true value. Recording is a few integer instructions, and memory is
//! bounded (at most 43 KB), independent of the number of samples: the bucket
//! array grows, 128 buckets (1 KB) at a time, only up to the largest value
//! seen, so a queue whose sojourns stay below 2^k ns holds (k − 6) KB (a
//! fat tree has thousands of queues). The mean is exact.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Covers values up to 2^(SUB_BITS + EXP_BUCKETS) ns ≈ 2^48 ns ≈ 78 hours.
const EXP_BUCKETS: u32 = 41;
const NBUCKETS: usize = (SUB as usize) * (EXP_BUCKETS as usize + 1);

/// A histogram's bucket counts alone, 24 bytes (`repr(C)`): what a queue
/// keeps per sub-queue among its hot fields (`net::link::QueueSlot`). The
/// queue counts the same samples and their sum in its counters and keeps
/// their maximum, so it needs neither here, and gives them back when it
/// hands the histogram over ([`Buckets::into_histogram`]).
#[derive(Clone, Default)]
#[repr(C)]
pub struct Buckets {
    /// Buckets up to the largest seen so far (a multiple of SUB long).
    counts: Box<[u64]>,
    /// A run of `run_len` samples in bucket `run_bucket`, recorded but not
    /// yet counted ([`Self::record_run`]).
    run_bucket: u32,
    run_len: u32,
}

impl std::fmt::Debug for Buckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buckets(counted={}, open run={})", self.counts.iter().sum::<u64>(), self.run_len)
    }
}

impl Buckets {
    pub fn new() -> Self {
        Buckets::default()
    }

    #[inline]
    fn bucket(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = msb - SUB_BITS;
        let e = (shift + 1).min(EXP_BUCKETS) as usize;
        let mantissa = ((v >> shift) - SUB) as usize; // 0..SUB
        (e * SUB as usize + mantissa).min(NBUCKETS - 1)
    }

    /// Lower edge of a bucket.
    fn bucket_low(b: usize) -> u64 {
        let e = b / SUB as usize;
        let m = (b % SUB as usize) as u64;
        if e == 0 {
            m
        } else {
            (SUB + m) << (e - 1)
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.count_run(Self::bucket(v), 1);
    }

    /// Record `v` in a run of equal buckets. When `v`'s bucket ends the run,
    /// the run is returned: [`Self::count_run`] must add it before the
    /// histogram is read (`net::sojourn_log`), and [`Self::settle_run`]
    /// counts the last one. Consecutive sojourns at a queue often share a
    /// bucket (half of them are zero in a fat tree), and a run is one far
    /// increment instead of many.
    #[inline]
    pub fn record_run(&mut self, v: u64) -> Option<(usize, u32)> {
        let b = Self::bucket(v) as u32;
        if b == self.run_bucket && self.run_len < u32::MAX {
            self.run_len += 1;
            return None;
        }
        let ended = (self.run_len > 0).then_some((self.run_bucket as usize, self.run_len));
        (self.run_bucket, self.run_len) = (b, 1);
        ended
    }

    /// Count the run still open in [`Self::record_run`].
    pub fn settle_run(&mut self) {
        if self.run_len > 0 {
            self.count_run(self.run_bucket as usize, self.run_len);
            self.run_len = 0;
        }
    }

    /// Add `n` samples to bucket `b`.
    #[inline]
    pub fn count_run(&mut self, b: usize, n: u32) {
        match self.counts.get_mut(b) {
            Some(c) => *c += n as u64,
            None => self.grow_and_count(b, n),
        }
    }

    /// Where bucket `b` lies, if it exists yet (a prefetch hint).
    #[inline]
    pub fn bucket_slot(&self, b: usize) -> Option<&u64> {
        self.counts.get(b)
    }

    /// Extend the bucket array to hold bucket `b` (whole rows of SUB buckets), and count `n` there.
    #[inline(never)]
    fn grow_and_count(&mut self, b: usize, n: u32) {
        self.grow_to(((b / SUB as usize) + 1) * SUB as usize);
        self.counts[b] += n as u64;
    }

    /// Extend the bucket array to `len` buckets, exactly (not the doubling
    /// of a vector's growth): a fat tree holds thousands of histograms, and
    /// a row is added at most EXP_BUCKETS times.
    fn grow_to(&mut self, len: usize) {
        let mut counts = std::mem::take(&mut self.counts).into_vec();
        counts.reserve_exact(len - counts.len());
        counts.resize(len, 0);
        self.counts = counts.into_boxed_slice();
    }

    /// Empty every bucket (and drop the open run).
    pub fn reset(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.run_len = 0;
    }

    /// A histogram of these buckets, with the count, sum and maximum of
    /// their samples as their owner kept them.
    pub fn into_histogram(self, n: u64, sum: u128, max: u64) -> Histogram {
        debug_assert_eq!(self.run_len, 0, "a run not yet counted");
        debug_assert_eq!(self.counts.iter().sum::<u64>(), n, "the owner's count is not the buckets'");
        Histogram { buckets: self, n, sum, max }
    }
}

/// Buckets with the count, exact sum and maximum of their samples.
#[derive(Clone, Default)]
pub struct Histogram {
    buckets: Buckets,
    n: u64,
    sum: u128,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Histogram(n={}, mean={:.1})", self.n, self.mean())
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram::default()
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.n += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
        self.buckets.record(v);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The q-quantile (0 ≤ q ≤ 1): the midpoint of the bucket holding the
    /// ceil(q·n)-th smallest sample.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.buckets.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let lo = Buckets::bucket_low(b);
                let hi = if b + 1 < NBUCKETS { Buckets::bucket_low(b + 1) } else { lo + 1 };
                return if hi - lo <= 1 { lo as f64 } else { ((lo + hi - 1) as f64 / 2.0).min(self.max as f64) };
            }
        }
        self.max as f64
    }

    /// Add another histogram's samples to this one.
    pub fn merge(&mut self, o: &Histogram) {
        let (mine, theirs) = (&mut self.buckets, &o.buckets);
        if theirs.counts.len() > mine.counts.len() {
            mine.grow_to(theirs.counts.len());
        }
        for (a, b) in mine.counts.iter_mut().zip(theirs.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// Non-empty buckets as (lower edge, upper edge, count), for CDF output.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.buckets.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| {
            let lo = Buckets::bucket_low(b);
            let hi = if b + 1 < NBUCKETS { Buckets::bucket_low(b + 1) } else { u64::MAX };
            (lo, hi, c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile(q);
            assert!((got - exact).abs() / exact < 0.01, "q {q}: {got} vs {exact}");
        }
        assert!((h.mean() - 50_000.5 * 1000.0).abs() < 1e-6);
        assert_eq!(h.max(), 100_000_000);
    }

    /// The sojourn log's path (`Buckets::record_run`, runs counted later in
    /// any order, the open one settled) gives the buckets `record` gives.
    #[test]
    fn runs_counted_late_give_the_same_histogram() {
        let values: Vec<u64> = (0..20_000u64).map(|i| if i % 7 < 4 { 0 } else { (i / 3 * 7919) % 300_000 }).collect();
        let (mut now, mut late, mut runs) = (Histogram::new(), Buckets::new(), Vec::new());
        for &v in &values {
            now.record(v);
            runs.extend(late.record_run(v));
        }
        for &(b, n) in runs.iter().rev() {
            late.count_run(b, n);
        }
        late.settle_run();
        let late = late.into_histogram(now.count(), now.sum, now.max());
        assert_eq!(now.buckets().collect::<Vec<_>>(), late.buckets().collect::<Vec<_>>());
        assert!(runs.len() < values.len() / 2, "{} runs for {} values", runs.len(), values.len());
    }

    #[test]
    fn a_run_ends_at_the_limit_of_its_counter() {
        let mut b = Buckets::new();
        assert_eq!(b.record_run(5), None);
        b.run_len = u32::MAX - 1;
        assert_eq!(b.record_run(5), None);
        assert_eq!(b.record_run(5), Some((5, u32::MAX)));
        assert_eq!(b.record_run(6), Some((5, 1)));
        b.count_run(5, u32::MAX);
        b.count_run(5, 1);
        b.settle_run();
        let n = u32::MAX as u64 + 2;
        assert_eq!(b.into_histogram(n, 0, 6).buckets().map(|(_, _, c)| c).sum::<u64>(), n);
    }

    #[test]
    fn small_values_are_exact_and_buckets_are_monotone() {
        let mut h = Histogram::new();
        for v in [0u64, 1, 5, 127] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.25), 0.0);
        assert_eq!(h.quantile(1.0), 127.0);
        let mut last = 0;
        for b in 0..NBUCKETS {
            let lo = Buckets::bucket_low(b);
            assert!(b == 0 || lo > last);
            assert_eq!(Buckets::bucket(lo), b);
            last = lo;
        }
    }
}
