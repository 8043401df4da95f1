//! DualPI2: the DualQ Coupled AQM with a PI2 base AQM.
//!
//! Normative references (read RFC 9332 §2.1 and Appendix A first):
//! - RFC 9332, "Dual-Queue Coupled AQM for L4S": §2.1 (coupling: p_C = p'^2,
//!   p_CL = k*p'), §2.4-2.5 (structure and requirements), §4.2.3 (L4S ECN
//!   saturation: switch to drop), Appendix A.1 (DualPI2 pseudocode and its
//!   Figure 2 defaults), A.2 (edge cases, overload).
//!   <https://www.rfc-editor.org/rfc/rfc9332#appendix-A>
//! - Linux `net/sched/sch_dualpi2.c` (mainline 2025): `calculate_probability`
//!   (PI on max of both head sojourns), `must_drop` (2-MTU floor,
//!   `dualpi2_classic_marking` / `dualpi2_scalable_marking`), `do_step_aqm`,
//!   `dualpi2_reset_default`; iproute2 `tc-dualpi2(8)`.
//! - De Schepper et al., "PI2: A Linearized AQM for both Classic and Scalable
//!   TCP", CoNEXT 2016 (why squaring p' suits Reno/CUBIC).
//!
//! Storage, classification and the scheduler are in [`super::dualq`].
//! `variant` selects the defaults and the two behaviours where the RFC and
//! Linux differ (what the PI controller measures; how the L4S native and
//! coupled probabilities combine); every numeric default can be overridden.

use super::pi::{check_pi_gains, pi_config};
use super::dualq::{delegate_to_dual_queue, DualQueue, DualQueueAqm, L4sEct, SchedulerKind, L};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv};
use crate::packet::Packet;
use crate::sim::units::serde_duration;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DualPi2Variant {
    /// RFC 9332 Appendix A.1.
    Rfc,
    /// Linux sch_dualpi2.
    Linux,
}

/// The L-queue's own (native) AQM on its sojourn time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NativeAqm {
    /// Mark everything above step_thresh (Linux).
    Step,
    /// Linear ramp from ramp_min_th over ramp_range (RFC 9332 A.1 `laqm`).
    Ramp,
}

pi_config! {
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    pub struct DualPi2Config {
        pub variant: DualPi2Variant,
        @target_tupdate
        @alpha_beta
        /// Native L4S AQM; None = the variant's (step for linux, ramp for rfc).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub native: Option<NativeAqm>,
        /// Coupling factor k: p_CL = k * p'.
        pub coupling_factor: f64,
        #[serde(rename = "step_thresh", with = "serde_duration")]
        pub step_thresh_ns: u64,
        #[serde(rename = "ramp_min_th", with = "serde_duration")]
        pub ramp_min_th_ns: u64,
        #[serde(rename = "ramp_range", with = "serde_duration")]
        pub ramp_range_ns: u64,
        /// No native ramp marking while the L-queue holds at most this many packets.
        pub th_len_pkts: u32,
        /// On L4S saturation (k*p' > 1) drop L4S with p'^2 (true) or let the queue overflow (false).
        pub drop_on_overload: bool,
        pub l4s_ect: L4sEct,
        pub scheduler: SchedulerKind,
        /// WRR Classic weight in percent.
        pub classic_protection: u8,
        /// TS-FIFO time shift.
        #[serde(rename = "tshift", with = "serde_duration")]
        pub tshift_ns: u64,
    }
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            // Linux: the deployed reference; "rfc" selects Appendix A.1.
            variant: DualPi2Variant::Linux,
            // None: target/tupdate/alpha/beta/native from DualPi2Variant::numbers.
            target_ns: None,
            tupdate_ns: None,
            alpha: None,
            beta: None,
            native: None,
            // 2: RFC 9332 §2.1 and Linux ("window fairness for equal RTTs").
            coupling_factor: 2.0,
            // 1 ms of L sojourn: Linux step_thresh default.
            step_thresh_ns: 1_000_000,
            // 800 us + 400 us: RFC 9332 A.1 Figure 2 (minTh, range; full marking at 1.2 ms).
            ramp_min_th_ns: 800_000,
            ramp_range_ns: 400_000,
            // 1 packet: RFC 9332 A.1 Th_len (a lone packet is never ramp-marked).
            th_len_pkts: 1,
            // on: Linux drop_on_overload default; RFC 9332 §4.2.3 "drop on saturation".
            drop_on_overload: true,
            // ECT(1)/CE only: RFC 9332 §2.3, Linux l4s_ect default.
            l4s_ect: L4sEct::L4s,
            // WRR: Linux; RFC 9332 §2.4 allows TS-FIFO (scheduler = "ts_fifo").
            scheduler: SchedulerKind::Wrr,
            // 10 %: Linux classic_protection default (wc = 10, wl = 90).
            classic_protection: 10,
            // 50 ms: ns-3 DualPi2 port of the draft (TS-FIFO only).
            tshift_ns: 50_000_000,
        }
    }
}

impl DualPi2Variant {
    /// (target ns, tupdate ns, alpha Hz, beta Hz, native AQM).
    fn numbers(self) -> (u64, u64, f64, f64, NativeAqm) {
        match self {
            // RFC 9332 A.1 Figure 2: target 15 ms, RTT_max 100 ms ->
            // Tupdate = min(target, RTT_max/3) = 15 ms, alpha = 0.1*Tupdate/RTT_max^2
            // = 0.15 Hz, beta = 0.3/RTT_max = 3 Hz; native ramp.
            DualPi2Variant::Rfc => (15_000_000, 15_000_000, 0.15, 3.0, NativeAqm::Ramp),
            // dualpi2_reset_default: 15 ms, 16 ms, alpha 41/256 (~0.16 Hz), beta
            // 819/256 (~3.2 Hz) ("10 dB stability margin with max_rtt = 100 ms"); step.
            DualPi2Variant::Linux => (15_000_000, 16_000_000, 41.0 / 256.0, 819.0 / 256.0, NativeAqm::Step),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DualPi2Params {
    pub target_ns: u64,
    pub tupdate_ns: u64,
    pub alpha: f64,
    pub beta: f64,
    pub k: f64,
    pub native: NativeAqm,
    pub step_thresh_ns: u64,
    pub ramp_min_th_ns: u64,
    pub ramp_range_ns: u64,
    pub th_len_pkts: usize,
    pub drop_on_overload: bool,
    /// Linux: PI input = max(L, C) head sojourn; RFC A.1: Classic head only.
    pub pi_on_max_sojourn: bool,
    /// RFC A.1: p_L = max(native, p_CL) decided once by the deterministic
    /// `recur` accumulator. Linux: independent coupled roll, then the step.
    pub l4s_recur_max: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DualPi2Vars {
    /// Base probability p'.
    pub p_prime: f64,
    /// Queue delay at the previous update (ns).
    pub prev_qdelay_ns: u64,
    /// RFC A.1 `recur` accumulator of the L-queue.
    pub l_recur: f64,
    next_timer_ns: u64,
}

#[derive(Debug, Clone)]
pub struct DualPi2 {
    dq: DualQueue,
    params: DualPi2Params,
    vars: DualPi2Vars,
}

/// The module's only random draw.
#[inline]
fn dualpi2_roll(ctx: &mut QdiscCtx, p: f64) -> bool {
    ctx.rng.roll(p)
}

/// RFC 9332 A.1 `recur`: true with long-run frequency `p`, deterministically.
fn recur(acc: &mut f64, p: f64) -> bool {
    *acc += p;
    if *acc > 1.0 {
        *acc -= 1.0;
        true
    } else {
        false
    }
}

impl DualPi2 {
    pub fn new(cfg: DualPi2Config, env: &QdiscEnv) -> Result<Self, String> {
        let (target, tupdate, alpha, beta, native) = cfg.variant.numbers();
        let params = DualPi2Params {
            target_ns: cfg.target_ns.unwrap_or(target),
            tupdate_ns: cfg.tupdate_ns.unwrap_or(tupdate),
            alpha: cfg.alpha.unwrap_or(alpha),
            beta: cfg.beta.unwrap_or(beta),
            k: cfg.coupling_factor,
            native: cfg.native.unwrap_or(native),
            step_thresh_ns: cfg.step_thresh_ns,
            ramp_min_th_ns: cfg.ramp_min_th_ns,
            ramp_range_ns: cfg.ramp_range_ns,
            th_len_pkts: cfg.th_len_pkts as usize,
            drop_on_overload: cfg.drop_on_overload,
            pi_on_max_sojourn: cfg.variant == DualPi2Variant::Linux,
            l4s_recur_max: cfg.variant == DualPi2Variant::Rfc,
        };
        check_pi_gains(params.target_ns, params.tupdate_ns, params.alpha, params.beta)?;
        if !(params.k.is_finite() && params.k > 0.0) {
            return Err("coupling_factor: must be positive".into());
        }
        if params.native == NativeAqm::Ramp && params.ramp_range_ns == 0 {
            return Err("ramp_range: must be positive".into());
        }
        let dq = DualQueue::new(
            env.limit,
            env.mtu_bytes,
            cfg.l4s_ect,
            cfg.scheduler,
            cfg.classic_protection,
            cfg.tshift_ns,
        )?;
        let vars = DualPi2Vars { next_timer_ns: params.tupdate_ns, ..DualPi2Vars::default() };
        Ok(DualPi2 { dq, params, vars })
    }

    /// p_C = p'^2 (RFC 9332 §2.1).
    pub fn p_c(&self) -> f64 {
        self.vars.p_prime * self.vars.p_prime
    }
    /// p_CL = min(k*p', 1) (RFC 9332 §2.1).
    pub fn p_cl(&self) -> f64 {
        (self.params.k * self.vars.p_prime).min(1.0)
    }

    /// Native L4S marking probability for a packet with this sojourn.
    fn native_prob(&self, sojourn_ns: u64, l_len_before: usize) -> f64 {
        let p = &self.params;
        match p.native {
            // Linux do_step_aqm: sojourn strictly above the threshold.
            NativeAqm::Step => f64::from(u8::from(sojourn_ns > p.step_thresh_ns)),
            // RFC 9332 A.1 laqm, not applied to a lone packet (Th_len).
            NativeAqm::Ramp if l_len_before <= p.th_len_pkts => 0.0,
            NativeAqm::Ramp => (sojourn_ns.saturating_sub(p.ramp_min_th_ns) as f64 / p.ramp_range_ns as f64).min(1.0),
        }
    }

    /// Linux must_drop guard: no PI signal while less than 2 MTU remain queued.
    fn pi_guarded(&self) -> bool {
        self.dq.bytes() < 2 * self.dq.mtu
    }

    fn classic(&mut self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        let pp = self.vars.p_prime;
        // RFC 9332 §2.1 "think twice": two independent rolls give p_C = p'^2.
        if self.pi_guarded() || !(dualpi2_roll(ctx, pp) && dualpi2_roll(ctx, pp)) {
            return true;
        }
        if !pkt.ecn.is_ect() {
            ctx.drop(*pkt, DropReason::Aqm);
            false
        } else if self.params.k * pp > 1.0 {
            // Linux dualpi2_classic_marking: under overload, ECT is dropped too.
            ctx.drop(*pkt, DropReason::Overload);
            false
        } else {
            ctx.mark(pkt, MarkReason::Aqm);
            true
        }
    }

    fn l4s(&mut self, pkt: &mut Packet, l_len_before: usize, ctx: &mut QdiscCtx) -> bool {
        let native = self.native_prob(ctx.now_ns.saturating_sub(pkt.enq_ns), l_len_before);
        let guarded = self.pi_guarded();
        let pp = self.vars.p_prime;
        if !guarded && self.params.k * pp > 1.0 {
            // RFC 9332 §4.2.3 / Linux drop_on_overload: saturated coupling;
            // drop with the Classic probability, mark all survivors.
            if self.params.drop_on_overload && dualpi2_roll(ctx, pp) && dualpi2_roll(ctx, pp) {
                ctx.drop(*pkt, DropReason::Overload);
                return false;
            }
            return ctx.mark_or_drop(pkt, MarkReason::Coupled, DropReason::Aqm);
        }
        let p_cl = if guarded { 0.0 } else { self.p_cl() };
        if self.params.l4s_recur_max {
            // RFC 9332 A.1: p_L = max(p'_L, p_CL), marked by `recur`.
            let reason = if native >= p_cl { MarkReason::Step } else { MarkReason::Coupled };
            if recur(&mut self.vars.l_recur, native.max(p_cl)) {
                return ctx.mark_or_drop(pkt, reason, DropReason::Aqm);
            }
            return true;
        }
        // Linux: coupled roll (must_drop), then the step on what survives unmarked.
        if dualpi2_roll(ctx, p_cl) {
            return ctx.mark_or_drop(pkt, MarkReason::Coupled, DropReason::Aqm);
        }
        if dualpi2_roll(ctx, native) {
            return ctx.mark_or_drop(pkt, MarkReason::Step, DropReason::Aqm);
        }
        true
    }

    /// RFC 9332 A.1 `dualpi2_update`, every tupdate.
    fn update(&mut self, now: u64) {
        let p = &self.params;
        let qc = self.dq.c.head_sojourn_ns(now);
        let qdelay = if p.pi_on_max_sojourn { qc.max(self.dq.l.head_sojourn_ns(now)) } else { qc };
        let secs = |a: u64, b: u64| (a as f64 - b as f64) * 1e-9;
        let v = &mut self.vars;
        v.p_prime += p.alpha * secs(qdelay, p.target_ns) + p.beta * secs(qdelay, v.prev_qdelay_ns);
        v.p_prime = v.p_prime.clamp(0.0, 1.0);
        if !p.drop_on_overload {
            // Linux calculate_probability: in overflow mode keep k*p' <= 1.
            v.p_prime = v.p_prime.min(1.0 / p.k);
        }
        v.prev_qdelay_ns = qdelay;
    }
}

impl DualQueueAqm for DualPi2 {
    fn dual_queue(&mut self) -> &mut DualQueue {
        &mut self.dq
    }
    /// A packet passed through an empty DualPI2 (sojourn 0, no packet left
    /// behind it, so the 2-MTU guard holds back the PI signal) is never
    /// signalled.
    #[inline]
    fn judge(&mut self, pkt: &mut Packet, l_len_before: usize, ctx: &mut QdiscCtx) -> bool {
        if pkt.subq == L {
            self.l4s(pkt, l_len_before, ctx)
        } else {
            self.classic(pkt, ctx)
        }
    }
}

impl Qdisc for DualPi2 {
    delegate_to_dual_queue!();

    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.vars.next_timer_ns)
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        self.update(ctx.now_ns);
        self.vars.next_timer_ns = ctx.now_ns + self.params.tupdate_ns;
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["p_prime", "p_c", "p_cl"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.p_prime;
        out[1] = self.p_c();
        out[2] = self.p_cl();
    }
}

#[cfg(test)]
#[path = "dualpi2_tests.rs"]
mod tests;
