//! BBRv2's congestion signals (tcp_bbr2.c v2alpha): the loss and DCTCP-style
//! ECN "inflight too high" test, the per-round ECN alpha, the lower bounds
//! bw_lo/inflight_lo cut by beta (loss) or alpha x ecn_factor (ECN), and the
//! STARTUP exits on loss or ECN.
use super::{Bbr2, FULL_ECN_CNT, FULL_LOSS_CNT};
use crate::cc::RateSample;
impl Bbr2 {
    /// Whether the ECN logic may be switched on now: `ecn` asked for (the
    /// v2alpha's `bbr_ecn_enable`), per-packet feedback negotiated (aqmlab's
    /// condition: upstream leaves negotiation out of scope and assumes
    /// DCTCP-style marks), and min_rtt ≤ `ecn_max_rtt`, where 0 means any RTT
    /// (`bbr_ecn_max_rtt_us`: "Disabled when 0").
    pub(super) fn ecn_rtt_ok(&self) -> bool {
        self.cfg.ecn && self.accurate_ecn && (self.cfg.ecn_max_rtt_ns == 0 || self.min_rtt_ns <= self.cfg.ecn_max_rtt_ns)
    }

    pub(super) fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost_segs > 0 && rs.tx_in_flight_segs > 0 && rs.lost_segs as f64 > rs.tx_in_flight_segs as f64 * self.cfg.loss_thresh {
            return true;
        }
        rs.delivered_ce_segs > 0
            && rs.delivered_segs > 0
            && self.ecn_eligible
            && self.cfg.ecn_thresh > 0.0
            && rs.delivered_ce_segs as f64 >= rs.delivered_segs as f64 * self.cfg.ecn_thresh
    }


    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = u32::MAX;
    }


    pub(super) fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(self.max_bw(), 1.0);
    }


    /// Once per round (tcp_bbr2.c `bbr2_update_ecn_alpha`): decide ECN
    /// eligibility, then alpha = (1 − g)·alpha + g·CE/delivered over the round.
    pub(super) fn update_ecn_alpha(&mut self) {
        // ecn_factor = 0 switches the whole ECN response off upstream,
        // eligibility and the "too high" test included.
        if self.cfg.ecn_factor == 0.0 {
            return;
        }
        let delivered = self.delivered - self.alpha_last_delivered;
        if delivered == 0 {
            return;
        }
        if !self.ecn_eligible && self.ecn_rtt_ok() {
            // Sticky, as upstream: eligibility is only ever switched on.
            self.ecn_eligible = true;
        }
        let ce_ratio = (self.delivered_ce - self.alpha_last_delivered_ce) as f64 / delivered as f64;
        let g = self.cfg.ecn_alpha_gain;
        self.ecn_alpha = ((1.0 - g) * self.ecn_alpha + g * ce_ratio).min(1.0);
        self.alpha_last_delivered = self.delivered;
        self.alpha_last_delivered_ce = self.delivered_ce;
        // Exit STARTUP after rounds with a high CE ratio.
        if !self.full_bw_reached && self.ecn_eligible && self.cfg.ecn_thresh > 0.0 {
            if ce_ratio >= self.cfg.ecn_thresh {
                self.startup_ecn_rounds += 1;
            } else {
                self.startup_ecn_rounds = 0;
            }
            if self.startup_ecn_rounds >= FULL_ECN_CNT {
                self.handle_queue_too_high_in_startup();
            }
        }
    }

    pub(super) fn adapt_lower_bounds(&mut self) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = u32::MAX;
        let mut ecn_bw_lo = f64::INFINITY;
        if self.ecn_in_round && self.ecn_eligible && self.cfg.ecn_factor > 0.0 {
            let cut = 1.0 - self.ecn_alpha * self.cfg.ecn_factor;
            if self.bw_lo.is_infinite() {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == u32::MAX {
                self.inflight_lo = self.cwnd;
            }
            ecn_inflight_lo = (self.inflight_lo as f64 * cut) as u32;
            ecn_bw_lo = self.bw_lo * cut;
        }
        if self.loss_in_round {
            if self.bw_lo.is_infinite() {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == u32::MAX {
                self.inflight_lo = self.cwnd;
            }
            let keep = 1.0 - self.cfg.beta;
            self.bw_lo = self.bw_latest.max(self.bw_lo * keep);
            self.inflight_lo = self.inflight_latest.max((self.inflight_lo as f64 * keep) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.min(ecn_bw_lo);
    }

    pub(super) fn update_congestion_signals(&mut self, rs: &RateSample, bw: f64) {
        self.loss_round_start = false;
        if rs.interval_ns == 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.app_limited || bw >= self.max_bw() {
            self.max_bw[1] = self.max_bw[1].max(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        self.bw_latest = self.bw_latest.max(bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered_segs as u32);
        if rs.prior_delivered < self.loss_round_delivered {
            return;
        }
        self.loss_round_delivered = self.delivered;
        self.loss_round_start = true;
        self.adapt_lower_bounds();
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.bw_latest = bw;
        self.inflight_latest = rs.delivered_segs as u32;
    }


    pub(super) fn check_loss_too_high_in_startup(&mut self, rs: &RateSample, in_recovery: bool) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 15 {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start && in_recovery && self.loss_events_in_round >= FULL_LOSS_CNT && self.is_inflight_too_high(rs) {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }
}
