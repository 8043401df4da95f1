//! PI2: a single-queue PI controller whose output p' is squared for Classic
//! traffic ("think twice to drop") and optionally applied linearly (k*p') to
//! L4S (ECT(1)/CE) traffic sharing the same queue.
//!
//! Normative references (read the paper first):
//! - De Schepper, Bondarenko, Tsang, Briscoe, "PI2: A Linearized AQM for both
//!   Classic and Scalable TCP", ACM CoNEXT 2016 (p = p'^2 linearises the
//!   Reno/CUBIC response, so a plain PI suffices without PIE's auto-tuning;
//!   Scalable packets are marked with k*p' in the same queue).
//! - RFC 9332 §2.1 (p_C = p'^2, p_CL = k*p') and Appendix A.1 (the PI update
//!   and the defaults derived from target and RTT_max used here).
//!   <https://www.rfc-editor.org/rfc/rfc9332#appendix-A.1>
//!
//! The queue delay fed to the controller is the head packet's sojourn at the
//! update (RFC 9332 A.1 `cq.time()`); signals are applied at dequeue.

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use super::pi::check_pi_gains;
use crate::packet::Packet;
use crate::sim::units::serde_duration;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Pi2Config {
    /// Target queue delay.
    #[serde(rename = "target", with = "serde_duration")]
    pub target_ns: u64,
    /// Update period of p'.
    #[serde(rename = "tupdate", with = "serde_duration")]
    pub tupdate_ns: u64,
    /// Integral gain (Hz).
    pub alpha: f64,
    /// Proportional gain (Hz).
    pub beta: f64,
    /// Coupling factor for L4S packets (used when `l4s` is on).
    pub coupling_factor: f64,
    /// Treat ECT(1)/CE packets as Scalable: mark with k*p' instead of p'^2.
    pub l4s: bool,
    /// CE-mark ECT Classic packets instead of dropping them.
    pub ecn: bool,
}

impl Default for Pi2Config {
    fn default() -> Self {
        Pi2Config {
            // 15 ms / RTT_max 100 ms: RFC 9332 A.1 Figure 2, giving
            // tupdate = min(target, RTT_max/3) = 15 ms,
            // alpha = 0.1*tupdate/RTT_max^2 = 0.15 Hz, beta = 0.3/RTT_max = 3 Hz.
            target_ns: 15_000_000,
            tupdate_ns: 15_000_000,
            alpha: 0.15,
            beta: 3.0,
            // 2: RFC 9332 §2.1 / PI2 paper (window fairness at equal RTTs).
            coupling_factor: 2.0,
            // off: a plain Classic PI2 queue; on = the paper's coupled single queue.
            l4s: false,
            // on: ECT Classic packets are marked (RFC 3168) until overload.
            ecn: true,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pi2Vars {
    /// Base probability p'.
    pub p_prime: f64,
    /// Queue delay at the previous update (ns).
    pub prev_qdelay_ns: u64,
    next_timer_ns: u64,
}

#[derive(Debug, Clone)]
pub struct Pi2 {
    q: PacketQueue,
    limit: QueueLimit,
    cfg: Pi2Config,
    mtu: u64,
    vars: Pi2Vars,
}

/// The module's only random draw.
#[inline]
fn pi2_roll(ctx: &mut QdiscCtx, p: f64) -> bool {
    ctx.rng.roll(p)
}

impl Pi2 {
    pub fn new(cfg: Pi2Config, env: &QdiscEnv) -> Result<Self, String> {
        check_pi_gains(cfg.target_ns, cfg.tupdate_ns, cfg.alpha, cfg.beta)?;
        if !(cfg.coupling_factor.is_finite() && cfg.coupling_factor > 0.0) {
            return Err("coupling_factor: must be positive".into());
        }
        let vars = Pi2Vars { next_timer_ns: cfg.tupdate_ns, ..Pi2Vars::default() };
        Ok(Pi2 {
            q: PacketQueue::with_capacity(initial_capacity(&env.limit)),
            limit: env.limit,
            mtu: env.mtu_bytes as u64,
            cfg,
            vars,
        })
    }

    /// RFC 9332 A.1 `dualpi2_update`: p' += alpha*(qdelay - target) + beta*(qdelay - qdelay_prev).
    fn update(&mut self, now: u64) {
        let qdelay = self.q.head_sojourn_ns(now);
        let secs = |a: u64, b: u64| (a as f64 - b as f64) * 1e-9;
        let (c, v) = (&self.cfg, &mut self.vars);
        v.p_prime += c.alpha * secs(qdelay, c.target_ns) + c.beta * secs(qdelay, v.prev_qdelay_ns);
        v.p_prime = v.p_prime.clamp(0.0, 1.0);
        v.prev_qdelay_ns = qdelay;
    }

    /// Apply the PI2 signal to a dequeued packet, in place (as the
    /// dual-queue AQMs' `judge`, so that the 64-byte packet is not moved
    /// through an `Option` at every verdict): true unless it is dropped.
    fn signal(&mut self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        // DEVIATION (Linux sch_dualpi2 must_drop): no signal while < 2 MTU remain.
        if self.q.bytes() < 2 * self.mtu {
            return true;
        }
        let (pp, k) = (self.vars.p_prime, self.cfg.coupling_factor);
        if self.cfg.l4s && pkt.ecn.is_l4s_id() {
            // PI2 paper / RFC 9332 §2.1: Scalable traffic gets the linear k*p'.
            if pi2_roll(ctx, (k * pp).min(1.0)) {
                return ctx.mark_or_drop(pkt, MarkReason::Coupled, DropReason::Aqm);
            }
            return true;
        }
        // PI2 paper, RFC 9332 A.2 "think twice": two independent rolls give p'^2.
        if !(pi2_roll(ctx, pp) && pi2_roll(ctx, pp)) {
            return true;
        }
        // As DualPI2 overload: beyond k*p' > 1 ECN would not relieve the queue.
        if self.cfg.ecn && k * pp <= 1.0 && ctx.mark(pkt, MarkReason::Aqm) {
            return true;
        }
        ctx.drop(*pkt, DropReason::Aqm);
        false
    }
}

impl Qdisc for Pi2 {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        if self.limit.would_overflow(self.q.len(), self.q.bytes(), pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
        } else {
            self.q.push(pkt);
        }
    }
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        loop {
            let mut pkt = self.q.pop()?;
            if self.signal(&mut pkt, ctx) {
                return Some(pkt);
            }
        }
    }
    /// The packet skips the ring: unless alone it overflows the buffer, it
    /// gets the signal a lone dequeued packet gets (none: under 2 MTUs
    /// remain); were it dropped, `dequeue`'s next pop would find nothing.
    fn pass_through(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        debug_assert!(self.q.is_empty() && pkt.enq_ns == ctx.now_ns);
        if self.limit.would_overflow(0, 0, pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
            return None;
        }
        self.signal(&mut pkt, ctx).then_some(pkt)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.vars.next_timer_ns)
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        self.update(ctx.now_ns);
        self.vars.next_timer_ns = ctx.now_ns + self.cfg.tupdate_ns;
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["p_prime", "p_c", "p_cl"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.p_prime;
        out[1] = self.vars.p_prime * self.vars.p_prime;
        out[2] = (self.cfg.coupling_factor * self.vars.p_prime).min(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
    use crate::packet::Ecn;

    const MS: u64 = 1_000_000;

    fn pi2(l4s: bool) -> Harness<Pi2> {
        Harness::new(Pi2::new(Pi2Config { l4s, ..Pi2Config::default() }, &env(100_000_000, 10_000)).unwrap())
    }

    #[test]
    fn p_prime_update_follows_the_pi_formula() {
        let mut h = pi2(false);
        h.enqueue(0, data(1, Ecn::NotEct));
        h.timer(25 * MS);
        // 0.15*(0.025-0.015) + 3*(0.025-0) = 0.0765
        assert!((h.q.vars.p_prime - 0.0765).abs() < 1e-12, "{}", h.q.vars.p_prime);
        h.enqueue(40 * MS, data(1, Ecn::NotEct));
        h.dequeue(40 * MS); // new head enqueued at 40 ms
        h.timer(65 * MS);
        // Head sojourn 25 ms again: only the integral term, +0.0015.
        assert!((h.q.vars.p_prime - 0.078).abs() < 1e-12, "{}", h.q.vars.p_prime);
        // Queue empty: delay 0 pulls p' down by 0.15*0.015 + 3*0.025 = 0.07725.
        h.dequeue(70 * MS);
        h.timer(80 * MS);
        assert!((h.q.vars.p_prime - 0.00075).abs() < 1e-12, "{}", h.q.vars.p_prime);
    }

    /// Fraction of `n` decisions (with 10 packets standing) that were signals.
    fn signal_fraction(h: &mut Harness<Pi2>, ecn: Ecn, p_prime: f64, n: u64) -> f64 {
        h.q.vars.p_prime = p_prime;
        let mut sent = 0;
        while sent + h.drops() < n {
            while h.q.len_pkts() < 10 {
                h.enqueue(0, data(1, ecn));
            }
            if h.dequeue(0).is_some() {
                sent += 1;
            }
        }
        (h.drops() + h.marks()) as f64 / n as f64
    }

    #[test]
    fn classic_probability_is_p_prime_squared() {
        let n = 40_000;
        let tol = 4.0 * (0.09f64 * 0.91 / n as f64).sqrt();
        let mut h = pi2(false);
        let f = signal_fraction(&mut h, Ecn::NotEct, 0.3, n);
        assert!((f - 0.09).abs() < tol, "{f}");
        assert_eq!(h.marks(), 0);
        // ECT Classic is marked with the same probability.
        let mut h = pi2(false);
        let f = signal_fraction(&mut h, Ecn::Ect0, 0.3, n);
        assert!((f - 0.09).abs() < tol && h.drops() == 0, "{f}");
    }

    #[test]
    fn l4s_option_marks_ect1_with_k_p_prime_and_classic_with_square() {
        let n = 40_000;
        let mut h = pi2(true);
        let f = signal_fraction(&mut h, Ecn::Ect1, 0.3, n);
        assert!((f - 0.6).abs() < 4.0 * (0.24f64 / n as f64).sqrt(), "{f}");
        // Without the option ECT(1) is just Classic: p'^2.
        let mut h = pi2(false);
        let f = signal_fraction(&mut h, Ecn::Ect1, 0.3, n);
        assert!((f - 0.09).abs() < 4.0 * (0.0819f64 / n as f64).sqrt(), "{f}");
    }

    #[test]
    fn random_trace_conserves_packets() {
        let mut h =
            Harness::new(Pi2::new(Pi2Config { l4s: true, ..Pi2Config::default() }, &env(10_000_000, 40)).unwrap());
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }

    /// The engine's early hand-off relies on `pass_through` leaving PI2
    /// exactly as `enqueue` then `dequeue` would (`compare_pass_through`:
    /// packets, counters, random draws and PI2's variables after every step
    /// of a trace of overload and drain, timer ticks included), with and
    /// without the L4S coupling, and with a byte limit below a packet.
    #[test]
    fn pass_through_equals_enqueue_then_dequeue() {
        for (l4s, limit_bytes) in [(false, None), (true, None), (false, Some(1000))] {
            let mut e = env(10_000_000, 200);
            if let Some(b) = limit_bytes {
                e.limit = crate::aqm::QueueLimit { pkts: None, bytes: Some(b) };
            }
            let cfg = Pi2Config { l4s, tupdate_ns: 5 * MS, ..Pi2Config::default() };
            let mut a = Harness::new(Pi2::new(cfg.clone(), &e).unwrap());
            let mut b = Harness::new(Pi2::new(cfg, &e).unwrap());
            let (passed, _) = compare_pass_through(&mut a, &mut b, |q| format!("{:?}", q.vars));
            assert!(passed > 1000, "l4s {l4s}: {passed} arrivals at an empty queue");
            assert!(a.drops() + a.marks() > 100, "l4s {l4s}: {} signals", a.drops() + a.marks());
        }
    }
}
