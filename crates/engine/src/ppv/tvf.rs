//! Throughput-value functions (TVFs): a policy as a decreasing function from
//! throughput to packet value (PPV: Nádas, Turányi, Rácz, Globecom 2016;
//! ppv.elte.hu). Two forms:
//!
//! - **Weighted** (the default, `marker = { weight = w }`): the canonical
//!   logarithmic TVF `V_w(x)` of [`super::tvf`], the same curve for every
//!   flow stretched along the throughput axis by `w` (equal share: `w = 1`).
//! - **Points** (`marker = { tvf = [["1Mbps", 3000], ["1Gbps", 1200]] }`):
//!   any policy as data. Between points the value is linear in `log2(rate)`
//!   (the PPV papers draw TVFs on log-rate axes); below the first point it is
//!   the first value, above the last point the last value. Values must not
//!   increase with the rate. The interpolation rule is aqmlab's choice.

use super::{tvf, PV_MAX, PV_PER_OCTAVE, X_REF_BPS};
use crate::sim::units::serde_rate;
use serde::{Deserialize, Serialize};

/// One point of a TVF given as data: `[rate, packet value]`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct TvfPoint(#[serde(with = "serde_rate")] pub u64, pub u32);

/// A throughput-value function, built from a marker's spec.
#[derive(Debug, Clone, PartialEq)]
pub enum Tvf {
    /// `V_w(x)`, the canonical TVF of weight `w`.
    Weighted(f64),
    /// Values at increasing rates, interpolated linearly in `log2(rate)`.
    Points { log2_bps: Vec<f64>, pv: Vec<f64> },
}

impl Tvf {
    /// Check the points (rates strictly increasing and positive, values in
    /// `1..=PV_MAX` and not increasing) and build the function. `path`
    /// prefixes errors.
    pub fn from_points(points: &[TvfPoint], path: &str) -> Result<Tvf, String> {
        if points.is_empty() {
            return Err(format!("{path}: needs at least one [rate, value] point"));
        }
        for (i, TvfPoint(rate, pv)) in points.iter().enumerate() {
            if *rate == 0 {
                return Err(format!("{path}[{i}]: the rate must be positive"));
            }
            if !(1..=PV_MAX).contains(pv) {
                return Err(format!("{path}[{i}]: packet value {pv} is outside 1..={PV_MAX}"));
            }
            if i > 0 {
                let TvfPoint(r0, v0) = points[i - 1];
                if *rate <= r0 {
                    return Err(format!("{path}[{i}]: rates must increase from point to point"));
                }
                if *pv > v0 {
                    return Err(format!("{path}[{i}]: a TVF must not increase with the rate (value {pv} after {v0})"));
                }
            }
        }
        Ok(Tvf::Points {
            log2_bps: points.iter().map(|p| libm::log2(p.0 as f64)).collect(),
            pv: points.iter().map(|p| p.1 as f64).collect(),
        })
    }

    /// The value before rounding at throughput `x_bps` (> 0).
    fn continuous(&self, x_bps: f64) -> f64 {
        match self {
            Tvf::Weighted(w) => PV_PER_OCTAVE * libm::log2(X_REF_BPS * w / x_bps),
            Tvf::Points { log2_bps, pv } => {
                let lx = libm::log2(x_bps);
                let n = log2_bps.len();
                if lx <= log2_bps[0] {
                    return pv[0];
                }
                if lx >= log2_bps[n - 1] {
                    return pv[n - 1];
                }
                // First point above lx; lx lies in [i - 1, i).
                let i = log2_bps.partition_point(|&l| l <= lx);
                let t = (lx - log2_bps[i - 1]) / (log2_bps[i] - log2_bps[i - 1]);
                pv[i - 1] + t * (pv[i] - pv[i - 1])
            }
        }
    }

    /// The packet value at throughput `x_bps`, in `1..=PV_MAX`.
    #[inline]
    pub fn value(&self, x_bps: f64) -> u32 {
        match self {
            Tvf::Weighted(w) => tvf(x_bps, *w),
            Tvf::Points { pv, .. } if x_bps <= 0.0 => pv[0] as u32,
            Tvf::Points { .. } => (libm::round(self.continuous(x_bps)) as u32).clamp(1, PV_MAX),
        }
    }

    /// The throughput a flow keeps when every packet with `PV <= ctv` is
    /// signalled: the rate below which the (rounded) value exceeds `ctv`,
    /// i.e. where the continuous TVF crosses `ctv + 1/2`. 0 if no rate has a
    /// value above `ctv`; infinite if every rate has.
    pub fn rate_kept_bps(&self, ctv: u32) -> f64 {
        let level = ctv as f64 + 0.5;
        match self {
            Tvf::Weighted(w) => X_REF_BPS * w / libm::exp2(level / PV_PER_OCTAVE),
            Tvf::Points { log2_bps, pv } => {
                let n = pv.len();
                if pv[0] <= level {
                    return 0.0;
                }
                if pv[n - 1] > level {
                    return f64::INFINITY;
                }
                // First point at or below the level; the crossing lies before it.
                let i = pv.partition_point(|&v| v > level);
                let t = (pv[i - 1] - level) / (pv[i - 1] - pv[i]);
                libm::exp2(log2_bps[i - 1] + t * (log2_bps[i] - log2_bps[i - 1]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(p: &[(u64, u32)]) -> Vec<TvfPoint> {
        p.iter().map(|&(r, v)| TvfPoint(r, v)).collect()
    }

    #[test]
    fn points_interpolate_in_log_rate_and_clamp_outside() {
        let t = Tvf::from_points(&pts(&[(1_000_000, 3000), (4_000_000, 2000)]), "tvf").unwrap();
        assert_eq!(t.value(0.5e6), 3000);
        assert_eq!(t.value(1e6), 3000);
        assert_eq!(t.value(2e6), 2500, "halfway in log2 rate");
        assert_eq!(t.value(4e6), 2000);
        assert_eq!(t.value(1e9), 2000);
        assert_eq!(t.value(0.0), 3000);
    }

    #[test]
    fn rate_kept_inverts_the_value_at_half_a_step_above_the_ctv() {
        let t = Tvf::from_points(&pts(&[(1_000_000, 3000), (4_000_000, 2000)]), "tvf").unwrap();
        let x = t.rate_kept_bps(2499);
        assert!((x / 2e6 - 1.0).abs() < 0.002, "{x}");
        assert!(t.value(x * 0.999) > 2499 && t.value(x * 1.001) <= 2499);
        assert_eq!(t.rate_kept_bps(3000), 0.0);
        assert_eq!(t.rate_kept_bps(1999), f64::INFINITY);
        let w = Tvf::Weighted(2.0);
        let x = w.rate_kept_bps(1000);
        assert!(w.value(x * 0.999) > 1000 && w.value(x * 1.001) <= 1000);
    }

    #[test]
    fn bad_points_are_refused_with_the_index() {
        let e = |p: &[(u64, u32)]| Tvf::from_points(&pts(p), "flows[0].marker.tvf").unwrap_err();
        assert_eq!(e(&[]), "flows[0].marker.tvf: needs at least one [rate, value] point");
        assert_eq!(e(&[(1, 10), (1, 9)]), "flows[0].marker.tvf[1]: rates must increase from point to point");
        assert!(e(&[(1, 10), (2, 11)]).starts_with("flows[0].marker.tvf[1]: a TVF must not increase"));
        assert_eq!(e(&[(1, 0)]), "flows[0].marker.tvf[0]: packet value 0 is outside 1..=4095");
        assert_eq!(e(&[(0, 5)]), "flows[0].marker.tvf[0]: the rate must be positive");
    }
}
