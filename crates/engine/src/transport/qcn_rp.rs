//! QCN reaction point (RP): a rate limiter that reacts to congestion
//! notification messages (CNMs), and the greedy rate-limited source it
//! throttles (`cc = "qcn"` in `[[flows]]`).
//!
//! Normative references (read in this order):
//! - Alizadeh, Atikoglu, Kabbani, Lakshmikantha, Pan, Prabhakar, Seaman,
//!   "Data Center Transport Mechanisms: Congestion Control Theory and IEEE
//!   Standardization", Allerton 2008, §II: rate decrease on a CNM, Fast
//!   Recovery, Active and Hyper-Active Increase driven by a byte counter and
//!   a timer.
//! - IEEE 802.1Qau-2010 (now IEEE 802.1Q clauses 30-33) for the RP defaults,
//!   as the IEEE8021-CN-MIB states them: `rpgByteReset` 150 000 octets,
//!   `rpgTimeReset` 15 ms, `rpgThreshold` 5, `rpgAiRate` 5 Mb/s,
//!   `rpgHaiRate` 50 Mb/s, `rpgGd` 7 (G_d = 2^-7), `rpgMinRate` 5 Mb/s.
//! - Kabbani, Pan, Prabhakar, Seaman, "QCN Transience and Equilibrium:
//!   Response and Stability" (seed 003): the Fb-hat extension.
//!
//! On a CNM carrying quantised |Fb|: `TR = CR` (unless extra fast recovery
//! keeps TR: a CNM before the byte counter's first cycle), `CR = CR·(1 − G_d·|Fb|)`,
//! both counters restart and the RP is in Fast Recovery. Each completed
//! cycle of either counter then sets `CR = (CR + TR)/2`, after first raising
//! TR by R_AI once either counter has done more than 5 cycles (Active
//! Increase) or by i·R_HAI once both have (Hyper-Active Increase, i =
//! min(cycles) − 5). When CR reaches the line rate the limiter is released.
//! docs/algorithms/qcn.md lists the choices and what could not be verified.

use super::rate_source::RateSourceSpec;
use crate::packet::{Ecn, Packet};
use crate::sim::rng::{Domain, SimRng};
use crate::sim::units::{serde_duration, serde_rate, serde_size};
use crate::sim::NS_PER_SEC;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct QcnRpConfig {
    /// G_d: CR is multiplied by (1 − G_d·|Fb|) on a CNM (|Fb| ≤ 63).
    pub gd: f64,
    /// Byte-counter cycle (BC_LIMIT) in Fast Recovery.
    #[serde(with = "serde_size")]
    pub bc_limit: u64,
    /// Timer cycle in Fast Recovery.
    #[serde(rename = "timer", with = "serde_duration")]
    pub timer_ns: u64,
    /// Cycles of Fast Recovery per counter (`rpgThreshold`).
    pub fast_recovery_cycles: u32,
    /// R_AI: TR increase per Active Increase cycle.
    #[serde(with = "serde_rate")]
    pub r_ai: u64,
    /// R_HAI: TR increase per Hyper-Active Increase cycle, times i.
    #[serde(with = "serde_rate")]
    pub r_hai: u64,
    /// CR is never cut below this.
    #[serde(with = "serde_rate")]
    pub min_rate: u64,
    /// Byte-counter and timer cycles past Fast Recovery last half as long.
    pub halve_ai_cycles: bool,
    /// Each cycle length is drawn uniformly within ±this fraction (0: exact).
    pub cycle_jitter: f64,
    /// Extra fast recovery (seed 003, "Other Features"; see `ReactionPoint::on_cnm`):
    /// a CNM that arrives before the byte counter has completed a cycle since
    /// the previous CNM leaves TR where it was, and at the end of the first
    /// cycle a TR more than `efr_tr_ratio` times CR is divided by `efr_tr_divisor`.
    pub extra_fast_recovery: bool,
    /// TR/CR ratio above which the first cycle's end shrinks TR.
    pub efr_tr_ratio: f64,
    /// The divisor applied to TR then.
    pub efr_tr_divisor: f64,
    /// The seed's Fb-hat extension: a source-side congestion estimate that
    /// shortens byte-counter cycles when no CNM has come for a while.
    pub fbhat: bool,
    /// Fb-hat saturates here (a 5-bit counter).
    pub fbhat_max: u32,
    /// Fb-hat is halved after every this many packets sent.
    pub fbhat_halve_pkts: u32,
    /// A byte-counter cycle that begins with Fb-hat at or below this is shortened.
    pub fbhat_threshold: u32,
    /// ... to this fraction of its length (100 packets become 50).
    pub fbhat_cycle_factor: f64,
}

impl Default for QcnRpConfig {
    fn default() -> Self {
        QcnRpConfig {
            // IEEE8021-CN-MIB rpgGd = 7: G_d = 2^-7 = 1/128, so |Fb| = 63 cuts CR by 49 %.
            gd: 1.0 / 128.0,
            // rpgByteReset = 150 000 octets (100 frames of 1500 B).
            bc_limit: 150_000,
            // rpgTimeReset = 15 ms.
            timer_ns: 15_000_000,
            // rpgThreshold = 5.
            fast_recovery_cycles: 5,
            // rpgAiRate = 5 Mb/s.
            r_ai: 5_000_000,
            // rpgHaiRate = 50 Mb/s.
            r_hai: 50_000_000,
            // rpgMinRate = 5 Mb/s (the spec digest's "about 10 Mbps" is not the MIB default).
            min_rate: 5_000_000,
            // QCN pseudocode (Allerton 2008 lineage): cycles of 75 KB / 7.5 ms once past
            // Fast Recovery. The seed's own runs keep 100-packet AI cycles (set false).
            halve_ai_cycles: true,
            // QCN pseudocode: cycle lengths drawn from U[0.85, 1.15] (unverified in the standard).
            cycle_jitter: 0.15,
            // Off: seed 003 lists it with Drift and Fb-hat under "Other Features", apart
            // from "Basic QCN", and the IEEE8021-CN-MIB has no object for it; opt-in like
            // Fb-hat. Its rule is cross-checked against the QCN-derived RP of
            // bobzhuyb/ns3-rdma (docs/algorithms/qcn.md "Extra fast recovery").
            extra_fast_recovery: false,
            // ns3-rdma's QCN-derived rate adjustment: TR > 10·CR at the first cycle's end -> TR/8.
            efr_tr_ratio: 10.0,
            efr_tr_divisor: 8.0,
            // off: 802.1Qau as standardised; the seed's extension is opt-in.
            fbhat: false,
            // Seed 003: "Fb-hat is counted using a 5-bit saturation counter", saturated at 31.
            fbhat_max: 31,
            // Seed 003: "For every 50 pkts transmitted: Fb-hat <- Fb-hat/2".
            fbhat_halve_pkts: 50,
            // Seed 003: "If Fb-hat is small (e.g. 0 or 1): reduce length of cycle".
            fbhat_threshold: 1,
            // Seed 003: "... to 50 pkts from 100 pkts".
            fbhat_cycle_factor: 0.5,
        }
    }
}

impl QcnRpConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.gd > 0.0 && self.gd * 63.0 < 1.0) {
            return Err(format!("gd: must lie in (0, 1/63) so a CNM never stops a source (got {})", self.gd));
        }
        if self.bc_limit == 0 {
            return Err("bc_limit: must be positive".into());
        }
        if self.timer_ns == 0 {
            return Err("timer: must be positive".into());
        }
        if self.min_rate == 0 {
            return Err("min_rate: must be positive".into());
        }
        if !(0.0..1.0).contains(&self.cycle_jitter) {
            return Err(format!("cycle_jitter: must lie in [0, 1) (got {})", self.cycle_jitter));
        }
        if !(self.efr_tr_ratio >= 1.0 && self.efr_tr_ratio.is_finite()) {
            return Err(format!("efr_tr_ratio: must be a number >= 1 (got {})", self.efr_tr_ratio));
        }
        if !(self.efr_tr_divisor >= 1.0 && self.efr_tr_divisor.is_finite()) {
            return Err(format!("efr_tr_divisor: must be a number >= 1 (got {})", self.efr_tr_divisor));
        }
        if self.fbhat_halve_pkts == 0 {
            return Err("fbhat_halve_pkts: must be at least 1".into());
        }
        if !(self.fbhat_cycle_factor > 0.0 && self.fbhat_cycle_factor <= 1.0) {
            return Err(format!("fbhat_cycle_factor: must lie in (0, 1] (got {})", self.fbhat_cycle_factor));
        }
        Ok(())
    }
}

/// Which phase the rate limiter is in (for traces and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpStage {
    /// Not limiting: the source sends at its line rate.
    Released,
    FastRecovery,
    ActiveIncrease,
    HyperActiveIncrease,
}

/// The RP's state (`Clone + Default` for snapshots).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RpVars {
    /// A rate limiter is installed (a CNM came and CR has not yet returned to line rate).
    pub limited: bool,
    /// Current rate CR and target rate TR (bit/s).
    pub cr_bps: u64,
    pub tr_bps: u64,
    /// Completed byte-counter cycles since the last CNM, and bytes left in the current one.
    pub bc_cycles: u32,
    pub bc_left: i64,
    /// Completed timer cycles since the last CNM, and when the current one ends (local ns).
    pub timer_cycles: u32,
    pub timer_at_ns: u64,
    /// Fb-hat and packets sent since it was last halved.
    pub fbhat: u32,
    pub pkts_since_halving: u32,
    /// CNMs received.
    pub cnms: u64,
}

#[derive(Debug, Clone)]
pub struct ReactionPoint {
    cfg: QcnRpConfig,
    line_rate_bps: u64,
    rng: SimRng,
    pub vars: RpVars,
}

impl ReactionPoint {
    pub fn new(cfg: QcnRpConfig, line_rate_bps: u64, rng: SimRng) -> Self {
        ReactionPoint { cfg, line_rate_bps, rng, vars: RpVars::default() }
    }

    /// The rate the source may send at now.
    #[inline]
    pub fn rate_bps(&self) -> u64 {
        if self.vars.limited {
            self.vars.cr_bps
        } else {
            self.line_rate_bps
        }
    }

    /// TR while limiting, the line rate otherwise.
    pub fn target_rate_bps(&self) -> u64 {
        if self.vars.limited {
            self.vars.tr_bps
        } else {
            self.line_rate_bps
        }
    }

    /// The stage cycle ends are in now: Fast Recovery while neither counter
    /// has done more than `fast_recovery_cycles` cycles since the last CNM.
    pub fn stage(&self) -> RpStage {
        let (fr, v) = (self.cfg.fast_recovery_cycles, &self.vars);
        match (v.limited, v.bc_cycles > fr, v.timer_cycles > fr) {
            (false, _, _) => RpStage::Released,
            (true, true, true) => RpStage::HyperActiveIncrease,
            (true, false, false) => RpStage::FastRecovery,
            _ => RpStage::ActiveIncrease,
        }
    }

    /// When the timer's current cycle ends (local ns), while limiting.
    #[inline]
    pub fn timer_deadline_ns(&self) -> Option<u64> {
        self.vars.limited.then_some(self.vars.timer_at_ns)
    }

    /// A CNM carrying quantised |Fb| arrived (Allerton 2008 §II, "rate decrease").
    pub fn on_cnm(&mut self, now_ns: u64, fb: u32) {
        let v = &mut self.vars;
        v.cnms += 1;
        if self.cfg.fbhat {
            // Seed 003: "For every Fb recd by RL: Fb-hat <- Fb-hat + Fb", saturating.
            v.fbhat = (v.fbhat + fb).min(self.cfg.fbhat_max);
        }
        let first = !v.limited;
        if first {
            // The first CNM installs a limiter at the line rate.
            v.limited = true;
            v.cr_bps = self.line_rate_bps;
        }
        // Extra fast recovery: a CNM within the first byte-counter cycle after
        // the previous one (a burst of CNMs, e.g. from a burst of overflow)
        // cuts CR again but keeps TR at the rate before the burst, so
        // recovery aims at the pre-congestion rate. Without it (and on the
        // first CNM) TR = CR (Allerton 2008 §II).
        if first || !self.cfg.extra_fast_recovery || v.bc_cycles > 0 {
            v.tr_bps = v.cr_bps;
        }
        let cut = v.cr_bps as f64 * (1.0 - self.cfg.gd * fb as f64);
        v.cr_bps = (cut.round() as u64).max(self.cfg.min_rate.min(self.line_rate_bps));
        v.bc_cycles = 0;
        v.timer_cycles = 0;
        self.vars.bc_left = self.bc_cycle_len();
        self.vars.timer_at_ns = now_ns + self.timer_cycle_len();
    }

    /// A packet of `bytes` was sent. Returns true if the rate changed.
    pub fn on_sent(&mut self, bytes: u32) -> bool {
        let v = &mut self.vars;
        if self.cfg.fbhat {
            v.pkts_since_halving += 1;
            if v.pkts_since_halving >= self.cfg.fbhat_halve_pkts {
                // Seed 003: "For every 50 pkts transmitted: Fb-hat <- Fb-hat/2 (right shift)".
                v.pkts_since_halving = 0;
                v.fbhat >>= 1;
            }
        }
        if !v.limited {
            return false;
        }
        v.bc_left -= bytes as i64;
        if v.bc_left > 0 {
            return false;
        }
        v.bc_cycles += 1;
        self.cycle_end();
        if self.vars.limited {
            self.vars.bc_left = self.bc_cycle_len();
        }
        true
    }

    /// The timer's cycle ended at `at_ns` (its deadline). Returns true if the rate changed.
    pub fn on_timer(&mut self, at_ns: u64) -> bool {
        if !self.vars.limited || at_ns < self.vars.timer_at_ns {
            return false;
        }
        self.vars.timer_cycles += 1;
        self.cycle_end();
        if self.vars.limited {
            // The next cycle runs from the deadline, so the cadence does not drift.
            self.vars.timer_at_ns += self.timer_cycle_len();
        }
        true
    }

    /// End of a cycle of either counter: Fast Recovery, Active or Hyper-Active Increase.
    fn cycle_end(&mut self) {
        let (c, v) = (&self.cfg, &mut self.vars);
        let fr = c.fast_recovery_cycles;
        let first_cycle = v.bc_cycles == 1 || v.timer_cycles == 1;
        if c.extra_fast_recovery && first_cycle && v.tr_bps as f64 > c.efr_tr_ratio * v.cr_bps as f64 {
            // Extra fast recovery's other half: after a burst of CNMs has cut CR
            // far below the TR it kept, TR would pull CR back far above the
            // capacity just found; at the first cycle's end TR is shrunk instead
            // of raised, matching the offered rate to the available capacity.
            v.tr_bps = (v.tr_bps as f64 / c.efr_tr_divisor).round() as u64;
        } else if v.bc_cycles > fr && v.timer_cycles > fr {
            // Hyper-Active Increase: TR += i·R_HAI, i = HAI cycles so far.
            let i = (v.bc_cycles.min(v.timer_cycles) - fr) as u64;
            v.tr_bps = v.tr_bps.saturating_add(i * c.r_hai);
        } else if v.bc_cycles > fr || v.timer_cycles > fr {
            // Active Increase.
            v.tr_bps = v.tr_bps.saturating_add(c.r_ai);
        }
        // Every stage: CR moves half way to TR (rounded up, so it reaches TR).
        v.cr_bps = (v.cr_bps + v.tr_bps).div_ceil(2);
        if v.cr_bps >= self.line_rate_bps {
            // Back at line rate: the rate limiter is released.
            v.limited = false;
            v.cr_bps = self.line_rate_bps;
            v.tr_bps = self.line_rate_bps;
        }
    }

    /// Length of the byte-counter cycle about to begin (bytes).
    fn bc_cycle_len(&mut self) -> i64 {
        let mut len = self.cfg.bc_limit as f64;
        if self.cfg.halve_ai_cycles && self.vars.bc_cycles >= self.cfg.fast_recovery_cycles {
            len *= 0.5;
        }
        if self.cfg.fbhat && self.vars.fbhat <= self.cfg.fbhat_threshold {
            // Seed 003 cycle shrinking: small Fb-hat, no recent CNMs: a shorter cycle.
            len *= self.cfg.fbhat_cycle_factor;
        }
        (self.qcn_rp_jitter(len).round() as i64).max(1)
    }

    /// Length of the timer cycle about to begin (ns).
    fn timer_cycle_len(&mut self) -> u64 {
        let mut len = self.cfg.timer_ns as f64;
        if self.cfg.halve_ai_cycles && self.vars.timer_cycles >= self.cfg.fast_recovery_cycles {
            len *= 0.5;
        }
        (self.qcn_rp_jitter(len).round() as u64).max(1)
    }

    /// The module's only random draw: `len` scaled by U[1 − j, 1 + j].
    fn qcn_rp_jitter(&mut self, len: f64) -> f64 {
        let j = self.cfg.cycle_jitter;
        if j > 0.0 {
            len * (1.0 - j + 2.0 * j * self.rng.uniform())
        } else {
            len
        }
    }
}

/// Stream-index bit that separates a flow's RP stream from its start-jitter stream.
const RP_STREAM: u64 = 1 << 40;

/// Validate and normalise a `cc = "qcn"` flow group's `params`.
pub fn normalize_params(params: &serde_json::Value) -> Result<serde_json::Value, String> {
    let cfg: QcnRpConfig = crate::params::parse_params(params)?;
    cfg.validate()?;
    Ok(crate::params::to_value(&cfg))
}

/// A greedy source behind a QCN rate limiter: fixed-size datagrams at the
/// RP's rate (the line rate until a CNM arrives), from start to stop.
#[derive(Debug, Clone)]
pub struct QcnSource {
    pub flow: u32,
    size_bytes: u32,
    ecn: Ecn,
    /// Local time of the next departure.
    next_ns: u64,
    last_tx_ns: Option<u64>,
    stop_ns: Option<u64>,
    seq: u64,
    /// Remainder of bits·1e9/rate carried between departures at one rate.
    carry: u64,
    pub rp: ReactionPoint,
    pub bytes_sent: u64,
    pub pkts_sent: u64,
}

impl QcnSource {
    pub fn new(flow: u32, size_bytes: u32, ecn: Ecn, start_ns: u64, stop_ns: Option<u64>, rp: ReactionPoint) -> Self {
        QcnSource { flow, size_bytes, ecn, next_ns: start_ns, last_tx_ns: None, stop_ns, seq: 0, carry: 0, rp, bytes_sent: 0, pkts_sent: 0 }
    }

    /// The source of a `cc = "qcn"` flow: the spec's rate is its line
    /// rate, `params` its normalised RP parameters. The RP draws from its own
    /// stream, apart from the flow's start-jitter draw.
    pub fn build(s: &RateSourceSpec, params: &serde_json::Value) -> Result<Self, String> {
        let cfg: QcnRpConfig = crate::params::parse_params(params)?;
        cfg.validate()?;
        let rng = SimRng::derive(s.seed, Domain::Flow, RP_STREAM | s.flow as u64);
        let rp = ReactionPoint::new(cfg, s.rate_bps, rng);
        Ok(QcnSource::new(s.flow, s.packet_size_bytes, s.ecn, s.start_ns, s.stop_ns, rp))
    }

    /// Internal state worth plotting (owner `flowN` in the probes table).
    pub fn probe_names(&self) -> &'static [&'static str] {
        &["target_rate_bps", "fbhat", "cnms", "stage"]
    }

    /// `stage`: 0 released, 1 Fast Recovery, 2 Active Increase, 3 Hyper-Active
    /// Increase (seed 003's "distribution of flows in FR, AI").
    pub fn probe(&self, out: &mut [f64]) {
        let v = &self.rp.vars;
        let stage = match self.rp.stage() {
            RpStage::Released => 0.0,
            RpStage::FastRecovery => 1.0,
            RpStage::ActiveIncrease => 2.0,
            RpStage::HyperActiveIncrease => 3.0,
        };
        out.copy_from_slice(&[self.rp.target_rate_bps() as f64, v.fbhat as f64, v.cnms as f64, stage]);
    }

    fn stopped(&self) -> bool {
        self.stop_ns.is_some_and(|s| self.next_ns >= s)
    }

    pub fn next_wakeup_ns(&self) -> Option<u64> {
        if self.stopped() {
            return None;
        }
        Some(self.rp.timer_deadline_ns().map_or(self.next_ns, |t| t.min(self.next_ns)))
    }

    /// Spacing after a packet at the current rate, carrying the remainder.
    #[inline]
    fn gap_ns(&mut self) -> u64 {
        let rate = self.rp.rate_bps();
        let num = self.size_bytes as u64 * 8 * NS_PER_SEC + self.carry;
        self.carry = num % rate;
        (num / rate).max(1)
    }

    /// The rate changed at `t_ns`: the next departure follows the last one at the new rate.
    fn reschedule(&mut self, t_ns: u64) {
        self.carry = 0;
        if let Some(last) = self.last_tx_ns {
            self.next_ns = (last + self.gap_ns()).max(t_ns);
        }
    }

    pub fn on_cnm(&mut self, now_ns: u64, pkt: &Packet) {
        self.rp.on_cnm(now_ns, pkt.aux);
        self.reschedule(now_ns);
    }

    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        loop {
            let send_due = !self.stopped() && self.next_ns <= now_ns;
            match self.rp.timer_deadline_ns().filter(|&t| t <= now_ns) {
                // At equal times the timer runs first.
                Some(t) if !send_due || t <= self.next_ns => {
                    if self.rp.on_timer(t) {
                        self.reschedule(t);
                    }
                }
                _ if send_due => self.send(now_ns, out),
                _ => break,
            }
        }
    }

    fn send(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        out.push(Packet::datagram(self.flow, self.size_bytes, self.seq, self.next_ns, now_ns, self.ecn));
        self.seq += 1;
        self.pkts_sent += 1;
        self.bytes_sent += self.size_bytes as u64;
        self.last_tx_ns = Some(self.next_ns);
        if self.rp.on_sent(self.size_bytes) {
            self.carry = 0;
        }
        self.next_ns += self.gap_ns();
    }
}

#[cfg(test)]
#[path = "qcn_rp_tests.rs"]
mod tests;
