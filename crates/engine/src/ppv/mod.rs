//! Per Packet Value (PPV): the value scale shared by edge markers and core AQMs.
//!
//! References (read the first two first):
//! - Nádas, Turányi, Rácz, "Per Packet Value: A Practical Concept for Network
//!   Resource Sharing", IEEE Globecom 2016: a policy is a decreasing
//!   Throughput-Value Function (TVF) per flow class; an edge marker writes a
//!   packet value (PV, value per bit) into every packet; a resource node that
//!   drops or marks the lowest values first enforces the policy without flow state.
//! - ppv.elte.hu ("What is the PPV?"): the marking requirement (if every packet
//!   below a Congestion Threshold Value (CTV) is dropped, a flow keeps the
//!   throughput its TVF gives at the CTV).
//! - Nádas, Gombos, Fejes, Laki, "A Congestion Control Independent L4S
//!   Scheduler", ANRW 2020 (the core AQM in `aqm/vdq_csaqm.rs`).
//!
//! **Encoding (an aqmlab choice; the papers give none).** A PV is a 12-bit
//! integer in `Packet::aux`, `1..=PV_MAX`; 0 means "not marked" and ranks
//! below every marked packet. The canonical TVF is logarithmic in throughput:
//! `V_w(x) = round(PV_PER_OCTAVE · log2(X_REF · w / x))`, clamped to
//! `[1, PV_MAX]`, where `x` is in bit/s and `w` is the policy weight. So one PV
//! step is a 2^(1/64) ≈ 1.09 % change of rate, and a weight `w` shifts the TVF
//! along the throughput axis (`V_w(x) = V_1(x / w)`): at any common CTV a flow of
//! weight `w` keeps `w` times the throughput of a weight-1 flow, which is how
//! the PPV papers express Gold/Silver policies.

pub mod marker;
pub mod token_bucket;
pub mod tvf;

/// Largest packet value (12 bits: histograms in core nodes have one bin per value).
pub const PV_MAX: u32 = 4095;
/// Packet-value steps per doubling of throughput.
pub const PV_PER_OCTAVE: f64 = 64.0;
/// Throughput (bit/s) at which a weight-1 TVF reaches value 0: 2^42 bit/s ≈ 4.4 Tbit/s.
/// With 64 steps per octave the 12-bit scale spans 64 octaves below it, so
/// every practical rate (and weights up to 2^20) lands strictly inside it.
pub const X_REF_BPS: f64 = 4_398_046_511_104.0;

/// The canonical TVF `V_w(x)` (see the module docs); `x_bps <= 0` gives `PV_MAX`.
#[inline]
pub fn tvf(x_bps: f64, weight: f64) -> u32 {
    if x_bps <= 0.0 {
        return PV_MAX;
    }
    let v = PV_PER_OCTAVE * libm::log2(X_REF_BPS * weight / x_bps);
    if v >= PV_MAX as f64 {
        PV_MAX
    } else if v < 1.0 {
        1
    } else {
        libm::round(v) as u32
    }
}

/// Inverse of [`tvf`]: the throughput at which a weight-`w` flow has value `pv`.
pub fn tvf_inverse(pv: u32, weight: f64) -> f64 {
    X_REF_BPS * weight / libm::exp2(pv as f64 / PV_PER_OCTAVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tvf_is_decreasing_and_weight_shifts_it_along_the_rate_axis() {
        let v = |x: f64| tvf(x, 1.0);
        assert!(v(1e6) > v(1e7) && v(1e7) > v(1e9));
        // One octave of rate is 64 steps.
        assert_eq!(v(1e8) - v(2e8), 64);
        // Weight 2 at 2x the rate has the value of weight 1 at x.
        assert_eq!(tvf(2e8, 2.0), v(1e8));
        // A 7:3 weight pair at rates 7:3 has equal values (within rounding).
        assert!((tvf(7e8, 7.0) as i64 - tvf(3e8, 3.0) as i64).abs() <= 1);
        assert_eq!(v(0.0), PV_MAX);
        assert_eq!(v(1e30), 1);
    }

    #[test]
    fn inverse_round_trips_within_one_step() {
        for x in [1e6, 3.3e7, 1e9, 9.9e10] {
            let back = tvf_inverse(tvf(x, 1.0), 1.0);
            assert!((back / x - 1.0).abs() < 0.006, "{x} -> {back}");
        }
    }
}
