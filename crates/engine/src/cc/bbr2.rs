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
//! applies while min_rtt ≤ 5 ms.

use super::{AckEvent, CongestionControl, CongestionEvent, CongestionKind, Established, Phase, RateSample, INITIAL_WINDOW_SEGS};
use crate::sim::rng::{Domain, SimRng};
use crate::sim::{NS_PER_MS, NS_PER_SEC};
use serde::{Deserialize, Serialize};

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
    /// ECN logic applies only while min_rtt is at most this.
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

    // ---- model queries -------------------------------------------------------

    fn max_bw(&self) -> f64 {
        self.max_bw[0].max(self.max_bw[1])
    }

    /// The estimated bandwidth: max filter bounded by the short/long-term limits.
    fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo).min(self.bw_hi)
    }

    /// ceil(bw × min_rtt × gain), or the initial window without an RTT.
    fn bdp(&self, bw: f64, gain: f64) -> u32 {
        if self.min_rtt_ns == u64::MAX {
            return self.init_cwnd;
        }
        (bw * self.min_rtt_ns as f64 * 1e-9 * gain).ceil() as u32
    }

    /// Linux `bbr_min_tso_segs`: 2 segments per burst above 1.2 Mbit/s.
    fn tso_segs_goal(&self) -> u32 {
        if self.pacing_rate * self.segment_bytes as f64 * 8.0 < 1.2e6 {
            1
        } else {
            2
        }
    }

    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut c = cwnd.max(3 * self.tso_segs_goal()).max(CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            c += 2;
        }
        c
    }

    fn inflight(&self, bw: f64, gain: f64) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    fn target_inflight(&self) -> u32 {
        self.inflight(self.bw(), 1.0).min(self.cwnd)
    }

    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == u32::MAX {
            return u32::MAX;
        }
        let headroom = ((self.inflight_hi as f64 * self.cfg.inflight_headroom) as u32).max(1);
        self.inflight_hi.saturating_sub(headroom).max(CWND_MIN_TARGET)
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup || (self.mode == Mode::ProbeBw && matches!(self.cycle, Cycle::Refill | Cycle::Up))
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN).max(CWND_MIN_TARGET)
    }

    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost_segs > 0 && rs.tx_in_flight_segs > 0 && rs.lost_segs as f64 > rs.tx_in_flight_segs as f64 * self.cfg.loss_thresh {
            return true;
        }
        rs.delivered_ce_segs > 0
            && rs.delivered_segs > 0
            && self.ecn_eligible
            && self.cfg.ecn_thresh > 0.0
            && rs.delivered_ce_segs as f64 >= rs.delivered_segs as f64 * self.cfg.ecn_thresh
    }

    // ---- state transitions --------------------------------------------------

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_loss_recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = u32::MAX;
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(BW_PROBE_RAND_ROUNDS) as u32;
        self.probe_wait_ns = BW_PROBE_BASE_NS + self.rng.below(BW_PROBE_RAND_NS);
    }

    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round).max(1);
    }

    fn start_probe_refill(&mut self, up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.got_ok_bw_probe_sample = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = self.delivered;
        self.cycle = Cycle::Refill;
    }

    fn start_probe_up(&mut self, now: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = self.delivered;
        self.cycle_stamp_ns = now;
        self.cycle = Cycle::Up;
        self.raise_inflight_hi_slope();
    }

    fn start_probe_down(&mut self, now: u64) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX;
        self.pick_probe_wait();
        self.cycle_stamp_ns = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = self.delivered;
        self.cycle = Cycle::Down;
    }

    fn start_probe_cruise(&mut self) {
        if self.inflight_lo != u32::MAX {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle = Cycle::Cruise;
    }

    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(self.max_bw(), 1.0);
    }

    fn handle_inflight_too_high(&mut self, now: u64, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.app_limited {
            let floor = (self.target_inflight() as f64 * (1.0 - self.cfg.beta)) as u32;
            self.inflight_hi = rs.tx_in_flight_segs.max(floor);
            if self.ecn_eligible && !self.got_ok_bw_probe_sample {
                let cut = 1.0 - self.ecn_alpha * self.cfg.ecn_factor;
                if self.bw_hi.is_infinite() {
                    self.bw_hi = self.max_bw();
                }
                self.bw_hi *= cut;
            }
        }
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            self.start_probe_down(now);
        }
    }

    fn exit_probe_rtt(&mut self, now: u64) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_probe_down(now);
            self.start_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    // ---- per-ACK model updates ----------------------------------------------

    fn update_ecn_alpha(&mut self) {
        let delivered = self.delivered - self.alpha_last_delivered;
        if delivered == 0 {
            return;
        }
        if !self.ecn_eligible && self.cfg.ecn && self.accurate_ecn && self.min_rtt_ns <= self.cfg.ecn_max_rtt_ns {
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

    fn adapt_lower_bounds(&mut self) {
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

    fn update_congestion_signals(&mut self, rs: &RateSample, bw: f64) {
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

    fn update_ack_aggregation(&mut self, rs: &RateSample, now: u64) {
        if rs.acked_sacked == 0 || rs.interval_ns == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(31);
            let thresh = if self.full_bw_reached { EXTRA_ACKED_WIN_RTTS } else { 1 };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_s = now.saturating_sub(self.ack_epoch_ns) as f64 * 1e-9;
        let mut expected = (self.bw() * epoch_s) as u32;
        if self.ack_epoch_acked <= expected {
            self.ack_epoch_acked = 0;
            self.ack_epoch_ns = now;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn check_loss_too_high_in_startup(&mut self, rs: &RateSample, in_recovery: bool) {
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

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, now: u64, in_flight: u32) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), 1.0);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain && in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.mode = Mode::ProbeBw;
            self.start_probe_down(now);
        }
    }

    fn adapt_upper_bounds(&mut self, now: u64, rs: &RateSample, bw: f64, cwnd_limited: bool) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.app_limited && self.max_bw[1] > 0.0 {
                // Keep the max of the last one or two cycles.
                self.max_bw[0] = self.max_bw[1];
                self.max_bw[1] = 0.0;
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_probe_refill(0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(now, rs);
            }
        } else {
            self.got_ok_bw_probe_sample |= self.bw_probe_samples;
            if self.inflight_hi == u32::MAX && self.bw_hi.is_infinite() {
                return false;
            }
            if rs.tx_in_flight_segs > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight_segs;
            }
            if bw > self.bw_hi {
                self.bw_hi = bw;
            }
            if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
                // Raise inflight_hi by one per bw_probe_up_cnt segments ACKed.
                if !cwnd_limited || self.cwnd < self.inflight_hi {
                    self.bw_probe_up_acks = 0;
                } else {
                    self.bw_probe_up_acks += rs.acked_sacked;
                    if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
                        let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
                        self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
                        self.inflight_hi = self.inflight_hi.saturating_add(delta);
                    }
                    if self.round_start {
                        self.raise_inflight_hi_slope();
                    }
                }
            }
        }
        false
    }

    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() as f64 * BW_PROBE_RENO_GAIN) as u32;
        self.rounds_since_probe >= BW_PROBE_MAX_ROUNDS.min(reno_rounds)
    }

    fn check_time_to_probe_bw(&mut self, now: u64) -> bool {
        if now > self.cycle_stamp_ns + self.probe_wait_ns || self.is_reno_coexistence_probe_time() {
            self.start_probe_refill(0);
            return true;
        }
        false
    }

    fn update_cycle_phase(&mut self, now: u64, rs: &RateSample, bw_sample: f64, in_flight: u32, cwnd_limited: bool) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(now, rs, bw_sample, cwnd_limited) || self.mode != Mode::ProbeBw {
            return;
        }
        let bw = self.max_bw();
        match self.cycle {
            Cycle::Cruise => {
                self.check_time_to_probe_bw(now);
            }
            Cycle::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_up(now);
                }
            }
            Cycle::Up => {
                let mut stop = false;
                if self.prev_probe_too_high && in_flight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    stop = true;
                } else if now > self.cycle_stamp_ns + self.min_rtt_ns && in_flight >= self.inflight(bw, BW_PROBE_PIF_GAIN) {
                    stop = true;
                }
                if stop {
                    self.prev_probe_too_high = false;
                    self.start_probe_down(now);
                }
            }
            Cycle::Down => {
                if self.check_time_to_probe_bw(now) {
                    return;
                }
                // drain_to_target: cruise once inflight is under the BDP and the headroom.
                if in_flight <= self.inflight_with_headroom() && in_flight <= self.inflight(bw, 1.0) {
                    self.start_probe_cruise();
                }
            }
        }
    }

    fn update_min_rtt(&mut self, now: u64, rs: &RateSample, in_flight: u32) {
        let probe_rtt_expired = now > self.probe_rtt_min_stamp_ns + self.cfg.probe_rtt_win_ns;
        if rs.rtt_ns > 0 && (rs.rtt_ns <= self.probe_rtt_min_ns || probe_rtt_expired) {
            self.probe_rtt_min_ns = rs.rtt_ns;
            self.probe_rtt_min_stamp_ns = now;
        }
        let min_rtt_expired = now > self.min_rtt_stamp_ns + MIN_RTT_WIN_NS;
        if self.probe_rtt_min_ns <= self.min_rtt_ns || min_rtt_expired {
            self.min_rtt_ns = self.probe_rtt_min_ns;
            self.min_rtt_stamp_ns = self.probe_rtt_min_stamp_ns;
        }
        if probe_rtt_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_ns = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = self.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done_ns {
                None if in_flight <= self.probe_rtt_cwnd() => {
                    self.probe_rtt_done_ns = Some(now + self.cfg.probe_rtt_mode_ns);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = self.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now > done {
                        self.probe_rtt_min_stamp_ns = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        self.exit_probe_rtt(now);
                    }
                }
                None => {}
            }
        }
    }

    fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (self.cfg.high_gain, self.cfg.high_gain),
            Mode::Drain => (1.0 / self.cfg.high_gain, self.cfg.high_gain),
            Mode::ProbeBw => (
                match self.cycle {
                    Cycle::Up => PROBE_UP_GAIN,
                    Cycle::Down => PROBE_DOWN_GAIN,
                    Cycle::Cruise | Cycle::Refill => 1.0,
                },
                self.cfg.cwnd_gain,
            ),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    fn set_pacing_rate(&mut self, bw: f64) {
        let rate = bw * self.pacing_gain * (1.0 - self.cfg.pacing_margin);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, acked: u32, bw: f64) {
        if acked > 0 {
            let mut target = self.bdp(bw, self.cwnd_gain);
            // ACK aggregation allowance, bounded by 100 ms at the estimated bw.
            let max_aggr = (self.bw() * EXTRA_ACKED_MAX_NS as f64 * 1e-9) as u32;
            target += self.extra_acked().min(max_aggr);
            let target = self.quantization_budget(target);
            let mut cwnd = self.cwnd;
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            self.cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    fn bound_cwnd_for_inflight_model(&mut self) {
        let mut cap = u32::MAX;
        if self.mode == Mode::ProbeBw && self.cycle != Cycle::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.cycle == Cycle::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        self.cwnd = self.cwnd.min(cap);
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
        if self.in_loss_recovery {
            self.in_loss_recovery = false;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
    }

    fn on_rto(&mut self, _now_ns: u64, _in_flight_segs: u32, _already_reduced: bool) {
        // tcp_bbr2.c bbr2_set_state(TCP_CA_Loss); the stack sets cwnd to 1.
        self.save_cwnd();
        self.in_loss_recovery = true;
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
        &["bw_bps", "min_rtt_ms", "inflight_hi", "inflight_lo", "ecn_alpha", "pacing_gain"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.bw_bps();
        out[1] = if self.min_rtt_ns == u64::MAX { f64::NAN } else { self.min_rtt_ns as f64 / 1e6 };
        out[2] = if self.inflight_hi == u32::MAX { f64::NAN } else { self.inflight_hi as f64 };
        out[3] = if self.inflight_lo == u32::MAX { f64::NAN } else { self.inflight_lo as f64 };
        out[4] = self.ecn_alpha;
        out[5] = self.pacing_gain;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> Established {
        Established { now_ns: 0, srtt_ns: 10 * NS_PER_MS, segment_bytes: 1500, accurate_ecn: false }
    }

    /// One RTT (10 ms) of ACKs, each acknowledging 2 segments, at a delivery
    /// rate of `bw` segments/s; every rate sample spans the last RTT.
    fn round(b: &mut Bbr2, now: &mut u64, bw: f64, delivered: &mut u64, in_flight: u32, losses_first: u32) {
        let per_rtt = (bw * 0.01) as u64;
        let acks = per_rtt / 2;
        for k in 0..acks {
            *now += 10 * NS_PER_MS / acks;
            *delivered += 2;
            let ev = AckEvent {
                now_ns: *now,
                acked_segs: 2,
                delivered_segs: 2,
                in_flight_segs: in_flight,
                cwnd_limited: true,
                rate: Some(&RateSample {
                    delivered_segs: per_rtt,
                    interval_ns: 10 * NS_PER_MS,
                    tx_in_flight_segs: in_flight,
                    rtt_ns: 10 * NS_PER_MS,
                    prior_delivered: delivered.saturating_sub(per_rtt),
                    acked_sacked: 2,
                    losses: if k == 0 { losses_first } else { 0 },
                    ..Default::default()
                }),
                ..Default::default()
            };
            b.on_ack(&ev);
        }
    }

    #[test]
    fn startup_paces_at_high_gain_and_exits_after_three_flat_rounds() {
        let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
        b.on_established(&est());
        // Initial pacing: 2.885 × 10 segments / 10 ms × 0.99.
        let expect = 2.885 * 10.0 / 0.01 * 0.99 * 1500.0 * 8.0;
        assert!((b.pacing_rate_bps().unwrap() as f64 - expect).abs() / expect < 1e-6);
        let (mut delivered, mut now) = (0, 0);
        // Bandwidth flat at 1000 segments/s: full pipe after 3 rounds without 25 % growth.
        for _ in 0..6 {
            round(&mut b, &mut now, 1000.0, &mut delivered, 20, 0);
        }
        assert!(b.full_bw_reached, "mode {}", b.mode_name());
        assert_ne!(b.mode, Mode::Startup);
        // BDP = 1000 segments/s × 10 ms = 10 segments.
        assert_eq!(b.bdp(b.max_bw(), 1.0), 10);
    }

    #[test]
    fn probe_bw_settles_with_cwnd_near_two_bdp_and_pacing_near_bw() {
        let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
        b.on_established(&est());
        let (mut delivered, mut now) = (0, 0);
        for _ in 0..50 {
            round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
        }
        assert_eq!(b.mode, Mode::ProbeBw);
        // BDP = 50 segments; PROBE_BW cwnd target is 2·BDP plus small budgets.
        assert!((100..=110).contains(&b.cwnd()), "cwnd {}", b.cwnd());
        let bw_bps = 5000.0 * 1500.0 * 8.0;
        let pacing = b.pacing_rate_bps().unwrap() as f64;
        assert!(pacing > 0.7 * bw_bps && pacing < 1.3 * bw_bps, "pacing {pacing} vs bw {bw_bps}");
    }

    #[test]
    fn loss_in_a_round_cuts_inflight_lo_by_beta_when_not_probing() {
        let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
        b.on_established(&est());
        let (mut delivered, mut now) = (0, 0);
        for _ in 0..20 {
            round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
        }
        assert!(!b.is_probing_bandwidth(), "mode {}", b.mode_name());
        assert_eq!(b.inflight_lo, u32::MAX);
        let cwnd = b.cwnd();
        // A loss in this round; at the round's end inflight_lo = max(latest, 0.7 · cwnd).
        round(&mut b, &mut now, 5000.0, &mut delivered, 50, 1);
        round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
        assert_eq!(b.inflight_lo, ((cwnd as f64 * 0.7) as u32).max(50));
    }
}
