//! Serialisation times at a fixed rate, exact over the long run.
//!
//! A frame of `b` bytes takes `b·8·10⁹ / rate` ns, rarely a whole number.
//! Each frame takes the floor of that plus the remainder carried from the
//! frames before it, and carries its own remainder on: `n` frames take the
//! exact total rounded down, so no rate drifts (the queue's departure times
//! and its measured rate agree with the configured one to the nanosecond).
//!
//! Why not divide per frame: a 64-bit division costs tens of cycles, and the
//! cache of the last frame size that replaced it missed at every port where
//! data packets and ACKs alternate. In a fat tree (bench scenario D) it
//! missed on a third of the packet-hops, and its test cost 0.40
//! mispredicted branches per hop (callgrind's branch simulation,
//! docs/performance.md). So the rate's reciprocal is computed once per rate
//! (`floor((2⁶⁴ − 1) / rate)`), and a frame costs a 64 × 64-bit
//! multiplication, a multiply-subtract and two selects, with no branch on
//! the data.
//!
//! Why the result is exact: for `N = b·8·10⁹ < 2⁶⁴` and
//! `m = floor((2⁶⁴ − 1) / rate)`, `N/rate − 1 < N·m / 2⁶⁴ ≤ N/rate`, so the
//! estimate `floor(N·m / 2⁶⁴)` is the quotient or one less, and one
//! comparison of the remainder with the rate corrects it. The bound holds
//! with room to spare: frames are at most 65 535 bytes plus a medium's
//! header (`N < 2⁵⁰`) and rates at most 2⁵⁸ bps (`sim::units`). The carry
//! is then added as before: a second comparison with the rate.
//!
//! A rate change keeps the carry. Below the old rate, it may exceed a lower
//! new one; it is then paid out a nanosecond per frame (each frame adds at
//! most one), as the engine has always done.

use super::NS_PER_SEC;

/// A transmitter's rate and the remainder carried between its frames.
#[derive(Debug, Clone)]
pub struct Serialiser {
    rate_bps: u64,
    /// `floor((2⁶⁴ − 1) / rate_bps)`.
    reciprocal: u64,
    /// What the frames so far left over, in bit·ns: below the rate but
    /// after a rate change (module docs).
    carry: u64,
}

impl Serialiser {
    /// A transmitter of `rate_bps` (at least 1) with nothing carried.
    pub fn new(rate_bps: u64) -> Self {
        assert!(rate_bps > 0, "a transmitter's rate must be positive");
        Serialiser { rate_bps, reciprocal: u64::MAX / rate_bps, carry: 0 }
    }

    #[inline(always)]
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// A new rate from the next frame on; the carry is kept (module docs).
    pub fn set_rate_bps(&mut self, rate_bps: u64) {
        *self = Serialiser { carry: self.carry, ..Serialiser::new(rate_bps) };
    }

    /// The time on the wire of a frame of `bytes`, carrying the remainder.
    /// Which way each comparison goes changes from frame to frame where
    /// sizes mix, so both are selects, not branches.
    #[inline(always)]
    pub fn frame_ns(&mut self, bytes: u32) -> u64 {
        let bits_ns = bytes as u64 * 8 * NS_PER_SEC;
        debug_assert!(bytes < 1 << 31);
        let estimate = ((bits_ns as u128 * self.reciprocal as u128) >> 64) as u64;
        let rem = bits_ns - estimate * self.rate_bps;
        let short = (rem >= self.rate_bps) as u64; // the estimate is one less
        let (quotient, rem) = (estimate + short, rem - short * self.rate_bps);
        let rem = rem + self.carry;
        let whole = (rem >= self.rate_bps) as u64; // a nanosecond carried
        self.carry = rem - whole * self.rate_bps;
        quotient + whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::{Domain, SimRng};

    /// The engine's definition before this type: divide, then carry.
    fn by_division(bytes: u32, rate_bps: u64, carry: &mut u64) -> u64 {
        let n = bytes as u64 * 8 * NS_PER_SEC;
        let rem = n % rate_bps + *carry;
        let whole = rem >= rate_bps;
        *carry = if whole { rem - rate_bps } else { rem };
        n / rate_bps + whole as u64
    }

    #[test]
    fn frame_times_equal_the_division_with_carry() {
        let mut rng = SimRng::derive(7, Domain::Queue, 0);
        // Rates from 1 bps to the largest a scenario may give (2⁵⁸), those
        // of the benchmarks, and ones whose reciprocal is far from exact.
        let mut rates = vec![1, 3, 7, 1_000_000, 10_000_000_000, 100_000_000_000, 999_999_937, (1 << 58) - 1, 1 << 58];
        rates.extend((0..40).map(|_| 1 + (rng.next_u64() >> (6 + rng.next_u64() % 58))));
        for rate in rates {
            let mut s = Serialiser::new(rate);
            let mut carry = 0;
            for i in 0..2_000 {
                // Mixed sizes as at a port that carries data and ACKs, and
                // the extremes of a frame.
                let bytes = match i % 5 {
                    0 => 52,
                    1 => 1_500,
                    2 => 65_535 + 64,
                    3 => 1,
                    _ => 1 + (rng.next_u64() % 9_000) as u32,
                };
                assert_eq!(s.frame_ns(bytes), by_division(bytes, rate, &mut carry), "rate {rate} bps, frame {i} of {bytes} bytes");
                assert_eq!(s.carry, carry);
            }
        }
    }

    #[test]
    fn a_thousand_frames_take_the_exact_total_rounded_down() {
        // 52-byte ACKs at 10 Gbit/s take 41.6 ns each: 41 or 42, 41 600 in all.
        let mut s = Serialiser::new(10_000_000_000);
        let total: u64 = (0..1_000).map(|_| s.frame_ns(52)).sum();
        assert_eq!(total, 41_600);
        assert_eq!(s.carry, 0);
        // A 1 500-byte frame at 3 bit/s: 4 000 s, with nothing carried.
        let mut slow = Serialiser::new(3);
        assert_eq!(slow.frame_ns(1_500), 4_000 * NS_PER_SEC);
        assert_eq!(slow.carry, 0);
    }

    #[test]
    fn a_lower_rate_pays_out_a_large_carry_a_nanosecond_per_frame() {
        let mut s = Serialiser::new(10_000_000_000);
        let mut carry = 0;
        for rate in [10_000_000_000, 7, 1_000_000_000, 3_000_000_000] {
            s.set_rate_bps(rate);
            for bytes in [52, 1_500, 52, 52, 9_000, 52] {
                assert_eq!(s.frame_ns(bytes), by_division(bytes, rate, &mut carry), "rate {rate}, {bytes} bytes");
                assert_eq!(s.carry, carry);
            }
        }
        // 10 Gbit/s then 1 bit/s: the carry (6·10⁹ bit·ns) is 6·10⁹ ns at
        // the new rate, paid one nanosecond per frame.
        let mut s = Serialiser::new(10_000_000_000);
        s.frame_ns(52);
        s.set_rate_bps(1);
        assert_eq!(s.frame_ns(1), 8 * NS_PER_SEC + 1);
        assert_eq!(s.carry, 6_000_000_000 - 1);
    }
}
