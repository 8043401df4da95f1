//! DualQ Coupled Curvy RED (RFC 9332 Appendix B).
//!
//! Normative references (read Appendix B.1 first):
//! - RFC 9332 Appendix B.1 (pseudocode) and B.2 (efficient shift-based
//!   form). <https://www.rfc-editor.org/rfc/rfc9332#appendix-B>
//! - Briscoe, "Insights from Curvy RED (Random Early Detection)", BT TR
//!   TR-TUB8-2015-003 (the curviness U: drop when a scaled delay exceeds the
//!   max of 2U uniform random numbers, i.e. p = x^(2U)).
//!
//! Algorithm (float form of B.1): at each Classic dequeue the EWMA
//! Q_C += (sojourn - Q_C) * 2^-g_C. A Classic packet is dropped/marked with
//! p_C = (Q_C / 2^S_C)^(2U) (compare against the max of 2U uniforms); an
//! L4S packet is marked if its sojourn exceeds T (native step) OR with
//! p_CL = (Q_C / 2^S_L)^U, S_L = S_C - k' (so for U = 1, p_CL = 2^k' * sqrt(p_C)).
//! Q_C is in seconds. The primary text of Appendix B could not be opened when
//! this was written: the parameter values and units below are unconfirmed
//! (see docs/algorithms/aqm.md).
//!
//! Storage, classification and scheduling are shared with DualPI2 ([`super::dualq`]).

use super::dualq::{delegate_to_dual_queue, DualQueue, DualQueueAqm, L4sEct, SchedulerKind, L};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv};
use crate::packet::Packet;
use crate::sim::units::serde_duration;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CurvyRedConfig {
    /// Coupling factor as a power of two: k = 2^k_prime.
    pub k_prime: u32,
    /// EWMA gain of Q_C as a power of 1/2: weight 2^-g_c.
    pub g_c: u32,
    /// Classic scaling exponent: p_C = (Q_C[s] / 2^s_c)^(2U).
    pub s_c: i32,
    /// Curviness U (1 = squared Classic ramp, linear L4S ramp).
    pub curviness: u32,
    /// Native L4S step threshold T on L-queue sojourn.
    #[serde(rename = "l4s_step", with = "serde_duration")]
    pub l4s_step_ns: u64,
    pub l4s_ect: L4sEct,
    pub scheduler: SchedulerKind,
    /// WRR Classic weight in percent.
    pub classic_protection: u8,
    /// TS-FIFO time shift.
    #[serde(rename = "tshift", with = "serde_duration")]
    pub tshift_ns: u64,
}

impl Default for CurvyRedConfig {
    fn default() -> Self {
        CurvyRedConfig {
            // k' = 1 (k = 2): RFC 9332 B.1 header [unconfirmed], matching §2.1's k = 2.
            k_prime: 1,
            // g_C = 5 (weight 1/32): RFC 9332 B.1 header [unconfirmed].
            g_c: 5,
            // S_C = -1: RFC 9332 B.1 header [unconfirmed]; with Q_C in seconds
            // p_C reaches 1 at Q_C = 2^-1 s = 500 ms.
            s_c: -1,
            // U = 1: RFC 9332 B.1 (squared Classic, linear coupled L4S).
            curviness: 1,
            // T = 1 ms: RFC 9332 B.1 header [unconfirmed]; the L4S step of Linux too.
            l4s_step_ns: 1_000_000,
            // ECT(1)/CE to L: RFC 9332 §2.3.
            l4s_ect: L4sEct::L4s,
            // Same scheduler defaults as dualpi2 (WRR, wc = 10 %, tshift 50 ms).
            scheduler: SchedulerKind::Wrr,
            classic_protection: 10,
            tshift_ns: 50_000_000,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CurvyRedVars {
    /// EWMA of Classic sojourn, seconds.
    pub q_c: f64,
}

#[derive(Debug, Clone)]
pub struct CurvyRed {
    dq: DualQueue,
    cfg: CurvyRedConfig,
    /// 2^-g_C.
    gain: f64,
    /// 2^-S_C and 2^-S_L: multipliers turning Q_C into the scaled delays.
    scale_c: f64,
    scale_l: f64,
    vars: CurvyRedVars,
}

/// The module's only random draw.
#[inline]
fn curvy_roll(ctx: &mut QdiscCtx, p: f64) -> bool {
    ctx.rng.roll(p)
}

/// `x > max(u_1..u_n)` for n independent uniforms: all n rolls must succeed.
fn exceeds_max_of(ctx: &mut QdiscCtx, x: f64, n: u32) -> bool {
    (0..n).all(|_| curvy_roll(ctx, x))
}

impl CurvyRed {
    pub fn new(cfg: CurvyRedConfig, env: &QdiscEnv) -> Result<Self, String> {
        if cfg.curviness == 0 {
            return Err("curviness: must be at least 1".into());
        }
        if cfg.g_c > 30 {
            return Err("g_c: must be at most 30".into());
        }
        if !(-30..=30).contains(&cfg.s_c) || cfg.k_prime > 30 {
            return Err("s_c: must lie in -30..=30 (and k_prime <= 30)".into());
        }
        if cfg.l4s_step_ns == 0 {
            return Err("l4s_step: must be positive".into());
        }
        let dq = DualQueue::new(
            env.limit,
            env.mtu_bytes,
            cfg.l4s_ect,
            cfg.scheduler,
            cfg.classic_protection,
            cfg.tshift_ns,
        )?;
        let s_l = cfg.s_c - cfg.k_prime as i32;
        Ok(CurvyRed {
            dq,
            gain: libm::exp2(-(cfg.g_c as f64)),
            scale_c: libm::exp2(-(cfg.s_c as f64)),
            scale_l: libm::exp2(-(s_l as f64)),
            cfg,
            vars: CurvyRedVars::default(),
        })
    }

    /// Classic probability p_C = (Q_C/2^S_C)^(2U), clamped to 1.
    pub fn p_c(&self) -> f64 {
        (self.vars.q_c * self.scale_c).min(1.0).powi(2 * self.cfg.curviness as i32)
    }
    /// Coupled L4S probability p_CL = (Q_C/2^S_L)^U, clamped to 1.
    pub fn p_cl(&self) -> f64 {
        (self.vars.q_c * self.scale_l).min(1.0).powi(self.cfg.curviness as i32)
    }

    fn classic(&mut self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        let sojourn_s = ctx.now_ns.saturating_sub(pkt.enq_ns) as f64 * 1e-9;
        // RFC 9332 B.1: Classic queue-delay EWMA, updated per Classic dequeue.
        self.vars.q_c += (sojourn_s - self.vars.q_c) * self.gain;
        let x = (self.vars.q_c * self.scale_c).min(1.0);
        // RFC 9332 B.1: drop (Not-ECT) or mark when x > max of 2U uniforms.
        if exceeds_max_of(ctx, x, 2 * self.cfg.curviness) {
            return ctx.mark_or_drop(pkt, MarkReason::Aqm, DropReason::Aqm);
        }
        true
    }

    fn l4s(&mut self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        // RFC 9332 B.1: native step OR coupled (Q_C/2^S_L > max of U uniforms).
        if ctx.now_ns.saturating_sub(pkt.enq_ns) > self.cfg.l4s_step_ns {
            return ctx.mark_or_drop(pkt, MarkReason::Step, DropReason::Aqm);
        }
        let x = (self.vars.q_c * self.scale_l).min(1.0);
        if exceeds_max_of(ctx, x, self.cfg.curviness) {
            return ctx.mark_or_drop(pkt, MarkReason::Coupled, DropReason::Aqm);
        }
        true
    }
}

impl DualQueueAqm for CurvyRed {
    fn dual_queue(&mut self) -> &mut DualQueue {
        &mut self.dq
    }
    #[inline]
    fn judge(&mut self, pkt: &mut Packet, _l_len_before: usize, ctx: &mut QdiscCtx) -> bool {
        if pkt.subq == L {
            self.l4s(pkt, ctx)
        } else {
            self.classic(pkt, ctx)
        }
    }
}

impl Qdisc for CurvyRed {
    delegate_to_dual_queue!();

    fn probe_names(&self) -> &'static [&'static str] {
        &["q_c_ms", "p_c", "p_cl"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.q_c * 1e3;
        out[1] = self.p_c();
        out[2] = self.p_cl();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
    use crate::packet::Ecn;

    const MS: u64 = 1_000_000;

    fn curvy() -> Harness<CurvyRed> {
        Harness::new(CurvyRed::new(CurvyRedConfig::default(), &env(100_000_000, 10_000)).unwrap())
    }

    /// Batches of 10 packets, each served `sojourn` after arrival, with Q_C
    /// preset to `q_c` seconds. Returns signals / decisions for the sub-queue.
    fn run(h: &mut Harness<CurvyRed>, ecn: Ecn, q_c: f64, sojourn: u64, batches: u64) -> f64 {
        h.q.vars.q_c = q_c;
        let sub = h.q.classify(&data(1, ecn)) as usize;
        for b in 0..batches {
            let t = b * 1_000 * MS;
            for _ in 0..10 {
                h.enqueue(t, data(1, ecn));
            }
            while h.dequeue(t + sojourn).is_some() {}
        }
        let c = &h.counters[sub];
        (c.drops() + c.marks()) as f64 / c.arrived_pkts as f64
    }

    #[test]
    fn classic_ewma_moves_by_one_over_32_of_the_gap() {
        let mut h = curvy();
        h.enqueue(0, data(1, Ecn::NotEct));
        h.dequeue(64 * MS);
        assert!((h.q.vars.q_c - 0.064 / 32.0).abs() < 1e-15);
    }

    #[test]
    fn classic_probability_is_scaled_ewma_squared() {
        let mut h = curvy();
        // Sojourn = Q_C = 150 ms keeps the EWMA fixed: p_C = (0.150/2^-1)^2 = 0.09.
        let f = run(&mut h, Ecn::NotEct, 0.150, 150 * MS, 4_000);
        assert!((h.q.vars.q_c - 0.150).abs() < 1e-12);
        assert!((h.q.p_c() - 0.09).abs() < 1e-12);
        let tol = 4.0 * (0.09f64 * 0.91 / 40_000.0).sqrt();
        assert!((f - 0.09).abs() < tol, "{f}");
        assert_eq!(h.marks(), 0);
    }

    #[test]
    fn coupled_l4s_marking_is_two_to_the_k_prime_times_sqrt_p_c() {
        let mut h = curvy();
        // Q_C = 150 ms: p_CL = 0.150/2^-2 = 0.6 = 2 * sqrt(0.09). Sojourn 0: no step.
        let f = run(&mut h, Ecn::Ect1, 0.150, 0, 4_000);
        assert!((h.q.p_cl() - 2.0 * h.q.p_c().sqrt()).abs() < 1e-12);
        let tol = 4.0 * (0.24f64 / 40_000.0).sqrt();
        assert!((f - 0.6).abs() < tol, "{f}");
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn l4s_step_marks_everything_above_t() {
        let mut h = curvy();
        let f = run(&mut h, Ecn::Ect1, 0.0, 2 * MS, 100);
        assert_eq!(f, 1.0);
        assert_eq!(h.counters[L as usize].marked_pkts[MarkReason::Step as usize], 1000);
    }

    #[test]
    fn random_trace_conserves_packets() {
        let mut h = Harness::new(CurvyRed::new(CurvyRedConfig::default(), &env(10_000_000, 40)).unwrap());
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }

    /// The engine's early hand-off relies on `pass_through` leaving Curvy
    /// RED exactly as `enqueue` then `dequeue` would (`compare_pass_through`:
    /// packets, counters, random draws, Q_C and the WRR credit after every
    /// step of a trace of overload and drain). A passed Classic packet
    /// updates Q_C with a sojourn of 0, as a dequeued lone one does.
    #[test]
    fn pass_through_equals_enqueue_then_dequeue() {
        let e = env(100_000_000, 200);
        let mut a = Harness::new(CurvyRed::new(CurvyRedConfig::default(), &e).unwrap());
        let mut b = Harness::new(CurvyRed::new(CurvyRedConfig::default(), &e).unwrap());
        let (passed, changed) = compare_pass_through(&mut a, &mut b, |q| format!("{:?} {:?}", q.vars, q.dq.credit()));
        assert!(passed > 1000, "{passed} arrivals at an empty queue");
        assert!(changed > 500, "{changed} passed packets changed Q_C");
        assert!(a.drops() > 100 && a.marks() > 100, "{} drops, {} marks", a.drops(), a.marks());
    }
}
