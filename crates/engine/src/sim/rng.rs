//! Seeded random streams.
//!
//! One master seed per scenario; every component (flow, queue, link,
//! workload) draws from its own stream derived from `(master, domain, index)`,
//! so adding a flow never changes the numbers another flow sees. The generator
//! is xoshiro256++ (portable, identical on every machine); all transcendental
//! functions go through the pure-Rust `libm` so results are bit-identical
//! across platforms.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Which kind of component a stream belongs to (part of the stream key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Domain {
    Flow = 1,
    Queue = 2,
    Link = 3,
    Workload = 4,
    Marker = 5,
    /// A flow's congestion controller (BBR's randomised probing).
    Cc = 6,
    /// Generated traffic (a fat tree's permutation of hosts).
    Traffic = 7,
}

#[derive(Debug, Clone)]
pub struct SimRng {
    inner: Xoshiro256PlusPlus,
}

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijection on 64 bits
/// whose output bits each depend on every input bit. It spreads a stream's
/// key here, and a flow id over a fat tree's uplinks (`world::fat_tree`).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The Pareto distribution with scale `min` and shape `alpha` truncated to
/// `max`, sampled by inverse CDF of the truncated distribution (no
/// rejection). What does not depend on the draw is computed once: a web
/// workload draws a size for every flow, and each `libm::pow` cost 226
/// instructions there (docs/performance.md, "A flow's set-up, continued").
#[derive(Debug, Clone, Copy)]
pub struct BoundedPareto {
    min: f64,
    /// (min / max)^alpha: the tail's weight beyond `max`.
    ratio: f64,
    inv_alpha: f64,
}

impl BoundedPareto {
    pub fn new(min: f64, max: f64, alpha: f64) -> Self {
        BoundedPareto { min, ratio: libm::pow(min / max, alpha), inv_alpha: 1.0 / alpha }
    }
}

impl SimRng {
    /// The stream for component `index` of `domain` under `master_seed`.
    pub fn derive(master_seed: u64, domain: Domain, index: u64) -> Self {
        let key = mix(mix(master_seed) ^ mix((domain as u64) << 48 ^ index));
        SimRng { inner: Xoshiro256PlusPlus::seed_from_u64(key) }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (p <= 0 never, p >= 1 always).
    #[inline]
    pub fn roll(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        self.uniform() < p
    }

    /// Exponential variate with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - U lies in (0, 1], so the log is finite.
        -mean * libm::log(1.0 - self.uniform())
    }

    /// A variate of `d` (see [`BoundedPareto`]).
    pub fn bounded_pareto(&mut self, d: &BoundedPareto) -> f64 {
        let u = self.uniform();
        // F^-1(u) for the Pareto truncated to [min, max].
        d.min / libm::pow(1.0 - u * (1.0 - d.ratio), d.inv_alpha)
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        // Lemire's multiply-shift; the tiny bias is irrelevant for simulation and deterministic.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a = SimRng::derive(7, Domain::Flow, 3);
        let mut b = SimRng::derive(7, Domain::Flow, 3);
        let mut c = SimRng::derive(7, Domain::Flow, 4);
        let mut d = SimRng::derive(7, Domain::Queue, 3);
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa[0], c.next_u64());
        assert_ne!(xa[0], d.next_u64());
    }

    #[test]
    fn roll_frequency_matches_probability() {
        let mut r = SimRng::derive(1, Domain::Queue, 0);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.roll(0.1)).count() as f64;
        // Binomial sd = sqrt(n p (1-p)) ~ 134; allow 5 sd.
        assert!((hits - 20_000.0).abs() < 700.0, "hits {hits}");
    }

    #[test]
    fn exponential_and_pareto_have_the_right_means() {
        let mut r = SimRng::derive(2, Domain::Workload, 0);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((m - 3.0).abs() < 0.05, "mean {m}");
        // Bounded Pareto(min 1, max 100, alpha 1.2): mean = a L^a/(1-(L/H)^a) * (L^(1-a) - H^(1-a))/(a-1)
        let (l, h, a): (f64, f64, f64) = (1.0, 100.0, 1.2);
        let expect = a * l.powf(a) / (1.0 - (l / h).powf(a)) * (l.powf(1.0 - a) - h.powf(1.0 - a)) / (a - 1.0);
        let d = BoundedPareto::new(l, h, a);
        let xs: Vec<f64> = (0..n).map(|_| r.bounded_pareto(&d)).collect();
        assert!(xs.iter().all(|&x| (l..=h).contains(&x)));
        let m = xs.iter().sum::<f64>() / n as f64;
        assert!((m - expect).abs() / expect < 0.03, "mean {m} expect {expect}");
    }
}
