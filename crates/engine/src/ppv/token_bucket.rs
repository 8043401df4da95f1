//! The token-bucket packet marker, the PPV papers' alternative to the
//! random-rate marker (ppv.elte.hu: "quantise the TVF into regions, give each
//! region a token bucket whose rate is the width of that throughput region and
//! whose size is that rate times the typical buffer delay of resource nodes;
//! a packet takes the highest-value region that still has tokens"; the same
//! scheme is sketched in a comment of the third-party ns-3 "pvpie" marker,
//! with 30 regions per decade from 10 kbit/s).
//!
//! Regions here: upper edges `b_i = min_rate · 2^(i / levels_per_octave)`,
//! region 0 = `[0, b_0)`, region i = `[b_{i-1}, b_i)`; region i's bucket fills
//! at its width `b_i − b_{i-1}` bit/s up to `width · bucket_depth`. A packet
//! is charged to the lowest-rate (highest-value) region not in debt and gets
//! the TVF's value at that region's midpoint. aqmlab's choices, where the
//! sources are silent: a bucket may go into debt by one packet (so regions
//! narrower than a packet per `bucket_depth` still carry their exact rate),
//! the midpoint value, and the defaults in [`super::marker::MarkerSpec`].
//!
//! Why it meets the marking requirement: a flow at rate `r` keeps every region
//! below `r` in debt, so each carries exactly its width; the packets worth
//! more than a CTV are those of the regions whose midpoint lies below
//! `x* = TVF⁻¹(CTV)`, and they add up to `x*` within half a region
//! (2^(1/(2·levels_per_octave)) − 1: 1.1 % at 32 levels per octave).
//! Deterministic: no random numbers.

use super::tvf::Tvf;

#[derive(Debug, Clone)]
pub struct TokenBucketMarker {
    /// Fill rate of each region's bucket (its width), bit/s.
    width_bps: Vec<f64>,
    /// Bucket size of each region, bits.
    depth_bits: Vec<f64>,
    /// Packet value of each region (the TVF at its midpoint).
    pv: Vec<u32>,
    /// Tokens (bits; negative: debt) as of `last_ns`.
    tokens_bits: Vec<f64>,
    last_ns: Vec<u64>,
    /// Earliest time the region is out of debt (0 while it has tokens): the
    /// scan compares integers only.
    ready_ns: Vec<u64>,
}

impl TokenBucketMarker {
    pub fn new(tvf: &Tvf, min_rate_bps: f64, max_rate_bps: f64, levels_per_octave: f64, depth_ns: u64) -> Self {
        let n = (libm::log2(max_rate_bps / min_rate_bps) * levels_per_octave).ceil() as usize + 1;
        let edge = |i: usize| min_rate_bps * libm::exp2(i as f64 / levels_per_octave);
        let (mut width_bps, mut pv) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let (lo, hi) = if i == 0 { (0.0, edge(0)) } else { (edge(i - 1), edge(i)) };
            width_bps.push(hi - lo);
            pv.push(tvf.value(0.5 * (lo + hi)));
        }
        let depth_bits: Vec<f64> = width_bps.iter().map(|w| w * depth_ns as f64 / 1e9).collect();
        TokenBucketMarker { tokens_bits: depth_bits.clone(), depth_bits, width_bps, pv, last_ns: vec![0; n], ready_ns: vec![0; n] }
    }

    /// Number of regions (for the memory estimate and tests).
    pub fn regions(&self) -> usize {
        self.pv.len()
    }

    /// Charge a packet of `size_bytes` sent at `now_ns` and return its value.
    pub fn value(&mut self, now_ns: u64, size_bytes: u32) -> u32 {
        let n = self.pv.len();
        // The lowest region out of debt; past the top region the flow is
        // faster than max_rate and the top region takes the packet.
        let i = self.ready_ns.iter().position(|&t| t <= now_ns).unwrap_or(n - 1);
        let dt_s = now_ns.saturating_sub(self.last_ns[i]) as f64 / 1e9;
        let t = (self.tokens_bits[i] + self.width_bps[i] * dt_s).min(self.depth_bits[i]) - 8.0 * size_bytes as f64;
        self.tokens_bits[i] = t;
        self.last_ns[i] = self.last_ns[i].max(now_ns);
        self.ready_ns[i] = if t >= 0.0 { 0 } else { self.last_ns[i] + libm::ceil(-t / self.width_bps[i] * 1e9) as u64 };
        self.pv[i]
    }
}
