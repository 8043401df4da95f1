//! RTT estimation and the retransmission timer value, RFC 6298.
//!
//! - §2.2: first sample R: SRTT = R, RTTVAR = R/2.
//! - §2.3: later samples: RTTVAR = (1 − β)·RTTVAR + β·|SRTT − R|,
//!   SRTT = (1 − α)·SRTT + α·R with α = 1/8, β = 1/4 (RTTVAR first).
//! - RTO = SRTT + max(G, 4·RTTVAR), clamped to [min, max].
//! - §2.1: RTO = 1 s before any sample.
//!
//! DEVIATION (Linux `tcp_set_rto`/`tcp_rtt_estimator`): the minimum (200 ms,
//! TCP_RTO_MIN, rather than the RFC's 1 s) bounds the variance term, so
//! RTO = SRTT + max(4·RTTVAR, rto_min). The RFC's max(rto_min, SRTT +
//! 4·RTTVAR) fires spuriously on long, smoothly growing RTTs (a 200 ms RTT
//! then gets a ~210 ms RTO, shorter than a fast retransmit's round trip through
//! a full buffer). The maximum is 120 s; both bounds are configurable. Samples
//! come from RFC 7323 timestamps on every ACK that advances the window.

#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt_ns: u64,
    rttvar_ns: u64,
    min_rtt_ns: u64,
    latest_ns: u64,
    has_sample: bool,
    /// max(G, rto_min): the floor of the variance term, fixed per flow
    /// (clock granularity G, RFC 6298 §2.3, and the Linux-style minimum).
    var_floor_ns: u64,
    rto_max_ns: u64,
    rto_initial_ns: u64,
}

/// Clock granularity G (RFC 6298 §2.3): Linux jiffies-free high-resolution
/// timers, so 1 µs is a fair G.
const GRANULARITY_NS: u64 = 1_000;

impl RttEstimator {
    pub fn new(rto_min_ns: u64, rto_max_ns: u64, rto_initial_ns: u64) -> Self {
        RttEstimator {
            srtt_ns: 0,
            rttvar_ns: 0,
            min_rtt_ns: u64::MAX,
            latest_ns: 0,
            has_sample: false,
            var_floor_ns: GRANULARITY_NS.max(rto_min_ns),
            rto_max_ns,
            rto_initial_ns,
        }
    }

    pub fn on_sample(&mut self, r_ns: u64) {
        let r = r_ns.max(1);
        self.latest_ns = r;
        self.min_rtt_ns = self.min_rtt_ns.min(r);
        if !self.has_sample {
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
            self.has_sample = true;
        } else {
            let err = self.srtt_ns.abs_diff(r);
            self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
            self.srtt_ns = (7 * self.srtt_ns + r) / 8;
        }
    }

    /// The RTO before backoff.
    pub fn rto_ns(&self) -> u64 {
        if !self.has_sample {
            return self.rto_initial_ns;
        }
        let var = (4 * self.rttvar_ns).max(self.var_floor_ns);
        (self.srtt_ns + var).min(self.rto_max_ns)
    }

    /// RTO after `backoff` doublings (RFC 6298 §5.5), capped at the maximum.
    pub fn backed_off_rto_ns(&self, backoff: u32) -> u64 {
        let base = self.rto_ns();
        base.checked_shl(backoff.min(30)).unwrap_or(u64::MAX).min(self.rto_max_ns.max(base))
    }

    pub fn srtt_ns(&self) -> u64 {
        self.srtt_ns
    }
    pub fn min_rtt_ns(&self) -> u64 {
        if self.has_sample {
            self.min_rtt_ns
        } else {
            0
        }
    }
    pub fn latest_ns(&self) -> u64 {
        self.latest_ns
    }
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: u64 = 1_000_000;

    #[test]
    fn rfc6298_first_and_second_sample() {
        let mut r = RttEstimator::new(200 * MS, 120_000 * MS, 1_000 * MS);
        assert_eq!(r.rto_ns(), 1_000 * MS);
        r.on_sample(100 * MS);
        // SRTT = 100, RTTVAR = 50 -> RTO = 100 + max(200, 200) = 300 ms.
        assert_eq!((r.srtt_ns(), r.rto_ns()), (100 * MS, 300 * MS));
        r.on_sample(60 * MS);
        // RTTVAR = 3/4·50 + 1/4·40 = 47.5; SRTT = 7/8·100 + 1/8·60 = 95.
        assert_eq!(r.srtt_ns(), 95 * MS);
        assert_eq!(r.rto_ns(), 95 * MS + 200 * MS);
        assert_eq!(r.min_rtt_ns(), 60 * MS);
    }

    #[test]
    fn rto_min_bounds_the_variance_term_and_backs_off_exponentially() {
        let mut r = RttEstimator::new(200 * MS, 120_000 * MS, 1_000 * MS);
        for _ in 0..50 {
            r.on_sample(MS);
        }
        assert_eq!(r.rto_ns(), 201 * MS);
        assert_eq!(r.backed_off_rto_ns(3), 1_608 * MS);
        // A steady 200 ms RTT: Linux-style RTO is 400 ms, not the RFC's ~200 ms.
        let mut r = RttEstimator::new(200 * MS, 120_000 * MS, 1_000 * MS);
        for _ in 0..50 {
            r.on_sample(200 * MS);
        }
        assert!(r.rto_ns() >= 400 * MS);
        assert_eq!(r.backed_off_rto_ns(40), 120_000 * MS);
    }
}
