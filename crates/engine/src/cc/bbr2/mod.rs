//! BBRv2, as in Google's v2alpha Linux release (`net/ipv4/tcp_bbr2.c`).
//!
//! References (read in this order):
//! - Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
//!   14(5), 2016 (the model: max bandwidth × min RTT).
//! - draft-cardwell-iccrg-bbr-congestion-control (BBRv2/v3 state machine).
//! - google/bbr `tcp_bbr2.c` (v2alpha): the constants and the exact rules
//!   this file follows — STARTUP/DRAIN/PROBE_BW(DOWN, CRUISE, REFILL,
//!   UP)/PROBE_RTT, the 2-cycle max-bw filter, bw_lo/bw_hi and
//!   inflight_lo/inflight_hi bounds, loss (2 %) and DCTCP-style ECN (50 %)
//!   "inflight too high" signals, and Reno-coexistence probe timing.
//!
//! Bandwidth is kept in segments per second (f64) and windows in segments.
//! DEVIATIONS (documented in docs/algorithms/tcp.md): no TSO/GSO, so the
//! quantisation budget uses Linux's `bbr_min_tso_segs` (1 or 2 segments);
//! in-flight data is not adjusted for packets waiting for their pacing
//! departure time (`bbr_packets_in_net_at_edt`); the per-lost-packet
//! refinement of inflight_hi (`bbr2_skb_marked_lost`) is replaced by the
//! per-ACK rate-sample check; no undo of spurious losses; PROBE_RTT does not
//! mark samples app-limited. ECN logic is off unless `ecn = true` (as the
//! v2alpha's `bbr_ecn_enable`) and accurate ECN was negotiated, and it only
//! switches on at a round start with min_rtt ≤ `ecn_max_rtt` (5 ms; 0 = any
//! RTT); the `ecn_eligible` probe says whether it did. Parameter-by-parameter
//! comparison with the source: docs/algorithms/bbr2.md.

use super::{AckEvent, CongestionControl, CongestionEvent, CongestionKind, Established, Phase, INITIAL_WINDOW_SEGS};
use crate::sim::rng::{Domain, SimRng};
use crate::sim::{NS_PER_MS, NS_PER_SEC};
use serde::{Deserialize, Serialize};

mod model;
mod probe;
mod signals;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr2Config {
    /// Use DCTCP-style ECN signals (`bbr_ecn_enable`; "lab testing" only upstream).
    pub ecn: bool,
    /// Multiplicative cut of bw_lo/inflight_lo on loss (1 − beta).
    pub beta: f64,
    /// Loss rate that says inflight is too high.
    pub loss_thresh: f64,
    /// CE ratio that says inflight is too high.
    pub ecn_thresh: f64,
    /// inflight_lo cut factor per unit of ECN alpha.
    pub ecn_factor: f64,
    /// EWMA gain of the ECN alpha.
    pub ecn_alpha_gain: f64,
    /// The ECN logic switches on only at a round start with min_rtt at most
    /// this (`bbr_ecn_max_rtt_us` = 5000); 0 means at any RTT.
    #[serde(rename = "ecn_max_rtt", with = "crate::sim::units::serde_duration")]
    pub ecn_max_rtt_ns: u64,
    /// Fraction of inflight_hi left free while cruising.
    pub inflight_headroom: f64,
    /// Pacing and cwnd gain in STARTUP (2/ln 2).
    pub high_gain: f64,
    /// cwnd gain in PROBE_BW.
    pub cwnd_gain: f64,
    /// Average pacing rate stays this fraction below the bw estimate.
    pub pacing_margin: f64,
    /// PROBE_RTT interval.
    #[serde(rename = "probe_rtt_interval", with = "crate::sim::units::serde_duration")]
    pub probe_rtt_win_ns: u64,
    /// Time spent at the PROBE_RTT window.
    #[serde(rename = "probe_rtt_duration", with = "crate::sim::units::serde_duration")]
    pub probe_rtt_mode_ns: u64,
    /// Initial window in segments.
    pub initial_window: u32,
}

impl Default for Bbr2Config {
    fn default() -> Self {
        Bbr2Config {
            // tcp_bbr2.c bbr_ecn_enable = false (ECN use is experimental upstream).
            ecn: false,
            // bbr_beta = 30 %.
            beta: 0.3,
            // bbr_loss_thresh = 2 %.
            loss_thresh: 0.02,
            // bbr_ecn_thresh = 50 %.
            ecn_thresh: 0.5,
            // bbr_ecn_factor = 1/3.
            ecn_factor: 1.0 / 3.0,
            // bbr_ecn_alpha_gain = 1/16.
            ecn_alpha_gain: 1.0 / 16.0,
            // bbr_ecn_max_rtt_us = 5000.
            ecn_max_rtt_ns: 5 * NS_PER_MS,
            // bbr_inflight_headroom = 15 %.
            inflight_headroom: 0.15,
            // bbr_high_gain = 2.885 (2/ln 2): doubles the rate every round.
            high_gain: 2.885,
            // bbr_cwnd_gain = 2.
            cwnd_gain: 2.0,
            // bbr_pacing_margin_percent = 1.
            pacing_margin: 0.01,
            // bbr_probe_rtt_win_ms = 5000.
            probe_rtt_win_ns: 5 * NS_PER_SEC,
            // bbr_probe_rtt_mode_ms = 200.
            probe_rtt_mode_ns: 200 * NS_PER_MS,
            // RFC 6928.
            initial_window: INITIAL_WINDOW_SEGS,
        }
    }
}

/// tcp_bbr2.c constants that are not exposed as parameters.
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_CNT: u32 = 3;
const FULL_LOSS_CNT: u32 = 8;
const FULL_ECN_CNT: u32 = 2;
const CWND_MIN_TARGET: u32 = 4;
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
const MIN_RTT_WIN_NS: u64 = 10 * NS_PER_SEC;
const BW_PROBE_PIF_GAIN: f64 = 1.25;
const BW_PROBE_RENO_GAIN: f64 = 1.0;
const BW_PROBE_MAX_ROUNDS: u32 = 63;
const BW_PROBE_RAND_ROUNDS: u64 = 2;
const BW_PROBE_BASE_NS: u64 = 2 * NS_PER_SEC;
const BW_PROBE_RAND_NS: u64 = NS_PER_SEC;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX_NS: u64 = 100 * NS_PER_MS;
const PROBE_UP_GAIN: f64 = 1.25;
const PROBE_DOWN_GAIN: f64 = 0.75;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cycle {
    Up,
    Down,
    Cruise,
    Refill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

#[derive(Debug, Clone)]
pub struct Bbr2 {
    cfg: Bbr2Config,
    rng: SimRng,
    cwnd: u32,
    ssthresh: u32,
    /// Pacing rate, segments per second.
    pacing_rate: f64,
    segment_bytes: u32,
    accurate_ecn: bool,
    mode: Mode,
    cycle: Cycle,
    ack_phase: AckPhase,
    pacing_gain: f64,
    cwnd_gain: f64,
    init_cwnd: u32,
    prior_cwnd: u32,
    in_loss_recovery: bool,
    /// In the stack's RTO loss state (Linux TCP_CA_Loss), left when recovery ends.
    in_rto_loss: bool,
    // Round trips.
    next_rtt_delivered: u64,
    round_start: bool,
    rounds_since_probe: u32,
    // min RTT.
    min_rtt_ns: u64,
    min_rtt_stamp_ns: u64,
    probe_rtt_min_ns: u64,
    probe_rtt_min_stamp_ns: u64,
    probe_rtt_done_ns: Option<u64>,
    probe_rtt_round_done: bool,
    // Full pipe.
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    // Bandwidth model (segments/s).
    max_bw: [f64; 2],
    bw_lo: f64,
    bw_hi: f64,
    bw_latest: f64,
    // Inflight model (segments).
    inflight_lo: u32,
    inflight_hi: u32,
    inflight_latest: u32,
    // ACK aggregation.
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    ack_epoch_ns: u64,
    ack_epoch_acked: u32,
    // Congestion signals.
    ecn_eligible: bool,
    ecn_alpha: f64,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    startup_ecn_rounds: u32,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_events_in_round: u32,
    // Bandwidth probing.
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_up_rounds: u32,
    probe_wait_ns: u64,
    cycle_stamp_ns: u64,
    stopped_risky_probe: bool,
    prev_probe_too_high: bool,
    got_ok_bw_probe_sample: bool,
    bw_probe_samples: bool,
    // Totals since start (from rate samples).
    delivered: u64,
    delivered_ce: u64,
}

impl Bbr2 {
    pub fn new(cfg: Bbr2Config) -> Result<Self, String> {
        for (name, v) in [("beta", cfg.beta), ("loss_thresh", cfg.loss_thresh), ("ecn_thresh", cfg.ecn_thresh), ("ecn_factor", cfg.ecn_factor), ("ecn_alpha_gain", cfg.ecn_alpha_gain), ("inflight_headroom", cfg.inflight_headroom), ("pacing_margin", cfg.pacing_margin)] {
            if !(0.0..1.0).contains(&v) {
                return Err(format!("{name}: must lie in [0, 1) (got {v})"));
            }
        }
        if !(cfg.high_gain > 1.0 && cfg.cwnd_gain >= 1.0) {
            return Err("high_gain/cwnd_gain: must exceed 1".into());
        }
        if cfg.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        if cfg.probe_rtt_win_ns == 0 || cfg.probe_rtt_win_ns > MIN_RTT_WIN_NS {
            return Err("probe_rtt_interval: must lie in (0, 10s]".into());
        }
        let iw = cfg.initial_window;
        Ok(Bbr2 {
            rng: SimRng::derive(0, Domain::Cc, 0),
            cwnd: iw,
            ssthresh: u32::MAX,
            pacing_rate: 0.0,
            segment_bytes: 1500,
            accurate_ecn: false,
            mode: Mode::Startup,
            cycle: Cycle::Down,
            ack_phase: AckPhase::Init,
            pacing_gain: cfg.high_gain,
            cwnd_gain: cfg.high_gain,
            init_cwnd: iw,
            prior_cwnd: iw,
            in_loss_recovery: false,
            in_rto_loss: false,
            next_rtt_delivered: 0,
            round_start: false,
            rounds_since_probe: 0,
            min_rtt_ns: u64::MAX,
            min_rtt_stamp_ns: 0,
            probe_rtt_min_ns: u64::MAX,
            probe_rtt_min_stamp_ns: 0,
            probe_rtt_done_ns: None,
            probe_rtt_round_done: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            max_bw: [0.0; 2],
            bw_lo: f64::INFINITY,
            bw_hi: f64::INFINITY,
            bw_latest: 0.0,
            inflight_lo: u32::MAX,
            inflight_hi: u32::MAX,
            inflight_latest: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            ack_epoch_ns: 0,
            ack_epoch_acked: 0,
            ecn_eligible: false,
            ecn_alpha: 1.0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            startup_ecn_rounds: 0,
            // Start sampling the ECN rate after the first full flight is acknowledged.
            loss_round_delivered: 1,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_events_in_round: 0,
            bw_probe_up_cnt: u32::MAX,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            probe_wait_ns: 0,
            cycle_stamp_ns: 0,
            stopped_risky_probe: false,
            prev_probe_too_high: false,
            got_ok_bw_probe_sample: false,
            bw_probe_samples: false,
            delivered: 0,
            delivered_ce: 0,
            cfg,
        })
    }

    /// Current mode, for traces and tests.
    pub fn mode_name(&self) -> &'static str {
        match (self.mode, self.cycle) {
            (Mode::Startup, _) => "startup",
            (Mode::Drain, _) => "drain",
            (Mode::ProbeRtt, _) => "probe_rtt",
            (Mode::ProbeBw, Cycle::Up) => "probe_bw_up",
            (Mode::ProbeBw, Cycle::Down) => "probe_bw_down",
            (Mode::ProbeBw, Cycle::Cruise) => "probe_bw_cruise",
            (Mode::ProbeBw, Cycle::Refill) => "probe_bw_refill",
        }
    }

    /// Estimated bottleneck bandwidth in bit/s.
    pub fn bw_bps(&self) -> f64 {
        self.bw() * self.segment_bytes as f64 * 8.0
    }
}

impl CongestionControl for Bbr2 {
    fn on_established(&mut self, ev: &Established) {
        self.segment_bytes = ev.segment_bytes;
        self.accurate_ecn = ev.accurate_ecn;
        self.min_rtt_ns = ev.srtt_ns.max(1);
        self.min_rtt_stamp_ns = ev.now_ns;
        self.probe_rtt_min_ns = self.min_rtt_ns;
        self.probe_rtt_min_stamp_ns = ev.now_ns;
        self.ack_epoch_ns = ev.now_ns;
        // bbr_init_pacing_rate_from_rtt: high_gain × init_cwnd / RTT.
        let rtt_s = ev.srtt_ns.max(1) as f64 * 1e-9;
        self.pacing_rate = self.cfg.high_gain * self.cwnd as f64 / rtt_s * (1.0 - self.cfg.pacing_margin);
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn set_rng(&mut self, rng: SimRng) {
        self.rng = rng;
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        let Some(&rs) = ev.rate else {
            self.bound_cwnd_for_inflight_model();
            return;
        };
        let now = ev.now_ns;
        self.delivered = rs.prior_delivered + rs.delivered_segs;
        self.delivered_ce += ev.ce_segs as u64;
        self.round_start = false;
        if rs.interval_ns > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.delivered;
            self.round_start = true;
        }
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(255);
            self.update_ecn_alpha();
        }
        self.ecn_in_round |= ev.ece;
        let bw = if rs.interval_ns > 0 { rs.delivered_segs as f64 / (rs.interval_ns as f64 * 1e-9) } else { 0.0 };

        if rs.losses > 0 {
            // tcp_bbr2.c bbr2_skb_marked_lost (the stack marks losses before
            // cong_control): the first loss of a round restarts the loss
            // round, so the lower bounds are cut one full round after it,
            // with bw_latest/inflight_latest measured over the lossy round.
            if !self.loss_in_round {
                self.loss_round_delivered = self.delivered;
            }
            self.loss_in_round = true;
            self.loss_in_cycle = true;
        }
        self.update_congestion_signals(&rs, bw);
        self.update_ack_aggregation(&rs, now);
        self.check_loss_too_high_in_startup(&rs, ev.in_recovery);
        self.check_full_bw_reached(&rs);
        self.check_drain(now, ev.in_flight_segs);
        self.update_cycle_phase(now, &rs, bw, ev.in_flight_segs, ev.cwnd_limited);
        self.update_min_rtt(now, &rs, ev.in_flight_segs);

        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw);
        self.set_cwnd(rs.acked_sacked, bw);
        self.bound_cwnd_for_inflight_model();
        self.loss_in_cycle |= rs.lost_segs > 0;
        self.ecn_in_cycle |= rs.delivered_ce_segs > 0;
    }

    fn on_congestion(&mut self, ev: &CongestionEvent) {
        // BBR sets cwnd from its model; a loss or ECN episode only saves the
        // window for after recovery (tcp_bbr2.c bbr2_ssthresh).
        if ev.kind == CongestionKind::Loss {
            self.save_cwnd();
            self.in_loss_recovery = true;
        }
    }

    fn on_recovery_exit(&mut self, _now_ns: u64) {
        self.in_loss_recovery = false;
        // tcp_bbr2.c bbr2_set_state: cwnd = max(cwnd, prior_cwnd) only on
        // leaving TCP_CA_Loss (an RTO). Leaving fast recovery restores
        // nothing: the stack's tcp_end_cwnd_reduction returns early for a
        // cong_control module, and v2 has no packet-conservation restore.
        if self.in_rto_loss {
            self.in_rto_loss = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
    }

    fn on_rto(&mut self, _now_ns: u64, _in_flight_segs: u32, _already_reduced: bool) {
        // tcp_bbr2.c bbr2_set_state(TCP_CA_Loss); the stack sets cwnd to 1.
        self.save_cwnd();
        self.in_loss_recovery = true;
        self.in_rto_loss = true;
        self.full_bw = 0.0;
        if !self.is_probing_bandwidth() && self.inflight_lo == u32::MAX {
            self.inflight_lo = self.prior_cwnd;
        }
        self.cwnd = 1;
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }
    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        (self.pacing_rate > 0.0).then(|| ((self.pacing_rate * self.segment_bytes as f64 * 8.0) as u64).max(1))
    }
    fn phase(&self) -> Phase {
        Phase::Other(self.mode_name())
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["bw_bps", "min_rtt_ms", "inflight_hi", "inflight_lo", "ecn_alpha", "pacing_gain", "ecn_eligible"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.bw_bps();
        out[1] = if self.min_rtt_ns == u64::MAX { f64::NAN } else { self.min_rtt_ns as f64 / 1e6 };
        out[2] = if self.inflight_hi == u32::MAX { f64::NAN } else { self.inflight_hi as f64 };
        out[3] = if self.inflight_lo == u32::MAX { f64::NAN } else { self.inflight_lo as f64 };
        out[4] = self.ecn_alpha;
        out[5] = self.pacing_gain;
        // 1 once the ECN logic is on (ecn asked for, accurate ECN, min_rtt ≤ ecn_max_rtt).
        out[6] = if self.ecn_eligible { 1.0 } else { 0.0 };
    }
}

#[cfg(test)]
mod tests;
