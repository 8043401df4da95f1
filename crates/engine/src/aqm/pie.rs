//! PIE: Proportional Integral controller Enhanced.
//!
//! Normative references (read §4 first, then §5 for the optional parts):
//! - RFC 8033, "Proportional Integral Controller Enhanced (PIE)": §4.1
//!   random dropping, §4.2 drop probability (with auto-tuning), §4.3
//!   latency calculation, §4.4 burst tolerance; optional elements §5.1 ECN,
//!   §5.2 dequeue-rate estimation, §5.4 derandomisation, §5.5 the 2 % cap.
//!   <https://www.rfc-editor.org/rfc/rfc8033#section-4>
//! - Linux `net/sched/sch_pie.c` (`pie_drop_early`, `pie_process_dequeue`,
//!   `pie_calculate_probability`) and `include/net/pie.h` (defaults).
//! - Linux 3.14 `sch_pie.c` (first upstream version; 20 ms / 30 ms / 100 ms,
//!   dequeue-rate estimator only, three-tier gain scaling, no derandomisation),
//!   as used by Khademi, Ros, Welzl, "The New AQM Kids on the Block", 2014.
//!
//! `preset` picks the column of [`PiePreset::rules`]; the numeric defaults
//! (target, tupdate, max_burst, alpha, beta, estimator, derandomize) can be
//! overridden one by one, the behavioural differences cannot (they define
//! the variant). See docs/algorithms/aqm.md for the full comparison.

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use super::pi::{check_pi_gains, pi_config};
use crate::packet::Packet;
use crate::sim::units::{serde_opt_duration, serde_size};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PiePreset {
    #[serde(rename = "rfc8033")]
    Rfc8033,
    #[serde(rename = "linux")]
    Linux,
    #[serde(rename = "linux-3.14")]
    Linux314,
}

/// How the queue delay fed to the controller is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PieEstimator {
    /// Sojourn time of the last dequeued packet (0 once the queue empties).
    Timestamp,
    /// Little's law: backlog / averaged dequeue rate (RFC 8033 §4.3, §5.2).
    DqRate,
}

pi_config! {
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    pub struct PieConfig {
        pub preset: PiePreset,
        @target_tupdate
        /// MAX_BURST; None = the preset's value.
        #[serde(rename = "max_burst", with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
        pub max_burst_ns: Option<u64>,
        @alpha_beta
        #[serde(skip_serializing_if = "Option::is_none")]
        pub estimator: Option<PieEstimator>,
        /// RFC 8033 §5.4 accumulated-probability derandomisation; None = preset.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub derandomize: Option<bool>,
        /// DQ_THRESHOLD: bytes per dequeue-rate measurement (RFC 8033 §5.2).
        #[serde(rename = "dq_threshold", with = "serde_size")]
        pub dq_threshold_bytes: u64,
        /// CE-mark ECT packets instead of dropping while p <= mark_ecn_threshold.
        pub ecn: bool,
        /// Above this p, ECT packets are dropped too (RFC 8033 §5.1).
        pub mark_ecn_threshold: f64,
        /// Scale p by packet size / MTU (Linux `bytemode`).
        pub bytemode: bool,
    }
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            // RFC 8033 is the specification; Linux and 3.14 are selectable.
            preset: PiePreset::Rfc8033,
            // None: the preset's target/tupdate/max_burst/alpha/beta/estimator/
            // derandomize, tabulated with sources in PiePreset::numbers.
            target_ns: None,
            tupdate_ns: None,
            max_burst_ns: None,
            alpha: None,
            beta: None,
            estimator: None,
            derandomize: None,
            // 16 KiB = 2^14 B; RFC 8033 §5.2 DQ_THRESHOLD and Linux QUEUE_THRESHOLD.
            dq_threshold_bytes: 16_384,
            // off; Linux default (RFC 8033 makes ECN optional).
            ecn: false,
            // 10 %; RFC 8033 §5.1 and Linux (MAX_PROB / 10).
            mark_ecn_threshold: 0.1,
            // off; Linux default.
            bytemode: false,
        }
    }
}

/// Gain scaling when p is small (RFC 8033 §4.2 "auto-tuning").
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scaling {
    /// Seven tiers, /2048 below 1e-6 up to /1 at >= 10 % (RFC 8033, Linux >= 5.x).
    Rfc,
    /// Linux 3.14: /8 below 1 %, /2 below 10 %, else /1.
    ThreeTier,
}

/// Behaviours that differ between the variants (not individually settable).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rules {
    scaling: Scaling,
    /// Multiplier applied when qdelay and qdelay_old are both 0.
    decay: f64,
    /// Linux: add 2 % when qdelay > 250 ms.
    boost_above_250ms: bool,
    /// RFC: drop_early's "delay < target/2" test uses qdelay_old (the last
    /// update's value); Linux uses the latest measurement.
    early_uses_qdelay_old: bool,
    /// Linux: no decay in a round where qdelay is 0 but the backlog is not.
    no_decay_with_backlog: bool,
    /// RFC: burst allowance shrinks by tupdate per update. Linux: by the time
    /// between dequeues (timestamp mode) or per completed rate measurement.
    burst_per_update: bool,
    /// Linux: when idle enough, re-initialise all vars (burst, accu, rate
    /// estimator); RFC: only re-arm the burst allowance.
    reset_reinit: bool,
    /// RFC: EWMA (weight 1/4) of the drain time per byte; Linux: EWMA (1/8) of the rate.
    rfc_rate_ewma: bool,
}

impl PiePreset {
    fn rules(self) -> Rules {
        match self {
            PiePreset::Rfc8033 => Rules {
                scaling: Scaling::Rfc,
                decay: 0.98,
                boost_above_250ms: false,
                early_uses_qdelay_old: true,
                no_decay_with_backlog: false,
                burst_per_update: true,
                reset_reinit: false,
                rfc_rate_ewma: true,
            },
            PiePreset::Linux | PiePreset::Linux314 => Rules {
                scaling: if self == PiePreset::Linux { Scaling::Rfc } else { Scaling::ThreeTier },
                // Linux >= 5.x: p -= p/64; 3.14: p = p*98/100.
                decay: if self == PiePreset::Linux { 63.0 / 64.0 } else { 0.98 },
                boost_above_250ms: true,
                early_uses_qdelay_old: false,
                no_decay_with_backlog: true,
                burst_per_update: false,
                reset_reinit: true,
                rfc_rate_ewma: false,
            },
        }
    }

    /// (target ns, tupdate ns, max_burst ns, alpha Hz, beta Hz, estimator, derandomize).
    fn numbers(self) -> (u64, u64, u64, f64, f64, PieEstimator, bool) {
        match self {
            // RFC 8033 defaults: QDELAY_REF 15 ms, T_UPDATE 15 ms, MAX_BURST
            // 150 ms, alpha 0.125 Hz, beta 1.25 Hz. The RFC's pseudocode uses
            // the departure rate; §4.3 allows timestamps, which aqmlab uses by
            // default (as Linux >= 5.x does): set estimator = "dq_rate" for rate mode.
            PiePreset::Rfc8033 => (15_000_000, 15_000_000, 150_000_000, 0.125, 1.25, PieEstimator::Timestamp, true),
            // include/net/pie.h: 15 ms, 15 ms, 150 ms, alpha 2/16, beta 20/16,
            // dq_rate_estimator = false; derandomisation always on.
            PiePreset::Linux => (15_000_000, 15_000_000, 150_000_000, 0.125, 1.25, PieEstimator::Timestamp, true),
            // Linux 3.14 sch_pie.c: 20 ms, 30 ms, 100 ms, same gains; rate mode
            // only; no derandomisation.
            PiePreset::Linux314 => (20_000_000, 30_000_000, 100_000_000, 0.125, 1.25, PieEstimator::DqRate, false),
        }
    }
}

/// Resolved, immutable parameters.
#[derive(Debug, Clone)]
pub struct PieParams {
    pub target_ns: u64,
    pub tupdate_ns: u64,
    pub max_burst_ns: u64,
    pub alpha: f64,
    pub beta: f64,
    pub estimator: PieEstimator,
    pub derandomize: bool,
    pub dq_threshold: u64,
    pub ecn: bool,
    pub mark_ecn_threshold: f64,
    pub bytemode: bool,
    pub mtu: u64,
    rules: Rules,
}

/// PIE state (RFC 8033 §4 variables).
#[derive(Debug, Clone, Default)]
pub struct PieVars {
    /// drop_prob.
    pub p: f64,
    /// Latest queue delay measurement (ns).
    pub qdelay_ns: u64,
    /// Queue delay used at the previous update (ns).
    pub qdelay_old_ns: u64,
    /// Remaining burst allowance (ns).
    pub burst_ns: u64,
    /// RFC 8033 §5.4 accumulated probability.
    pub accu_prob: f64,
    dq_start_ns: u64,
    /// Bytes counted in the running rate measurement (None: not measuring).
    dq_count: Option<u64>,
    /// Rate-mode average: bytes/ns (Linux) or ns/byte (RFC); 0 = no estimate.
    avg_dq: f64,
    /// Previous dequeue instant (timestamp-mode burst clock).
    last_dq_ns: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Pie {
    q: PacketQueue,
    limit: QueueLimit,
    params: PieParams,
    vars: PieVars,
    next_timer_ns: u64,
}

/// RFC 8033 §4.2: divide the controller's step when p is small.
fn autoscale(scaling: Scaling, p: f64) -> f64 {
    match scaling {
        Scaling::Rfc => match p {
            p if p < 0.000_001 => 1.0 / 2048.0,
            p if p < 0.000_01 => 1.0 / 512.0,
            p if p < 0.000_1 => 1.0 / 128.0,
            p if p < 0.001 => 1.0 / 32.0,
            p if p < 0.01 => 1.0 / 8.0,
            p if p < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        },
        Scaling::ThreeTier => match p {
            p if p < 0.01 => 1.0 / 8.0,
            p if p < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        },
    }
}

/// The module's only random draw.
#[inline]
fn pie_roll(ctx: &mut QdiscCtx, p: f64) -> bool {
    ctx.rng.roll(p)
}

const MS_250: u64 = 250_000_000;

impl Pie {
    pub fn new(cfg: PieConfig, env: &QdiscEnv) -> Result<Self, String> {
        let (target, tupdate, burst, alpha, beta, est, derand) = cfg.preset.numbers();
        let params = PieParams {
            target_ns: cfg.target_ns.unwrap_or(target),
            tupdate_ns: cfg.tupdate_ns.unwrap_or(tupdate),
            max_burst_ns: cfg.max_burst_ns.unwrap_or(burst),
            alpha: cfg.alpha.unwrap_or(alpha),
            beta: cfg.beta.unwrap_or(beta),
            estimator: cfg.estimator.unwrap_or(est),
            derandomize: cfg.derandomize.unwrap_or(derand),
            dq_threshold: cfg.dq_threshold_bytes,
            ecn: cfg.ecn,
            mark_ecn_threshold: cfg.mark_ecn_threshold,
            bytemode: cfg.bytemode,
            mtu: env.mtu_bytes as u64,
            rules: cfg.preset.rules(),
        };
        check_pi_gains(params.target_ns, params.tupdate_ns, params.alpha, params.beta)?;
        if params.dq_threshold == 0 {
            return Err("dq_threshold: must be positive".into());
        }
        // Only the departure-rate estimator (RFC 8033 §5.1 / Linux dq_rate)
        // measures over dq_threshold bytes; with timestamps it would be
        // ignored without a word. (The normalised scenario holds the default.)
        if params.estimator == PieEstimator::Timestamp && params.dq_threshold != PieConfig::default().dq_threshold_bytes {
            return Err("dq_threshold: used by the dq_rate estimator only; this queue estimates delay from timestamps \
                        (set estimator = \"dq_rate\", or preset = \"linux-3.14\")"
                .into());
        }
        if !(0.0..=1.0).contains(&params.mark_ecn_threshold) {
            return Err("mark_ecn_threshold: must be a probability in [0, 1]".into());
        }
        let vars = PieVars { burst_ns: params.max_burst_ns, ..PieVars::default() };
        Ok(Pie {
            q: PacketQueue::with_capacity(initial_capacity(&env.limit)),
            limit: env.limit,
            next_timer_ns: params.tupdate_ns,
            params,
            vars,
        })
    }

    /// Queue delay estimate from the dequeue rate (RFC 8033 §4.3/§5.2, Little's law).
    fn rate_qdelay_ns(&self) -> u64 {
        let (b, avg) = (self.q.bytes() as f64, self.vars.avg_dq);
        match avg {
            a if a <= 0.0 => 0,
            a if self.params.rules.rfc_rate_ewma => (b * a) as u64,
            a => (b / a) as u64,
        }
    }

    /// RFC 8033 §4.2 `calculate_drop_prob`, run every tupdate.
    fn update(&mut self) {
        let qdelay = match self.params.estimator {
            PieEstimator::Timestamp => self.vars.qdelay_ns,
            PieEstimator::DqRate => self.rate_qdelay_ns(),
        };
        let backlog = self.q.bytes();
        let (p, v) = (&self.params, &mut self.vars);
        let r = p.rules;
        let qdelay_old = v.qdelay_old_ns;
        let secs = |a: u64, b: u64| (a as f64 - b as f64) * 1e-9;
        // RFC 8033 §4.2: p += alpha*(qdelay - target) + beta*(qdelay - qdelay_old), scaled by p's decade.
        let mut delta = p.alpha * secs(qdelay, p.target_ns) + p.beta * secs(qdelay, qdelay_old);
        delta *= autoscale(r.scaling, v.p);
        // RFC 8033 §5.5: once p >= 10 %, never raise it by more than 2 % per update.
        if v.p >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        // DEVIATION (Linux sch_pie.c): +2 % when the delay exceeds 250 ms.
        if r.boost_above_250ms && qdelay > MS_250 {
            delta += 0.02;
        }
        v.p += delta;
        // RFC 8033 §4.2: decay exponentially while the queue stays empty.
        let decay_ok = !(r.no_decay_with_backlog && qdelay == 0 && backlog != 0);
        if qdelay == 0 && qdelay_old == 0 && decay_ok {
            v.p *= r.decay;
        }
        v.p = v.p.clamp(0.0, 1.0);
        if r.burst_per_update {
            // RFC 8033 §4.4: the burst allowance runs down by T_UPDATE per update.
            v.burst_ns = v.burst_ns.saturating_sub(p.tupdate_ns);
        }
        // RFC 8033 §4.4: re-arm after two low-delay updates with p == 0.
        if qdelay < p.target_ns / 2 && qdelay_old < p.target_ns / 2 && v.p == 0.0 {
            if !r.reset_reinit {
                v.burst_ns = p.max_burst_ns;
            } else if p.estimator == PieEstimator::Timestamp || v.avg_dq > 0.0 {
                // DEVIATION (Linux pie_vars_init): reset burst, accu and the rate estimator.
                *v = PieVars { p: v.p, qdelay_ns: v.qdelay_ns, burst_ns: p.max_burst_ns, ..PieVars::default() };
            }
        }
        v.qdelay_old_ns = qdelay;
        if p.estimator == PieEstimator::DqRate {
            v.qdelay_ns = qdelay;
        }
    }

    /// RFC 8033 §4.1 `drop_early` with §5.4 derandomisation.
    fn drop_early(&mut self, size: u32, ctx: &mut QdiscCtx) -> bool {
        let backlog = self.q.bytes();
        let (p, v) = (&self.params, &mut self.vars);
        if v.burst_ns > 0 {
            return false;
        }
        let qd = if p.rules.early_uses_qdelay_old { v.qdelay_old_ns } else { v.qdelay_ns };
        if qd < p.target_ns / 2 && v.p < 0.2 {
            return false;
        }
        // Linux: fewer than two MTUs queued (RFC: 2 mean packet sizes) never drops.
        if backlog < 2 * p.mtu {
            return false;
        }
        let local = if p.bytemode && (size as u64) <= p.mtu { v.p * size as f64 / p.mtu as f64 } else { v.p };
        if p.derandomize {
            v.accu_prob = if local == 0.0 { 0.0 } else { v.accu_prob + local };
            if v.accu_prob < 0.85 {
                return false;
            }
            if v.accu_prob >= 8.5 {
                return true;
            }
        }
        pie_roll(ctx, local)
    }

    /// Dequeue-side bookkeeping: the delay measurement and the burst clock.
    fn on_dequeue(&mut self, pkt: &Packet, now: u64) {
        let backlog = self.q.bytes();
        let (p, v) = (&self.params, &mut self.vars);
        match p.estimator {
            PieEstimator::Timestamp => {
                // Pitfall: an empty queue means zero delay, or p never decays.
                v.qdelay_ns = if backlog == 0 { 0 } else { now.saturating_sub(pkt.enq_ns) };
                if !p.rules.burst_per_update {
                    let dtime = v.last_dq_ns.map_or(0, |t| now - t);
                    v.burst_ns = v.burst_ns.saturating_sub(dtime);
                }
                v.last_dq_ns = Some(now);
            }
            PieEstimator::DqRate => {
                // RFC 8033 §5.2: measure how long DQ_THRESHOLD bytes take to drain.
                if backlog >= p.dq_threshold && v.dq_count.is_none() {
                    v.dq_start_ns = now;
                    v.dq_count = Some(0);
                }
                let Some(count) = v.dq_count.map(|c| c + pkt.size_bytes as u64) else { return };
                v.dq_count = Some(count);
                let dtime = now - v.dq_start_ns;
                if count < p.dq_threshold || dtime == 0 {
                    return;
                }
                if p.rules.rfc_rate_ewma {
                    let sample = dtime as f64 / count as f64;
                    v.avg_dq = if v.avg_dq == 0.0 { sample } else { 0.25 * sample + 0.75 * v.avg_dq };
                    v.dq_count = None;
                } else {
                    let sample = count as f64 / dtime as f64;
                    v.avg_dq = if v.avg_dq == 0.0 { sample } else { v.avg_dq * 7.0 / 8.0 + sample / 8.0 };
                    v.dq_count = if backlog < p.dq_threshold { None } else { Some(0) };
                    v.dq_start_ns = now;
                    // Linux (all versions): the burst allowance shrinks per measurement.
                    v.burst_ns = v.burst_ns.saturating_sub(dtime);
                }
            }
        }
    }
}

impl Pie {
    /// RFC 8033 §4.1 enqueue, but the push: the packet to queue, or None if
    /// it was dropped (overflow, or `drop_early` on a Not-ECT packet or
    /// above the marking threshold).
    #[inline]
    fn admit(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        if self.limit.would_overflow(self.q.len(), self.q.bytes(), pkt.size_bytes) {
            self.vars.accu_prob = 0.0;
            ctx.drop(pkt, DropReason::Overflow);
            return None;
        }
        if self.drop_early(pkt.size_bytes, ctx) {
            self.vars.accu_prob = 0.0;
            // RFC 8033 §5.1: mark ECT packets only while p <= 10 %; above, drop them too.
            let p = &self.params;
            if !(p.ecn && self.vars.p <= p.mark_ecn_threshold && ctx.mark(&mut pkt, MarkReason::Aqm)) {
                ctx.drop(pkt, DropReason::Aqm);
                return None;
            }
        }
        Some(pkt)
    }
}

impl Qdisc for Pie {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        if let Some(pkt) = self.admit(pkt, ctx) {
            self.q.push(pkt);
        }
    }

    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        let pkt = self.q.pop()?;
        self.on_dequeue(&pkt, ctx.now_ns);
        Some(pkt)
    }
    /// The packet skips the ring: admitted as `enqueue` would (with nothing
    /// queued, `drop_early` never drops: under 2 MTUs), then the dequeue's
    /// bookkeeping sees it leave an empty queue, as after `pop`.
    fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        debug_assert!(self.q.is_empty() && pkt.enq_ns == ctx.now_ns);
        let pkt = self.admit(pkt, ctx)?;
        self.on_dequeue(&pkt, ctx.now_ns);
        Some(pkt)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.next_timer_ns)
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        self.update();
        self.next_timer_ns = ctx.now_ns + self.params.tupdate_ns;
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["p", "qdelay_ms", "burst_ms"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.p;
        out[1] = self.vars.qdelay_ns as f64 * 1e-6;
        out[2] = self.vars.burst_ns as f64 * 1e-6;
    }
}

#[cfg(test)]
#[path = "pie_tests.rs"]
mod tests;
