//! TCP Prague, as L4STeam's Linux module v0.6 runs it.
//!
//! References (read in this order):
//! - draft-briscoe-iccrg-prague-congestion-control §2 (the requirements:
//!   ECT(1) with AccECN feedback, a DCTCP-like α/2 response per round,
//!   Reno-friendly loss response, pacing, RTT independence toward a
//!   reference RTT).
//! - L4STeam/linux `net/ipv4/tcp_prague.c`, MODULE_VERSION "0.6" (the
//!   facts below; no code is taken from it, it is GPL):
//!   - α: EWMA with g = 1/16 (`PRAGUE_SHIFT_G` = 4), starting at 1 and
//!     frozen until the first CE is seen (`saw_ce`); updated when a round
//!     ends (snd_una reaches the snd_nxt recorded at its start) and, once
//!     RTT independence is active, only if a target RTT passed since the
//!     last update (`prague_should_update_ewma`).
//!   - The window is an integer `cwnd` plus a signed carry `cwnd_cnt`.
//!     Each ACK adds (acked − CE-marked)·ai/cwnd to the carry unless the
//!     flow is in loss or not cwnd-limited, CWR or not (`prague_update_cwnd`:
//!     "unsaturated" increase); then cwnd moves by at most one segment per
//!     ACK when the carry crosses ±1, and every decrement sets
//!     ssthresh = cwnd, floored at `MIN_CWND` = 2.
//!   - Entering CWR (ECE) subtracts α·cwnd/2 from the carry, at most once
//!     per target RTT once RTT independence is active (`prague_enter_cwr`).
//!   - Entering recovery or a timeout (`prague_enter_loss`) subtracts half
//!     the window (cwnd/2 + carry/2) and suspends growth until the
//!     connection is back in the Open state.
//!   - `ssthresh` hook returns ssthresh unchanged: the reduction comes only
//!     from the carry; Linux's PRR does not run for a `cong_control` module.
//!   - RTT independence (`prague_rtt_scaling`, default RATE): after 500
//!     rounds out of slow start (`prague_rtt_transition`), ai = (srtt/target)²
//!     for srtt below the 25 ms target (`prague_rtt_target`), with RTTs in
//!     units of 128 µs (`RTT_UNIT` = 7); SCALABLE and ADDITIVE variants.
//!   - Pacing at mtu·max(cwnd, in flight)/srtt, doubled while
//!     cwnd < ssthresh/2 (`prague_update_pacing_rate`).
//!   - Without ECN it becomes Reno ("prague-reno").
//!
//! aqmlab's choices where the model differs (docs/algorithms/tcp.md#prague):
//! f64 state instead of 20-bit fixed point; the 100 ms cap on scaled RTTs
//! compared in the same unit as the RTT (the module compares 128 µs units
//! with microseconds, so its cap never applies); Reno fallback whenever
//! AccECN is not negotiated; no GSO burst sizing (aqmlab paces per packet);
//! no undo; no classic-ECN-AQM detector (off by default in the module).

use super::reno::{Reno, RenoConfig};
use super::{slow_start, AckEvent, CongestionControl, CongestionEvent, CongestionKind, Established, INITIAL_WINDOW_SEGS};
use crate::sim::NS_PER_SEC;
use serde::{Deserialize, Serialize};

/// How additive increase is scaled with the RTT (`prague_rtt_scaling`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RttScaling {
    /// DCTCP-like: one segment per RTT whatever the RTT.
    None,
    /// Flows below the target grow like a flow at the target (equal rates).
    Rate,
    /// A floor of about one mark per 8 RTTs at very low RTTs.
    Scalable,
    /// Behave as if the path were `rtt_target` longer.
    Additive,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PragueConfig {
    /// EWMA gain g for α.
    pub g: f64,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Smallest window the carry may reduce cwnd to.
    pub min_cwnd: u32,
    pub rtt_scaling: RttScaling,
    /// Reference RTT of the RTT-independence heuristics.
    #[serde(rename = "rtt_target", with = "crate::sim::units::serde_duration")]
    pub rtt_target_ns: u64,
    /// Rounds out of slow start before RTT independence starts.
    pub rtt_transition_rounds: u32,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig {
            // PRAGUE_SHIFT_G = 4.
            g: 1.0 / 16.0,
            // RFC 6928, as every aqmlab TCP.
            initial_window: INITIAL_WINDOW_SEGS,
            // MIN_CWND = 2U.
            min_cwnd: 2,
            // prague_rtt_scaling = RTT_CONTROL_RATE.
            rtt_scaling: RttScaling::Rate,
            // prague_rtt_target = 25 * USEC_PER_MSEC (the header comment's
            // "default=10ms" is stale).
            rtt_target_ns: 25_000_000,
            // DEFAULT_RTT_TRANSITION = 500.
            rtt_transition_rounds: 500,
        }
    }
}

/// The module measures RTTs for scaling in units of 2^7 µs (`RTT_UNIT`).
const RTT_UNIT_NS: u64 = 128_000;
/// Scaled RTTs above this get the unscaled increase (`MAX_SCALED_RTT`).
const MAX_SCALED_RTT_NS: u64 = 100_000_000;
/// SCALABLE heuristic constants: R0 = 2^14 µs, R1 = 2^10 + 2^9 µs, in RTT units.
const SCALABLE_R0_UNITS: f64 = ((1u64 << 14) >> 7) as f64;
const SCALABLE_R1_UNITS: f64 = (((1u64 << 10) + (1 << 9)) >> 7) as f64;

#[derive(Debug, Clone)]
pub struct Prague {
    cfg: PragueConfig,
    cwnd: u32,
    ssthresh: u32,
    /// Signed fractional carry, in segments (`cwnd_cnt`).
    cwnd_cnt: f64,
    alpha: f64,
    saw_ce: bool,
    in_loss: bool,
    /// snd_nxt when the current round began.
    next_seq: u64,
    round_delivered: u64,
    round_ce: u64,
    /// Rounds completed out of slow start.
    round: u32,
    /// Growth per non-CE acked segment, as a fraction of 1/cwnd (`ai_ack_increase`).
    ai_ack_increase: f64,
    alpha_stamp_ns: u64,
    cwr_stamp_ns: u64,
    srtt_ns: u64,
    in_flight_segs: u32,
    segment_bytes: u32,
    /// Set when AccECN was not negotiated: the flow runs Reno ("prague-reno").
    fallback: Option<Box<Reno>>,
}

impl Prague {
    pub fn new(cfg: PragueConfig) -> Result<Self, String> {
        if !(cfg.g > 0.0 && cfg.g <= 1.0) {
            return Err(format!("g: must lie in (0, 1] (got {})", cfg.g));
        }
        if cfg.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        if cfg.min_cwnd == 0 {
            return Err("min_cwnd: must be at least 1 segment".into());
        }
        if cfg.rtt_scaling != RttScaling::None && cfg.rtt_target_ns < RTT_UNIT_NS {
            return Err(format!("rtt_target: must be at least 128us, the module's RTT unit (got {}ns)", cfg.rtt_target_ns));
        }
        Ok(Prague {
            cwnd: cfg.initial_window,
            ssthresh: u32::MAX,
            cwnd_cnt: 0.0,
            alpha: 1.0,
            saw_ce: false,
            in_loss: false,
            next_seq: 0,
            round_delivered: 0,
            round_ce: 0,
            round: 0,
            ai_ack_increase: 1.0,
            alpha_stamp_ns: 0,
            cwr_stamp_ns: 0,
            srtt_ns: 0,
            in_flight_segs: 0,
            segment_bytes: 0,
            fallback: None,
            cfg,
        })
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The window including its carry, in segments.
    pub fn frac_cwnd(&self) -> f64 {
        self.cwnd as f64 + self.cwnd_cnt
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `prague_is_rtt_indep`.
    fn rtt_indep(&self) -> bool {
        self.cfg.rtt_scaling != RttScaling::None && !self.in_slow_start() && self.round >= self.cfg.rtt_transition_rounds
    }

    /// The target in RTT units: fixed, or (ADDITIVE) the target plus srtt.
    fn target_units(&self) -> u64 {
        let target = self.cfg.rtt_target_ns / RTT_UNIT_NS;
        if self.cfg.rtt_scaling == RttScaling::Additive {
            target + self.srtt_ns / RTT_UNIT_NS
        } else {
            target
        }
    }

    fn target_ns(&self) -> u64 {
        self.target_units() * RTT_UNIT_NS
    }

    /// `prague_ai_ack_increase`: recomputed at each round and window change.
    fn update_ai(&mut self) {
        let rtt = self.srtt_ns / RTT_UNIT_NS;
        self.ai_ack_increase = if self.cfg.rtt_scaling == RttScaling::None
            || self.round < self.cfg.rtt_transition_rounds
            || rtt == 0
            || self.srtt_ns > MAX_SCALED_RTT_NS
        {
            1.0
        } else {
            let rtt = rtt as f64;
            match self.cfg.rtt_scaling {
                RttScaling::None => 1.0,
                RttScaling::Rate | RttScaling::Additive => {
                    let target = self.target_units() as f64;
                    if rtt >= target {
                        1.0
                    } else {
                        rtt * rtt / (target * target)
                    }
                }
                RttScaling::Scalable => {
                    let r0 = SCALABLE_R0_UNITS;
                    (r0 / 8.0 + (rtt - SCALABLE_R1_UNITS).clamp(0.0, r0)) * rtt / (r0 * r0)
                }
            }
        };
    }

    /// `prague_new_round`.
    fn new_round(&mut self, snd_nxt: u64) {
        self.next_seq = snd_nxt;
        self.round_delivered = 0;
        self.round_ce = 0;
        if !self.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.update_ai();
    }

    /// `prague_update_alpha`, when `prague_should_update_ewma` says so.
    fn maybe_update_alpha(&mut self, ev: &AckEvent) {
        if ev.snd_una < self.next_seq {
            return;
        }
        if self.rtt_indep() && ev.now_ns.saturating_sub(self.alpha_stamp_ns) < self.target_ns() {
            return;
        }
        if self.saw_ce {
            let f = if self.round_delivered > 0 { (self.round_ce as f64 / self.round_delivered as f64).min(1.0) } else { 0.0 };
            self.alpha = ((1.0 - self.cfg.g) * self.alpha + self.cfg.g * f).min(1.0);
            self.alpha_stamp_ns = ev.now_ns;
        }
        self.new_round(ev.snd_nxt);
    }

    /// `prague_update_cwnd`: grow the carry, then move cwnd one step.
    fn update_cwnd(&mut self, ev: &AckEvent) {
        let mut acked = ev.delivered_segs as i64;
        if ev.ce_segs > 0 {
            self.saw_ce = true;
            acked -= ev.ce_segs as i64;
        }
        if acked > 0 && !self.in_loss && ev.cwnd_limited {
            let mut acked = acked as u32;
            if self.in_slow_start() {
                acked = slow_start(&mut self.cwnd, self.ssthresh, acked);
                if acked == 0 {
                    // The module returns here: the carry waits for the next ACK.
                    self.update_ai();
                    return;
                }
            }
            self.cwnd_cnt += acked as f64 * self.ai_ack_increase / self.cwnd.max(1) as f64;
        }
        if self.cwnd_cnt <= -1.0 {
            self.cwnd_cnt += 1.0;
            self.cwnd -= 1;
            if self.cwnd < self.cfg.min_cwnd {
                self.cwnd = self.cfg.min_cwnd;
                // No point carrying further reductions.
                self.cwnd_cnt = 0.0;
            }
            self.ssthresh = self.cwnd;
            self.update_ai();
        } else if self.cwnd_cnt >= 1.0 {
            self.cwnd_cnt -= 1.0;
            self.cwnd += 1;
            self.update_ai();
        }
    }

    /// `prague_enter_loss`.
    fn enter_loss(&mut self) {
        self.cwnd_cnt -= self.cwnd as f64 / 2.0 + self.cwnd_cnt / 2.0;
        self.in_loss = true;
        self.update_ai();
    }
}

impl CongestionControl for Prague {
    fn on_established(&mut self, ev: &Established) {
        self.srtt_ns = ev.srtt_ns;
        self.segment_bytes = ev.segment_bytes;
        self.alpha_stamp_ns = ev.now_ns;
        if !ev.accurate_ecn {
            let reno = Reno::new(RenoConfig { initial_window: self.cfg.initial_window, ..RenoConfig::default() })
                .expect("default Reno parameters are valid");
            self.fallback = Some(Box::new(reno));
            return;
        }
        self.new_round(0);
    }

    fn on_ack(&mut self, ev: &AckEvent) {
        if let Some(r) = &mut self.fallback {
            return r.on_ack(ev);
        }
        self.srtt_ns = ev.srtt_ns;
        self.in_flight_segs = ev.in_flight_segs;
        self.round_delivered += ev.delivered_segs as u64;
        self.round_ce += ev.ce_segs as u64;
        self.update_cwnd(ev);
        self.maybe_update_alpha(ev);
    }

    fn on_congestion(&mut self, ev: &CongestionEvent) {
        if let Some(r) = &mut self.fallback {
            return r.on_congestion(ev);
        }
        match ev.kind {
            CongestionKind::Ecn => {
                // `prague_enter_cwr`: at most one cut per target RTT once RTT-independent.
                if self.rtt_indep() && ev.now_ns.saturating_sub(self.cwr_stamp_ns) < self.target_ns() {
                    return;
                }
                self.cwr_stamp_ns = ev.now_ns;
                self.cwnd_cnt -= self.alpha * self.cwnd as f64 / 2.0;
            }
            CongestionKind::Loss => self.enter_loss(),
        }
    }

    fn on_rto(&mut self, now_ns: u64, in_flight: u32, already_reduced: bool) {
        if let Some(r) = &mut self.fallback {
            return r.on_rto(now_ns, in_flight, already_reduced);
        }
        // CA_EVENT_LOSS halves through the carry; tcp_enter_loss then sets
        // cwnd = packets in flight + 1 = 1 and keeps ssthresh (the module's
        // ssthresh hook returns it unchanged).
        self.enter_loss();
        self.cwnd = 1;
    }

    fn on_recovery_exit(&mut self, now_ns: u64) {
        if let Some(r) = &mut self.fallback {
            return r.on_recovery_exit(now_ns);
        }
        // Back to TCP_CA_Open (`prague_ca_open`).
        self.in_loss = false;
    }

    fn on_sent(&mut self, _now_ns: u64, in_flight_segs: u32) {
        self.in_flight_segs = in_flight_segs;
    }

    fn cwnd(&self) -> u32 {
        match &self.fallback {
            Some(r) => r.cwnd(),
            None => self.cwnd,
        }
    }

    fn ssthresh(&self) -> u32 {
        match &self.fallback {
            Some(r) => r.ssthresh(),
            None => self.ssthresh,
        }
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        if self.fallback.is_some() || self.srtt_ns == 0 || self.segment_bytes == 0 {
            return None;
        }
        let mut rate = self.cwnd.max(self.in_flight_segs) as f64 * self.segment_bytes as f64 * 8.0 * NS_PER_SEC as f64
            / self.srtt_ns as f64;
        if self.cwnd < self.ssthresh / 2 {
            rate *= 2.0;
        }
        Some((rate as u64).max(1))
    }

    fn probe_names(&self) -> &'static [&'static str] {
        &["alpha", "frac_cwnd"]
    }

    fn probe(&self, out: &mut [f64]) {
        out[0] = self.alpha;
        out[1] = self.frac_cwnd();
    }
}

#[cfg(test)]
#[path = "prague_tests.rs"]
mod tests;
