//! RED (Random Early Detection) and Adaptive RED.
//!
//! Normative references (read the ns-3 model first; it is what aqmlab
//! reproduces, and it ports ns-2, the authors' own simulator):
//! - Floyd, Jacobson, "Random Early Detection Gateways for Congestion
//!   Avoidance", IEEE/ACM ToN 1(4), 1993: the detailed algorithm (EWMA with idle-time
//!   correction, p_b, p_a with the count of packets since the last drop).
//! - Floyd, "Recommendations on using the gentle_ variant of RED", 2000.
//! - Floyd, Gummadi, Shenker, "Adaptive RED: An Algorithm for Increasing the
//!   Robustness of RED's Active Queue Management", 2001: the algorithm figure
//!   (max_p AIMD every 0.5 s towards a 40-60 % band; automatic thresholds).
//! - ns-3 `src/traffic-control/model/red-queue-disc.cc` (`DoEnqueue`,
//!   `Estimator`, `CalculatePNew`, `ModifyP`, `UpdateMaxP`, `InitializeParams`).
//! - Linux `include/net/red.h` / `sch_red.c` (`harddrop`, the 500 ms adaptive timer).
//!
//! Thresholds are in packets. "red" and "ared" share this file: both configs
//! convert into [`RedSpec`] and build the same [`Red`].
//!
//! ECN rule (ns-3 `UseHardDrop`, default true): an ECT packet chosen by the
//! probabilistic test is CE-marked when `ecn` is on; in the forced region
//! (avg >= max_th without gentle, avg >= 2*max_th with gentle) it is dropped
//! anyway. `hard_drop = false` gives Linux's default (mark ECT even there).

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use crate::packet::Packet;
use crate::sim::units::{serde_duration, serde_size};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RedConfig {
    /// Average queue (packets) below which nothing is dropped.
    pub min_th: f64,
    /// Average queue (packets) at which p_b reaches max_p.
    pub max_th: f64,
    /// p_b at max_th.
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub w_q: f64,
    /// Between max_th and 2*max_th, ramp p_b from max_p to 1 instead of jumping.
    pub gentle: bool,
    /// Spread drops evenly: no drop until count*p_b >= 1 (ns-2 `wait_`).
    pub wait: bool,
    /// CE-mark ECT packets instead of dropping them (outside the forced region).
    pub ecn: bool,
    /// In the forced region drop even ECT packets (ns-3); false = mark (Linux).
    pub hard_drop: bool,
    /// Scale p_a by packet size / mean_pkt_size.
    pub byte_mode: bool,
    /// Packet size for the idle-time correction (link rate in packets/s) and byte mode.
    #[serde(rename = "mean_pkt_size", with = "serde_size")]
    pub mean_pkt_bytes: u64,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            // 5 / 15 packets: ns-3 MinTh / MaxTh defaults (ns-2 heritage).
            min_th: 5.0,
            max_th: 15.0,
            // 0.02 = 1/LInterm with ns-3's LInterm 50 (Floyd-Jacobson suggest <= 0.1).
            max_p: 0.02,
            // 0.002: ns-3 QW default (Floyd-Jacobson recommend w_q >= 0.001).
            w_q: 0.002,
            // on: ns-3 Gentle default, per Floyd's 2000 recommendation.
            gentle: true,
            // on: ns-3 Wait default (ns-2 wait_).
            wait: true,
            // off: ns-3 UseEcn default.
            ecn: false,
            // on: ns-3 UseHardDrop default.
            hard_drop: true,
            // off: packet mode.
            byte_mode: false,
            // 1500 B: aqmlab's data packets (ns-3 uses 500 B, a data/ACK mix).
            mean_pkt_bytes: 1500,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AredConfig {
    /// Target queueing delay that sets the automatic thresholds (FGS01 §5:
    /// target queue = target_delay * C = (min_th + max_th)/2 with max_th = 3 min_th).
    #[serde(rename = "target_delay", with = "serde_duration")]
    pub target_delay_ns: u64,
    /// Explicit min_th in packets; None = automatic, max(min_th_floor, target_delay*C/2).
    pub min_th: Option<f64>,
    /// Explicit max_th in packets; None = 3 * min_th (FGS01 §5, ns-2 `th_max_pkts`).
    pub max_th: Option<f64>,
    /// Lower bound of the automatic min_th in packets (FGS01 §5 / ns-2: 5).
    /// It makes target_delay ineffective below 2*min_th_floor/C (12 ms at
    /// 10 Mbit/s with 1500 B packets); 0 = the pure mapping (as a Linux
    /// user who converts the target to byte thresholds gets).
    pub min_th_floor: f64,
    /// EWMA weight; None = FGS01 §5's 1 - exp(-1/C). Linux `tc red` derives
    /// it from `burst` instead (often far larger at low rates).
    pub w_q: Option<f64>,
    /// Period of the max_p adaptation.
    #[serde(rename = "interval", with = "serde_duration")]
    pub interval_ns: u64,
    /// Additive step cap: max_p += min(alpha, max_p/4).
    pub alpha: f64,
    /// Multiplicative decrease: max_p *= beta.
    pub beta: f64,
    /// Initial max_p.
    pub max_p: f64,
    /// Bounds of max_p.
    pub max_p_bottom: f64,
    pub max_p_top: f64,
    pub gentle: bool,
    pub wait: bool,
    pub ecn: bool,
    pub hard_drop: bool,
    #[serde(rename = "mean_pkt_size", with = "serde_size")]
    pub mean_pkt_bytes: u64,
}

impl Default for AredConfig {
    fn default() -> Self {
        AredConfig {
            // 5 ms: ARED paper and ns-3 TargetDelay.
            target_delay_ns: 5_000_000,
            // None: the automatic thresholds of the ARED paper (see ared_thresholds).
            min_th: None,
            max_th: None,
            // 5 packets: the ARED paper's lower bound on min_th, ns-2/ns-3 default.
            min_th_floor: 5.0,
            // None: automatic, 1 - exp(-1/C).
            w_q: None,
            // 500 ms: ARED paper, Linux adaptive timer (HZ/2), ns-3 Interval.
            interval_ns: 500_000_000,
            // 0.01 / 0.9: ARED paper (alpha = min(0.01, max_p/4), beta = 0.9).
            alpha: 0.01,
            beta: 0.9,
            // 0.02: ns-3 1/LInterm as the starting point.
            max_p: 0.02,
            // [0.01, 0.5]: ARED paper range for max_p.
            max_p_bottom: 0.01,
            max_p_top: 0.5,
            // gentle / wait / ecn / hard_drop / mean size: as for RED.
            gentle: true,
            wait: true,
            ecn: false,
            hard_drop: true,
            mean_pkt_bytes: 1500,
        }
    }
}

/// What either registry name builds from.
pub enum RedSpec {
    Red(RedConfig),
    Ared(AredConfig),
}
impl From<RedConfig> for RedSpec {
    fn from(c: RedConfig) -> Self {
        RedSpec::Red(c)
    }
}
impl From<AredConfig> for RedSpec {
    fn from(c: AredConfig) -> Self {
        RedSpec::Ared(c)
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Adapt {
    interval_ns: u64,
    alpha: f64,
    beta: f64,
    bottom: f64,
    top: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub w_q: f64,
    pub gentle: bool,
    pub wait: bool,
    pub ecn: bool,
    pub hard_drop: bool,
    pub byte_mode: bool,
    pub mean_pkt: f64,
    /// Link rate in mean-size packets per second (ns-2 `ptc`).
    pub ptc: f64,
    adapt: Option<Adapt>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RedVars {
    /// EWMA of the queue length (packets).
    pub avg: f64,
    /// Packets since the last drop (ns-2 `count`).
    pub count: u64,
    /// avg was already >= min_th at the previous arrival (ns-2 `old`).
    pub above_min: bool,
    /// Start of the current idle period.
    pub idle_since_ns: Option<u64>,
    pub max_p: f64,
    /// Last p_a computed.
    pub p_a: f64,
    next_timer_ns: u64,
}

#[derive(Debug, Clone)]
pub struct Red {
    q: PacketQueue,
    limit: QueueLimit,
    params: RedParams,
    vars: RedVars,
}

/// RED's base probability for an average queue `avg` (Floyd-Jacobson;
/// gentle extension between max_th and 2*max_th as in ns-2/ns-3).
pub fn red_p_b(avg: f64, min_th: f64, max_th: f64, max_p: f64, gentle: bool) -> f64 {
    if avg < min_th {
        0.0
    } else if avg < max_th {
        max_p * (avg - min_th) / (max_th - min_th)
    } else if gentle && avg < 2.0 * max_th {
        max_p + (1.0 - max_p) * (avg - max_th) / max_th
    } else {
        1.0
    }
}

/// ARED's thresholds in packets for a link of `ptc` packets per second.
///
/// Floyd, Gummadi, Shenker 2001 ("Adaptive RED"), §5 on setting the
/// remaining parameters (the automatic mode ns-2 implements): the target
/// average queue is target_delay * C and sits mid-way between the
/// thresholds, (min_th + max_th)/2, with max_th = 3 * min_th, so
/// min_th = target_delay * C / 2, but never below 5 packets (`min_th_floor`).
/// Explicit `min_th` / `max_th` override either half (ns-2: a non-zero
/// `thresh_` / `maxthresh_` is kept as given).
pub fn ared_thresholds(c: &AredConfig, ptc: f64) -> Result<(f64, f64), String> {
    if !(c.min_th_floor.is_finite() && c.min_th_floor >= 0.0) {
        return Err(format!("min_th_floor: {} is not allowed: a non-negative number of packets", c.min_th_floor));
    }
    let min_th = match c.min_th {
        Some(m) if m.is_finite() && m >= 0.0 => m,
        Some(m) => return Err(format!("min_th: {m} is not allowed: a non-negative number of packets")),
        None => (c.target_delay_ns as f64 * 1e-9 * ptc / 2.0).max(c.min_th_floor),
    };
    let max_th = c.max_th.unwrap_or(3.0 * min_th);
    if !(max_th.is_finite() && max_th > min_th) {
        return Err(format!("max_th: {max_th} is not allowed: must be greater than min_th ({min_th} packets)"));
    }
    Ok((min_th, max_th))
}

/// RED's actual probability given `count` arrivals since the last drop:
/// p_b/(1 - count*p_b) (Floyd-Jacobson), or with ns-2 `wait`: 0 until
/// count*p_b >= 1, then p_b/(2 - count*p_b), then 1.
pub fn red_p_a(p_b: f64, count: u64, wait: bool) -> f64 {
    let cp = count as f64 * p_b;
    let p = if wait {
        match cp {
            x if x < 1.0 => 0.0,
            x if x < 2.0 => p_b / (2.0 - x),
            _ => 1.0,
        }
    } else if cp < 1.0 {
        p_b / (1.0 - cp)
    } else {
        1.0
    };
    p.min(1.0)
}

/// The module's only random draw.
#[inline]
fn red_roll(ctx: &mut QdiscCtx, p: f64) -> bool {
    ctx.rng.roll(p)
}

#[derive(PartialEq)]
enum Verdict {
    Pass,
    Early,
    Forced,
}

fn check_prob(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 && v <= 1.0 {
        Ok(())
    } else {
        Err(format!("{name}: must be in (0, 1]"))
    }
}

impl Red {
    pub fn new(cfg: impl Into<RedSpec>, env: &QdiscEnv) -> Result<Self, String> {
        let (params, max_p) = match cfg.into() {
            RedSpec::Red(c) => Self::red_params(&c, env)?,
            RedSpec::Ared(c) => Self::ared_params(&c, env)?,
        };
        let next_timer_ns = params.adapt.as_ref().map_or(0, |a| a.interval_ns);
        let vars = RedVars { max_p, idle_since_ns: Some(0), next_timer_ns, ..RedVars::default() };
        Ok(Red {
            q: PacketQueue::with_capacity(initial_capacity(&env.limit)),
            limit: env.limit,
            params,
            vars,
        })
    }

    fn ptc(env: &QdiscEnv, mean_pkt_bytes: u64) -> Result<f64, String> {
        if mean_pkt_bytes == 0 {
            return Err("mean_pkt_size: must be positive".into());
        }
        Ok(env.link_rate_bps as f64 / (8.0 * mean_pkt_bytes as f64))
    }

    fn red_params(c: &RedConfig, env: &QdiscEnv) -> Result<(RedParams, f64), String> {
        if !(c.min_th.is_finite() && c.min_th >= 0.0) {
            return Err("min_th: must be a non-negative number of packets".into());
        }
        if !(c.max_th.is_finite() && c.max_th > c.min_th) {
            return Err("max_th: must be greater than min_th".into());
        }
        check_prob("max_p", c.max_p)?;
        check_prob("w_q", c.w_q)?;
        let p = RedParams {
            min_th: c.min_th,
            max_th: c.max_th,
            w_q: c.w_q,
            gentle: c.gentle,
            wait: c.wait,
            ecn: c.ecn,
            hard_drop: c.hard_drop,
            byte_mode: c.byte_mode,
            mean_pkt: c.mean_pkt_bytes as f64,
            ptc: Self::ptc(env, c.mean_pkt_bytes)?,
            adapt: None,
        };
        Ok((p, c.max_p))
    }

    fn ared_params(c: &AredConfig, env: &QdiscEnv) -> Result<(RedParams, f64), String> {
        if c.target_delay_ns == 0 {
            return Err("target_delay: must be positive".into());
        }
        if c.interval_ns == 0 {
            return Err("interval: must be positive".into());
        }
        check_prob("alpha", c.alpha)?;
        check_prob("beta", c.beta)?;
        check_prob("max_p_bottom", c.max_p_bottom)?;
        check_prob("max_p_top", c.max_p_top)?;
        if c.max_p_bottom > c.max_p_top {
            return Err("max_p_bottom: must not exceed max_p_top".into());
        }
        if !(c.max_p_bottom..=c.max_p_top).contains(&c.max_p) {
            return Err("max_p: must lie in [max_p_bottom, max_p_top]".into());
        }
        let ptc = Self::ptc(env, c.mean_pkt_bytes)?;
        if ptc <= 0.0 {
            return Err("ared needs a positive link rate".into());
        }
        let (min_th, max_th) = ared_thresholds(c, ptc)?;
        if let Some(w) = c.w_q {
            check_prob("w_q", w)?;
        }
        let p = RedParams {
            min_th,
            max_th,
            // FGS01 §5 (ns-2 q_weight = 0): w_q = 1 - exp(-1/C), a time constant
            // of one second's worth of packets at the link rate.
            w_q: c.w_q.unwrap_or(1.0 - libm::exp(-1.0 / ptc)),
            gentle: c.gentle,
            wait: c.wait,
            ecn: c.ecn,
            hard_drop: c.hard_drop,
            byte_mode: false,
            mean_pkt: c.mean_pkt_bytes as f64,
            ptc,
            adapt: Some(Adapt {
                interval_ns: c.interval_ns,
                alpha: c.alpha,
                beta: c.beta,
                bottom: c.max_p_bottom,
                top: c.max_p_top,
            }),
        };
        Ok((p, c.max_p))
    }

    /// avg decayed over an idle period that started at `t0`: as if `m` =
    /// ptc*idle small packets had arrived to an empty queue (Floyd-Jacobson).
    fn idle_packets(&self, t0: u64, now: u64) -> u64 {
        (self.params.ptc * (now.saturating_sub(t0)) as f64 * 1e-9) as u64
    }

    /// ARED paper, every interval: AIMD on max_p towards the
    /// [min_th + 0.4(max_th - min_th), min_th + 0.6(max_th - min_th)] band.
    fn adapt_max_p(&mut self, now: u64) {
        let Some(a) = self.params.adapt.clone() else { return };
        let (p, v) = (&self.params, &self.vars);
        // Linux red_adaptative_algo: judge an idle queue by its decayed average.
        let avg = match v.idle_since_ns {
            Some(t0) => v.avg * (1.0 - p.w_q).powf(self.idle_packets(t0, now) as f64),
            None => v.avg,
        };
        let band = p.max_th - p.min_th;
        let v = &mut self.vars;
        // DEVIATION (paper tests max_p <= 0.5 / >= 0.01 before the step, so it
        // can overshoot by one step): aqmlab clamps max_p to [bottom, top].
        if avg > p.min_th + 0.6 * band && v.max_p < a.top {
            v.max_p = (v.max_p + a.alpha.min(v.max_p / 4.0)).min(a.top);
        } else if avg < p.min_th + 0.4 * band && v.max_p > a.bottom {
            v.max_p = (v.max_p * a.beta).max(a.bottom);
        }
    }
}

impl Red {
    /// Enqueue, but the push: the RED decision (Floyd-Jacobson, as ns-3's
    /// `DoEnqueue`), then the buffer limit; the packet to queue, or None
    /// if it was dropped.
    #[inline]
    fn admit(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        let qlen = self.q.len();
        // Floyd-Jacobson: after idle, decay avg as if m packets had passed.
        let m = match self.vars.idle_since_ns.take() {
            Some(t0) => self.idle_packets(t0, ctx.now_ns),
            None => 0,
        };
        let (p, v) = (&self.params, &mut self.vars);
        v.avg = v.avg * (1.0 - p.w_q).powf((m + 1) as f64) + p.w_q * qlen as f64;
        v.count += 1;
        let mut verdict = Verdict::Pass;
        // ns-3 DoEnqueue: act only when avg >= min_th and more than one packet waits.
        if v.avg >= p.min_th && qlen > 1 {
            let forced_at = if p.gentle { 2.0 * p.max_th } else { p.max_th };
            if v.avg >= forced_at {
                verdict = Verdict::Forced;
            } else if !v.above_min {
                // Just crossed min_th: restart the count, no drop test yet.
                v.above_min = true;
                v.count = 1;
            } else {
                let p_b = red_p_b(v.avg, p.min_th, p.max_th, v.max_p, p.gentle);
                v.p_a = red_p_a(p_b, v.count, p.wait);
                if p.byte_mode && v.p_a < 1.0 {
                    v.p_a = (v.p_a * pkt.size_bytes as f64 / p.mean_pkt).min(1.0);
                }
                if red_roll(ctx, v.p_a) {
                    v.count = 0;
                    verdict = Verdict::Early;
                }
            }
        } else {
            v.above_min = false;
            v.p_a = 0.0;
        }
        let mark = match verdict {
            Verdict::Pass => false,
            Verdict::Early => p.ecn,
            Verdict::Forced => p.ecn && !p.hard_drop,
        };
        if verdict != Verdict::Pass && !(mark && ctx.mark(&mut pkt, MarkReason::Aqm)) {
            ctx.drop(pkt, DropReason::Aqm);
            None
        } else if self.limit.would_overflow(self.q.len(), self.q.bytes(), pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
            None
        } else {
            Some(pkt)
        }
    }

    /// After a dequeue: an empty queue starts the idle period that the
    /// next arrival's average decays over.
    #[inline]
    fn note_idle(&mut self, now_ns: u64) {
        // DEVIATION (ns-3/Linux start idle when a dequeue finds the queue
        // empty): aqmlab starts it when the last packet leaves.
        if self.q.is_empty() && self.vars.idle_since_ns.is_none() {
            self.vars.idle_since_ns = Some(now_ns);
        }
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        if let Some(pkt) = self.admit(pkt, ctx) {
            self.q.push(pkt);
        }
    }

    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        let pkt = self.q.pop();
        self.note_idle(ctx.now_ns);
        pkt
    }
    /// The packet skips the ring: admitted as `enqueue` would, and the
    /// queue, empty after it (or after its drop) as after `dequeue`, starts
    /// idling now.
    fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        debug_assert!(self.q.is_empty() && pkt.enq_ns == ctx.now_ns);
        let pkt = self.admit(pkt, ctx);
        self.note_idle(ctx.now_ns);
        pkt
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn next_timer_ns(&self) -> Option<u64> {
        self.params.adapt.as_ref().map(|_| self.vars.next_timer_ns)
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        self.adapt_max_p(ctx.now_ns);
        if let Some(a) = &self.params.adapt {
            self.vars.next_timer_ns = ctx.now_ns + a.interval_ns;
        }
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["avg", "max_p", "p_a"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.avg;
        out[1] = self.vars.max_p;
        out[2] = self.vars.p_a;
    }
}

#[cfg(test)]
#[path = "red_tests.rs"]
mod tests;
