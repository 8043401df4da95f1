//! DCTCP, RFC 8257.
//!
//! References (read in this order):
//! - RFC 8257 §3.3 (sender: α ← (1 − g)·α + g·F once per window of data,
//!   g = 1/16; on ECE, cwnd ← cwnd·(1 − α/2) at most once per window),
//!   §3.2 (receiver: per-packet CE feedback, immediate ACK on CE change; in
//!   the TCP receiver), §3.4 (loss: as standard TCP):
//!   <https://www.rfc-editor.org/rfc/rfc8257#section-3>
//! - Linux net/ipv4/tcp_dctcp.c for the initial α = 1 (`dctcp_alpha_on_init`
//!   = 1024), so the first reduction halves the window; RFC 8257 leaves α's
//!   initial value open (pitfall 9 of the spec digest).
//!
//! Growth is Reno's (slow start, then one segment per window).

use super::reno::reduced_ssthresh;
use super::{additive_increase, slow_start, AckEvent, CongestionControl, CongestionEvent, CongestionKind, INITIAL_WINDOW_SEGS, LOSS_WINDOW_SEGS};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DctcpConfig {
    /// EWMA gain g for α.
    pub g: f64,
    /// α before the first window of feedback.
    pub alpha_init: f64,
    /// Initial window in segments.
    pub initial_window: u32,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            // RFC 8257 §4.2 and Linux dctcp_shift_g = 4: g = 1/16.
            g: 1.0 / 16.0,
            // Linux dctcp_alpha_on_init = 1024 (= 1.0): conservative first reduction.
            alpha_init: 1.0,
            // RFC 6928.
            initial_window: INITIAL_WINDOW_SEGS,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Dctcp {
    cfg: DctcpConfig,
    cwnd: u32,
    ssthresh: u32,
    cwnd_cnt: u32,
    /// Estimate of the fraction of marked packets, in [0, 1].
    alpha: f64,
    /// End of the current observation window (snd_nxt when it began).
    window_end: u64,
    delivered_in_window: u64,
    ce_in_window: u64,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig) -> Result<Self, String> {
        if !(cfg.g > 0.0 && cfg.g <= 1.0) {
            return Err(format!("g: must lie in (0, 1] (got {})", cfg.g));
        }
        if !(0.0..=1.0).contains(&cfg.alpha_init) {
            return Err(format!("alpha_init: must lie in [0, 1] (got {})", cfg.alpha_init));
        }
        if cfg.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        Ok(Dctcp {
            cwnd: cfg.initial_window,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            alpha: cfg.alpha_init,
            window_end: 0,
            delivered_in_window: 0,
            ce_in_window: 0,
            cfg,
        })
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// RFC 8257 §3.3: accumulate, and once a window of data is acknowledged,
    /// fold the marked fraction F into α.
    fn update_alpha(&mut self, ev: &AckEvent) {
        self.delivered_in_window += ev.delivered_segs as u64;
        self.ce_in_window += ev.ce_segs as u64;
        if ev.snd_una >= self.window_end {
            if self.delivered_in_window > 0 {
                let f = self.ce_in_window as f64 / self.delivered_in_window as f64;
                self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g * f;
            }
            self.window_end = ev.snd_nxt;
            self.delivered_in_window = 0;
            self.ce_in_window = 0;
        }
    }
}

impl CongestionControl for Dctcp {
    fn on_ack(&mut self, ev: &AckEvent) {
        self.update_alpha(ev);
        if !ev.may_grow() {
            return;
        }
        let mut acked = ev.acked_segs;
        if self.cwnd < self.ssthresh {
            acked = slow_start(&mut self.cwnd, self.ssthresh, acked);
            if acked == 0 {
                return;
            }
        }
        let w = self.cwnd;
        additive_increase(&mut self.cwnd, &mut self.cwnd_cnt, w, acked);
    }

    fn on_congestion(&mut self, ev: &CongestionEvent) {
        self.ssthresh = match ev.kind {
            // RFC 8257 §3.3 eq. (2), from cwnd as Linux dctcp_ssthresh does.
            CongestionKind::Ecn => ((self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u32).max(2),
            // RFC 8257 §3.4: loss is handled as by standard TCP.
            CongestionKind::Loss => reduced_ssthresh(ev.in_flight_segs, 0.5),
        };
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
    }

    fn on_rto(&mut self, _now_ns: u64, in_flight: u32, already_reduced: bool) {
        if !already_reduced {
            self.ssthresh = reduced_ssthresh(in_flight, 0.5);
        }
        self.cwnd = LOSS_WINDOW_SEGS;
        self.cwnd_cnt = 0;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }
    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["alpha"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.alpha;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_ack(snd_una: u64, snd_nxt: u64, delivered: u32, ce: u32) -> AckEvent<'static> {
        AckEvent { snd_una, snd_nxt, delivered_segs: delivered, ce_segs: ce, acked_segs: delivered, cwnd_limited: true, ..Default::default() }
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction_with_gain_one_sixteenth() {
        let mut d = Dctcp::new(DctcpConfig::default()).unwrap();
        // First window: 25 % marked -> α = 15/16·1 + 1/16·0.25.
        d.on_ack(&window_ack(0, 10, 0, 0)); // opens the first window at snd_nxt = 10
        d.on_ack(&window_ack(10, 20, 8, 2));
        assert!((d.alpha() - (15.0 / 16.0 + 0.25 / 16.0)).abs() < 1e-12);
        // Many windows at 25 %: α → 0.25.
        let mut una = 20;
        for _ in 0..200 {
            d.on_ack(&window_ack(una + 10, una + 20, 8, 2));
            una += 10;
        }
        assert!((d.alpha() - 0.25).abs() < 1e-3, "alpha {}", d.alpha());
    }

    #[test]
    fn ecn_reduction_is_proportional_to_alpha_and_loss_halves() {
        let mut d = Dctcp::new(DctcpConfig { alpha_init: 0.2, ..Default::default() }).unwrap();
        d.cwnd = 100;
        d.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Ecn, in_flight_segs: 100, srtt_ns: 0 });
        assert_eq!(d.cwnd(), 90); // 100·(1 − 0.2/2)
        d.on_congestion(&CongestionEvent { now_ns: 0, kind: CongestionKind::Loss, in_flight_segs: 90, srtt_ns: 0 });
        assert_eq!(d.cwnd(), 45);
    }

    #[test]
    fn alpha_updates_once_per_window_not_per_ack() {
        let mut d = Dctcp::new(DctcpConfig::default()).unwrap();
        d.on_ack(&window_ack(0, 100, 0, 0));
        // Acks inside the window (snd_una < 100) must not touch α.
        for una in (10..100).step_by(10) {
            d.on_ack(&window_ack(una, 100, 10, 10));
            assert_eq!(d.alpha(), 1.0);
        }
    }
}
