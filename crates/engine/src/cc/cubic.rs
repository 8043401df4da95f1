//! CUBIC congestion control, RFC 9438, with optional ABE (RFC 8511).
//!
//! References (read in this order):
//! - RFC 9438 §4.1 (W_cubic, eq. 1), §4.2 (K, eq. 2), §4.3 (Reno-friendly
//!   region, eq. 4, α_cubic = 3(1−β)/(1+β) switching to 1 once W_est ≥
//!   cwnd_prior), §4.4–4.5 (concave/convex: target = W_cubic(t + RTT) clamped
//!   to [cwnd, 1.5·cwnd]), §4.6 (multiplicative decrease, β = 0.7), §4.7
//!   (fast convergence), §4.8 (timeout):
//!   <https://www.rfc-editor.org/rfc/rfc9438#section-4>
//! - RFC 8511 §3 for β_ecn (the ABE paper used 0.85 for CUBIC).
//!
//! The window is kept in fractional segments (f64) as the RFC writes it;
//! cube roots use the portable `libm` so results are identical everywhere.
//! DEVIATION (Linux tcp_cubic.c): Linux keeps integer windows with a
//! per-ACK counter, computes ssthresh from cwnd rather than FlightSize, and
//! uses min_rtt rather than srtt for the "+RTT" look-ahead; aqmlab follows the RFC.

use super::hystart::HyStartPp;
use super::reno::check_beta;
use super::{slow_start, AckEvent, CongestionControl, CongestionEvent, CongestionKind, INITIAL_WINDOW_SEGS, LOSS_WINDOW_SEGS};
use crate::sim::ns_to_secs;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// Cubic scaling constant C, in segments/s³.
    pub c: f64,
    /// Multiplicative decrease factor β_cubic on loss.
    pub beta: f64,
    /// β on ECN-Echo (ABE, RFC 8511); `None`: same as `beta`.
    pub beta_ecn: Option<f64>,
    /// Fast convergence (RFC 9438 §4.7).
    pub fast_convergence: bool,
    /// Reno-friendly region (RFC 9438 §4.3).
    pub reno_friendly: bool,
    /// HyStart++ slow start (RFC 9406), as RFC 9438 §4.10 recommends.
    pub hystart: bool,
    /// Initial window in segments.
    pub initial_window: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            // RFC 9438 §5 (and Linux bic_scale 41 ≈ 0.4).
            c: 0.4,
            // RFC 9438 §4.6; Linux 717/1024 since 2.6.25 (older kernels 0.8).
            beta: 0.7,
            // RFC 3168 behaviour unless ABE is asked for.
            beta_ecn: None,
            // RFC 9438 §4.7: on by default (Linux fast_convergence = 1).
            fast_convergence: true,
            // RFC 9438 §4.3 (Linux tcp_friendliness = 1).
            reno_friendly: true,
            // RFC 9438 §4.10 recommends HyStart++; Linux (hystart = 1) and ns-3 enable a HyStart by default.
            hystart: true,
            // RFC 6928.
            initial_window: INITIAL_WINDOW_SEGS,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cubic {
    cfg: CubicConfig,
    /// Congestion window, fractional segments.
    cwnd: f64,
    ssthresh: u32,
    /// Window before the last reduction, after fast convergence (segments).
    w_max: f64,
    /// Time from epoch start to the plateau, seconds (eq. 2).
    k_s: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start_ns: Option<u64>,
    /// max(W_max, cwnd at epoch start): the curve's plateau.
    origin: f64,
    /// Reno-friendly estimate (eq. 4), segments.
    w_est: f64,
    /// cwnd just before the last reduction.
    cwnd_prior: f64,
    hystart: Option<HyStartPp>,
}

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Result<Self, String> {
        check_beta("beta", cfg.beta)?;
        if let Some(b) = cfg.beta_ecn {
            check_beta("beta_ecn", b)?;
        }
        if !(cfg.c > 0.0 && cfg.c.is_finite()) {
            return Err(format!("c: must be positive (got {})", cfg.c));
        }
        if cfg.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        let iw = cfg.initial_window as f64;
        let hystart = cfg.hystart.then(HyStartPp::new);
        Ok(Cubic {
            cfg,
            cwnd: iw,
            ssthresh: u32::MAX,
            w_max: 0.0,
            k_s: 0.0,
            epoch_start_ns: None,
            origin: 0.0,
            w_est: iw,
            cwnd_prior: iw,
            hystart,
        })
    }

    /// RFC 9438 eq. 1: W_cubic(t) = C·(t − K)³ + W_max (t in seconds).
    #[inline]
    pub fn w_cubic(&self, t_s: f64) -> f64 {
        let d = t_s - self.k_s;
        self.cfg.c * d * d * d + self.origin
    }

    /// RFC 9438 §4.2: a new epoch starts at the first CA ACK after a reduction.
    fn start_epoch(&mut self, now_ns: u64) {
        self.epoch_start_ns = Some(now_ns);
        self.w_est = self.cwnd;
        if self.cwnd < self.w_max {
            // Eq. 2: K = cbrt((W_max − cwnd_epoch)/C).
            self.k_s = libm::cbrt((self.w_max - self.cwnd) / self.cfg.c);
            self.origin = self.w_max;
        } else {
            // DEVIATION (Linux bictcp_update): above the old maximum the plateau
            // is the current window and growth is convex from here.
            self.k_s = 0.0;
            self.origin = self.cwnd;
        }
    }

    fn congestion_avoidance(&mut self, ev: &AckEvent, acked: u32) {
        let epoch = match self.epoch_start_ns {
            Some(e) => e,
            None => {
                self.start_epoch(ev.now_ns);
                ev.now_ns
            }
        };
        let t_s = ns_to_secs(ev.now_ns - epoch);
        let rtt_s = ns_to_secs(ev.srtt_ns);
        // §4.4/4.5: aim for where the curve will be one RTT from now.
        let target = self.w_cubic(t_s + rtt_s).clamp(self.cwnd, 1.5 * self.cwnd);
        let acked = acked as f64;
        if self.cfg.reno_friendly {
            // §4.3 eq. 4, with α = 1 once W_est has reached cwnd_prior.
            let beta = self.cfg.beta;
            let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { 3.0 * (1.0 - beta) / (1.0 + beta) };
            self.w_est += alpha * acked / self.cwnd;
            if self.w_cubic(t_s) < self.w_est {
                self.cwnd = self.cwnd.max(self.w_est);
                return;
            }
        }
        self.cwnd += (target - self.cwnd) / self.cwnd * acked;
    }

    /// §4.6–4.7: remember the window, apply fast convergence, reduce.
    fn reduce(&mut self, beta: f64, flight_segs: u32) {
        self.w_max = if self.cfg.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + beta) / 2.0
        } else {
            self.cwnd
        };
        self.cwnd_prior = self.cwnd;
        self.ssthresh = ((flight_segs as f64 * beta) as u32).max(2);
        self.epoch_start_ns = None;
    }

    /// W_max, for tests and probes.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    pub fn k_s(&self) -> f64 {
        self.k_s
    }
    pub fn cwnd_exact(&self) -> f64 {
        self.cwnd
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, ev: &AckEvent) {
        if !ev.may_grow() {
            return;
        }
        let mut acked = ev.acked_segs;
        if (self.cwnd as u32) < self.ssthresh {
            if let Some(h) = &mut self.hystart {
                let g = h.on_ack(ev, acked);
                self.cwnd = (self.cwnd + g.segs as f64).min(self.ssthresh as f64);
                if g.exit {
                    self.ssthresh = self.cwnd as u32;
                }
                return;
            }
            let mut w = self.cwnd as u32;
            acked = slow_start(&mut w, self.ssthresh, acked);
            self.cwnd = w as f64 + self.cwnd.fract();
            if acked == 0 {
                return;
            }
        }
        self.congestion_avoidance(ev, acked);
    }

    fn on_congestion(&mut self, ev: &CongestionEvent) {
        let beta = match ev.kind {
            CongestionKind::Loss => self.cfg.beta,
            CongestionKind::Ecn => self.cfg.beta_ecn.unwrap_or(self.cfg.beta),
        };
        self.reduce(beta, ev.in_flight_segs);
        self.cwnd = self.ssthresh as f64;
        if let Some(h) = &mut self.hystart {
            h.on_congestion();
        }
    }

    fn on_rto(&mut self, _now_ns: u64, in_flight: u32, already_reduced: bool) {
        // §4.8: update W_max and ssthresh as for loss, then restart from the loss window.
        if !already_reduced {
            self.reduce(self.cfg.beta, in_flight);
        }
        self.epoch_start_ns = None;
        if let Some(h) = &mut self.hystart {
            h.on_rto();
        }
        self.cwnd = LOSS_WINDOW_SEGS as f64;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd as u32
    }
    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["w_max", "k_s"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.w_max;
        out[1] = self.k_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{NS_PER_MS, NS_PER_SEC};

    /// Drives a cwnd-limited flow with one ACK per segment at a fixed RTT:
    /// each round acks the whole window.
    fn run_rounds(c: &mut Cubic, start_ns: u64, rtt_ns: u64, rounds: u64) -> Vec<(u64, f64)> {
        let mut trace = vec![];
        let mut now = start_ns;
        for _ in 0..rounds {
            let w = c.cwnd() as u64;
            for i in 0..w {
                let ev = AckEvent {
                    now_ns: now + rtt_ns * i / w,
                    acked_segs: 1,
                    delivered_segs: 1,
                    srtt_ns: rtt_ns,
                    cwnd_limited: true,
                    ..Default::default()
                };
                c.on_ack(&ev);
            }
            now += rtt_ns;
            trace.push((now, c.cwnd_exact()));
        }
        trace
    }

    #[test]
    fn reduction_uses_beta_0_7_and_fast_convergence() {
        let mut c = Cubic::new(CubicConfig::default()).unwrap();
        c.cwnd = 100.0;
        c.ssthresh = 50;
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 100, srtt_ns: 0 });
        assert_eq!(c.cwnd(), 70);
        assert_eq!(c.w_max(), 100.0);
        // A second loss below W_max: fast convergence releases bandwidth (W_max = cwnd·(1+β)/2).
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 70, srtt_ns: 0 });
        assert_eq!(c.cwnd(), 49);
        assert!((c.w_max() - 70.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn window_follows_the_cubic_curve_after_a_reduction() {
        // Large window, long RTT: the cubic region dominates the Reno-friendly one.
        let cfg = CubicConfig { reno_friendly: false, hystart: false, ..Default::default() };
        let mut c = Cubic::new(cfg).unwrap();
        c.cwnd = 1000.0;
        c.ssthresh = 500;
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 1000, srtt_ns: 0 });
        assert_eq!(c.cwnd(), 700);
        let rtt = 100 * NS_PER_MS;
        let trace = run_rounds(&mut c, 0, rtt, 120);
        // K = cbrt((1000 − 700)/0.4) = cbrt(750) ≈ 9.086 s.
        let k = libm::cbrt(300.0 / 0.4);
        assert!((c.k_s() - k).abs() < 1e-9);
        for &(t_ns, cwnd) in trace.iter().skip(5) {
            let t = t_ns as f64 / NS_PER_SEC as f64;
            let expect = 0.4 * (t - k).powi(3) + 1000.0;
            // The per-ACK step chases W(t + RTT): allow 3 % or 3 segments.
            assert!((cwnd - expect).abs() <= (0.03 * expect).max(3.0), "t {t:.1}s cwnd {cwnd:.1} expect {expect:.1}");
        }
    }

    #[test]
    fn reno_friendly_region_grows_at_least_like_reno_with_alpha_0_529() {
        // Small window and short RTT: CUBIC's curve is flatter than Reno's line.
        let mut c = Cubic::new(CubicConfig::default()).unwrap();
        c.cwnd = 20.0;
        c.ssthresh = 10;
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 20, srtt_ns: 0 });
        let start = c.cwnd_exact();
        run_rounds(&mut c, 0, NS_PER_MS, 50);
        // W_est grows α = 3(1−0.7)/(1+0.7) ≈ 0.529 segments per RTT while below cwnd_prior (20).
        let reno_like = start + 0.529 * 50.0;
        assert!(c.cwnd_exact() >= reno_like - 1.0, "cwnd {} vs {}", c.cwnd_exact(), reno_like);
    }

    #[test]
    fn abe_beta_ecn_applies_only_to_ecn() {
        let cfg = CubicConfig { beta_ecn: Some(0.85), ..Default::default() };
        let mut c = Cubic::new(cfg).unwrap();
        c.cwnd = 100.0;
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Ecn, in_flight_segs: 100, srtt_ns: 0 });
        assert_eq!(c.cwnd(), 85);
        c.cwnd = 100.0;
        c.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 100, srtt_ns: 0 });
        assert_eq!(c.cwnd(), 70);
    }
}
